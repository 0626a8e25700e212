"""One background job: a command that keeps running between tool calls, read and fed by later
calls.

A job is a bash command started by ``bash`` with ``run_in_background``, in its own
:class:`~agent_toolsmith.proc.ProcessTree` owned by the session (so it dies with the session, with
this process, or by ``job_kill``; see docs/jobs.md). Its stdin is a pipe we hold, or with
``tty`` a pseudo-terminal (tty.py), which is also its controlling terminal (so ``\\u0003``
interrupts it).

Jobs do not depend on an event loop: a thread per job reads its output, another waits for its
exit, so a job started under one ``asyncio.run`` is still read under the next. Output goes to the
job's :class:`~agent_toolsmith.shell.job_buffer.OutputRing`, from which reads are deltas. When the
job's shell exits, whatever it left running is stopped, as for a foreground command.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..proc import KILL_GRACE_S, SETTLE_AFTER_EXIT_S, ProcessSupervisor, ProcessTree
from ..truncate import strip_ansi
from ..wakeup import Waiter, wake
from .job_buffer import Delta, OutputRing
from .tty import set_window_size, take_terminal

if TYPE_CHECKING:
    import subprocess

#: After a job's shell exits, how long output from what it left behind is still read.
DRAIN_AFTER_EXIT_S = 0.2
READ_CHUNK = 64 * 1024
#: Input is written in pieces no larger than the kernel promises room for once writable.
WRITE_PIECE = 512


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
        self._output = OutputRing(spill_path)
        self._version = 0
        self._waiters: list[Waiter] = []
        self._input_fd = -1
        self._output_fd = -1
        self._reader: threading.Thread | None = None
        self._kill_reason: str | None = None
        self._finished = threading.Event()

    # --- starting -------------------------------------------------------------------------

    def start(self, argv: list[str], *, cwd: str, env: dict[str, str], owner: ProcessSupervisor) -> None:
        import subprocess

        tree = ProcessTree(owner, contain=True)
        self.tree = tree
        child_fds: tuple[int, ...]
        if self.tty:
            master, slave = os.openpty()
            set_window_size(slave)
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
                preexec_fn=tree.child_setup(then=take_terminal if self.tty else None),
            )
        except BaseException:
            for fd in {out_fd, in_fd}:
                os.close(fd)
            tree.kill_now()
            tree.release()
            self._output.close()
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
                self._output.append(chunk)
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
                self._output.close()
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
        wake(waiters)

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
        return self._output.total

    def unread(self) -> int:
        with self._lock:
            return self._output.unread()

    def read_delta(self) -> Delta:
        """What arrived since the last read (never the same byte twice)."""
        with self._lock:
            data, skipped = self._output.take(whole_characters=self.running)
            total = self._output.total
        text = data.decode("utf-8", "replace")
        if self.tty:
            text = strip_ansi(text.replace("\r\n", "\n"))
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

