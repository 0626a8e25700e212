"""Background jobs: commands that keep running between tool calls, read and fed by later calls.

A job is a bash command started by ``bash`` with ``run_in_background``, in its own
:class:`~agent_toolsmith.proc.ProcessTree` owned by the session (so it dies with the session, with
this process, or by ``job_kill``; see docs/jobs.md). Its stdin is a pipe we hold, or with
``tty`` a pseudo-terminal, which is also its controlling terminal (so ``\\u0003`` interrupts it).

Jobs do not depend on an event loop: a thread per job reads its output, another waits for its
exit, so a job started under one ``asyncio.run`` is still read under the next. Output goes to a
ring of :data:`JOB_RING_BYTES` in memory, from which reads are deltas, and in full to a spill
file (under the spill budget of truncate.py). When the job's shell exits, whatever it left
running is stopped, as for a foreground command.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ToolError
from ..proc import KILL_GRACE_S, SETTLE_AFTER_EXIT_S, ProcessSupervisor, ProcessTree
from ..truncate import SPILL_FILE_MAX_BYTES, _CappedFile, head_tail

if TYPE_CHECKING:
    import subprocess

#: Output kept in memory per job; older output is only in the job's spill file.
JOB_RING_BYTES = 1024 * 1024
#: Finished jobs stay listed (and readable) until this many jobs exist; the oldest go first.
MAX_KEPT_JOBS = 64
#: After a job's shell exits, how long output from what it left behind is still read.
DRAIN_AFTER_EXIT_S = 0.2
READ_CHUNK = 64 * 1024
#: Input is written in pieces no larger than the kernel promises room for once writable.
WRITE_PIECE = 512
#: Characters of one read the model sees (head and tail); all of it is in the spill file.
MAX_DELTA_CHARS = 30_000
#: The pseudo-terminal's size (some programs format for it).
TTY_ROWS, TTY_COLUMNS = 24, 120
#: Control sequences a terminal program prints (colours, cursor moves, titles): not for the model.
ANSI_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")


@dataclass(frozen=True)
class Delta:
    text: str
    #: Bytes that left the in-memory ring before they were read (they are in the spill file).
    skipped: int
    total_bytes: int


class Job:
    """One background command. State changes and output come from its threads; every read of
    them holds ``_lock``."""

    def __init__(self, job_id: str, command: str, tty: bool, spill_path: Path, timeout_s: float | None) -> None:
        self.id = job_id
        self.command = command
        self.tty = tty
        self.spill_path = spill_path
        self.timeout_s = timeout_s
        self.started = time.monotonic()
        self.ended: float | None = None
        self.exit_code: int | None = None
        #: "running", "exited", "killed" or "timed out".
        self.state = "running"
        self.stopped_background = 0
        self.pid = 0
        self.tree: ProcessTree | None = None
        self._lock = threading.Lock()
        self._ring = bytearray()
        self._ring_start = 0
        self._total = 0
        self._read = 0
        self._version = 0
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._spill = _CappedFile(spill_path, SPILL_FILE_MAX_BYTES)
        self._input_fd = -1
        self._output_fd = -1
        self._reader: threading.Thread | None = None
        self._kill_reason: str | None = None
        self._finished = threading.Event()

    # --- starting -------------------------------------------------------------------------

    def start(self, argv: list[str], *, cwd: str, env: dict[str, str], owner: ProcessSupervisor) -> None:
        import subprocess

        tree = ProcessTree(owner)
        self.tree = tree
        child_fds: tuple[int, ...]
        if self.tty:
            master, slave = os.openpty()
            _set_window_size(slave)
            stdin_fd, out_fd, in_fd, child_fds = slave, master, master, (slave,)
        else:
            in_read, in_write = os.pipe()
            out_read, out_write = os.pipe()
            stdin_fd, out_fd, in_fd, child_fds = in_read, out_read, in_write, (in_read, out_write)
        try:
            popen = subprocess.Popen(
                argv,
                stdin=stdin_fd,
                stdout=child_fds[-1],
                stderr=child_fds[-1],
                cwd=cwd,
                env=tree.environment(env),
                start_new_session=True,
                preexec_fn=_take_terminal if self.tty else None,
            )
        except BaseException:
            for fd in {out_fd, in_fd}:
                os.close(fd)
            tree.kill_now()
            tree.release()
            self._spill.close()
            raise
        finally:
            for fd in child_fds:  # the child has its own copies
                os.close(fd)
        tree.set_leader(popen.pid)
        self.pid = popen.pid
        self._input_fd, self._output_fd = in_fd, out_fd
        self._reader = threading.Thread(target=self._read_output, name=f"job-{self.id}-output", daemon=True)
        self._reader.start()
        threading.Thread(target=self._wait_exit, args=(popen,), name=f"job-{self.id}-exit", daemon=True).start()

    # --- threads ----------------------------------------------------------------------------

    def _read_output(self) -> None:
        while True:
            try:
                chunk = os.read(self._output_fd, READ_CHUNK)
            except OSError:  # EIO: every holder of the terminal's other side is gone
                chunk = b""
            if not chunk:
                return
            with self._lock:
                self._ring += chunk
                self._total += len(chunk)
                excess = len(self._ring) - JOB_RING_BYTES
                if excess > 0:
                    del self._ring[:excess]
                    self._ring_start += excess
                with contextlib.suppress(OSError):
                    self._spill.write(chunk)
            self._changed()

    def _wait_exit(self, popen: subprocess.Popen[bytes]) -> None:
        assert self.tree is not None
        try:
            code = popen.wait(self.timeout_s)
        except Exception:  # subprocess.TimeoutExpired
            self._kill_reason = "timed out"
            self.tree.terminate_blocking(KILL_GRACE_S)
            code = popen.wait()
        if self._reader is not None:
            self._reader.join(DRAIN_AFTER_EXIT_S)
        left = self.tree.terminate_blocking(KILL_GRACE_S, SETTLE_AFTER_EXIT_S)
        if self._reader is not None:
            self._reader.join(KILL_GRACE_S + 1)
        with self._lock:
            self.exit_code = 128 - code if code < 0 else code
            self.state = self._kill_reason or "exited"
            if self.state == "exited":
                self.stopped_background = left
            self.ended = time.monotonic()
            with contextlib.suppress(OSError):
                self._spill.close()
        for fd in {self._input_fd, self._output_fd}:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.tree.release()
        self._finished.set()
        self._changed()

    def _changed(self) -> None:
        with self._lock:
            self._version += 1
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            with contextlib.suppress(RuntimeError):  # that loop is closed
                loop.call_soon_threadsafe(_resolve, future)

    # --- what calls do ----------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self.state == "running"

    @property
    def version(self) -> int:
        return self._version

    async def wait_change(self, since: int, timeout_s: float) -> None:
        """Until new output or the job's end (after version ``since``), or ``timeout_s``."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            if self._version != since or self._finished.is_set():
                return
            self._waiters.append((loop, future))
        try:
            await asyncio.wait_for(future, timeout_s)
        except TimeoutError:
            pass
        finally:
            with self._lock:
                self._waiters = [(lp, f) for lp, f in self._waiters if f is not future]

    async def wait_output(self, since: int, timeout_s: float, quiet_s: float) -> None:
        """Until output arrives after version ``since`` and then pauses for ``quiet_s``, the
        job ends, or ``timeout_s`` passes."""
        deadline = time.monotonic() + timeout_s
        await self.wait_change(since, timeout_s)
        while self.running:
            seen = self.version
            left = deadline - time.monotonic()
            if left <= 0:
                return
            await self.wait_change(seen, min(quiet_s, left))
            if self.version == seen:
                return

    @property
    def total_bytes(self) -> int:
        return self._total

    def unread(self) -> int:
        with self._lock:
            return self._total - self._read

    def read_delta(self) -> Delta:
        """What arrived since the last read (never the same byte twice)."""
        with self._lock:
            start = max(self._read, self._ring_start)
            skipped = start - self._read
            data = bytes(self._ring[start - self._ring_start :])
            if self.running:
                data = data[: len(data) - _incomplete_utf8_tail(data)]
            self._read = start + len(data)
            total = self._total
        text = data.decode("utf-8", "replace")
        if self.tty:
            text = ANSI_ESCAPE.sub("", text.replace("\r\n", "\n"))
        return Delta(text, skipped, total)

    def write(self, data: bytes, timeout_s: float) -> int:
        """Write ``data`` to the job's input; bytes written before ``timeout_s`` (a job that
        does not read its input fills the pipe)."""
        if not self.running:
            return 0
        import select

        written = 0
        deadline = time.monotonic() + timeout_s
        while written < len(data):
            # Blocking fds (a terminal's master is also the output side, so O_NONBLOCK is not
            # ours to set): write only when there is room, a piece at most one pipe buffer long.
            left = deadline - time.monotonic()
            try:
                _, ready, _ = select.select([], [self._input_fd], [], max(left, 0))
                if not ready:
                    break
                written += os.write(self._input_fd, data[written : written + WRITE_PIECE])
            except (OSError, ValueError):  # closed: the job ended or closed its input
                break
        return written

    def kill(self, reason: str = "killed") -> None:
        """Stop the whole tree now (the exit thread records the final state)."""
        if self.tree is None or not self.running:
            return
        self._kill_reason = self._kill_reason or reason
        self.tree.kill_now()

    async def finished(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while not self._finished.is_set() and time.monotonic() < deadline:
            await self.wait_change(self.version, max(deadline - time.monotonic(), 0.0))
        return self._finished.is_set()

    def describe_state(self) -> str:
        if self.state == "exited":
            return f"exited with code {self.exit_code}"
        return self.state

    def age(self) -> str:
        seconds = (self.ended or time.monotonic()) - self.started
        verb = "running for" if self.running else "ran for"
        return f"{verb} {_duration(seconds)}"

    def summary(self) -> str:
        """One line: id, command, state, age, output size."""
        command = self.command if len(self.command) <= 60 else self.command[:59] + "…"
        return f"{self.id} | {command} | {self.describe_state()} | {self.age()} | {_size(self._total)} output"


def report(job: Job, delta: Delta, *, empty: str = "(no new output)") -> tuple[str, dict[str, Any]]:
    """The model's text for a read of ``job`` (output, what was skipped, the state) and metadata."""
    parts = []
    if delta.skipped:
        parts.append(
            f"({delta.skipped} bytes of output were skipped: more than the {JOB_RING_BYTES // 1024} KB kept in "
            f"memory arrived since the last read. The full output is in {job.spill_path}; read it with view.)"
        )
    bounded = head_tail(delta.text, MAX_DELTA_CHARS)
    parts.append(bounded.text.rstrip("\n") if delta.text.strip() else empty)
    if bounded.truncated:
        parts.append(f"(This read was shortened; the full output is in {job.spill_path}.)")
    parts.append(status_line(job))
    metadata: dict[str, Any] = {
        "job_id": job.id,
        "state": job.state,
        "exit_code": job.exit_code,
        "pid": job.pid,
        "output_bytes": delta.total_bytes,
        "skipped_bytes": delta.skipped,
        "truncated": bounded.truncated,
        "full_output_path": str(job.spill_path),
        "tty": job.tty,
    }
    return "\n\n".join(parts), metadata


def status_line(job: Job) -> str:
    if job.state == "running":
        return f"Job {job.id} is running ({job.age()})."
    if job.state == "timed out":
        line = f"Job {job.id} timed out after {job.timeout_s:g} s and was stopped ({job.age()})."
    elif job.state == "killed":
        line = f"Job {job.id} was killed ({job.age()})."
    else:
        line = f"Job {job.id} exited with code {job.exit_code} ({job.age()})."
    if job.stopped_background:
        was = "process was" if job.stopped_background == 1 else "processes were"
        line += f" {job.stopped_background} background {was} stopped when its shell exited."
    return line


class JobTable:
    """A session's background jobs. ``max_jobs`` is checked when a job starts."""

    def __init__(self) -> None:
        self._jobs: dict[str, Job] = {}
        self._counter = 0
        self._lock = threading.Lock()

    def start(
        self,
        command: str,
        argv: list[str],
        *,
        cwd: str,
        env: dict[str, str],
        tty: bool,
        spill_path: Callable[[], Path],
        timeout_s: float | None,
        max_jobs: int,
        owner: ProcessSupervisor,
    ) -> Job:
        with self._lock:
            running = [job for job in self._jobs.values() if job.running]
            if len(running) >= max_jobs:
                listing = "\n".join(job.summary() for job in running)
                raise ToolError(
                    f"This session already runs {len(running)} background jobs, the limit ([bash] max_jobs = "
                    f"{max_jobs}). Stop one with job_kill first:\n{listing}",
                    {"error": "too_many_jobs"},
                )
            self._counter += 1
            job = Job(f"j{self._counter}", command, tty, spill_path(), timeout_s)
            self._jobs[job.id] = job
            self._forget_old()
        try:
            job.start(argv, cwd=cwd, env=env, owner=owner)
        except OSError as exc:
            with self._lock:
                self._jobs.pop(job.id, None)
            raise ToolError(f"The background job could not be started: {exc.strerror or exc}.") from exc
        return job

    def _forget_old(self) -> None:
        finished = [job for job in self._jobs.values() if not job.running]
        for job in finished[: max(len(self._jobs) - MAX_KEPT_JOBS, 0)]:
            del self._jobs[job.id]

    def get(self, job_id: str) -> Job:
        with self._lock:
            job = self._jobs.get(job_id.strip())
            known = list(self._jobs.values())
        if job is None:
            listing = "\n".join(j.summary() for j in known) or "(none)"
            raise ToolError(
                f"No background job {job_id!r} in this session. Its jobs:\n{listing}", {"error": "unknown_job"}
            )
        return job

    def jobs(self) -> list[Job]:
        with self._lock:
            return list(self._jobs.values())

    async def close(self) -> None:
        """Kill every running job and wait (bounded) until their threads finished."""
        jobs = [job for job in self.jobs() if job.running]
        for job in jobs:
            job.kill()
        for job in jobs:
            await job.finished(KILL_GRACE_S + 2)


def _take_terminal() -> None:
    """In the child, after setsid: make the pseudo-terminal (stdin) its controlling terminal,
    so Ctrl-C (``\\u0003``) reaches it as SIGINT — with SIGINT and SIGQUIT at their defaults: a
    process started in the background of a non-interactive shell (``toolsmith-mcp &``) runs with
    both ignored, children inherit that, and Ctrl-C would then reach nothing."""
    import fcntl
    import signal
    import termios

    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    for number in (signal.SIGINT, signal.SIGQUIT):
        signal.signal(number, signal.SIG_DFL)


def _set_window_size(fd: int) -> None:
    import fcntl
    import struct
    import termios

    with contextlib.suppress(OSError):
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", TTY_ROWS, TTY_COLUMNS, 0, 0))


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _incomplete_utf8_tail(data: bytes) -> int:
    """How many bytes at the end start a UTF-8 character that has not fully arrived."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # a lead byte (or ASCII)
            need = 2 if byte & 0xE0 == 0xC0 else 3 if byte & 0xF0 == 0xE0 else 4 if byte & 0xF8 == 0xF0 else 1
            return back if need > back else 0
    return 0


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f}s" if seconds >= 10 else f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{seconds // 60:.0f}m{seconds % 60:02.0f}s"
    return f"{seconds // 3600:.0f}h{seconds % 3600 // 60:02.0f}m"


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} B"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KB"
    return f"{count / 1024 / 1024:.1f} MB"
