"""Running a short-lived command on a worker thread, its output handed to a consumer as it
streams: :func:`run_streaming`.

For the searches (rg): a blocking read loop on the thread that started the process costs what
``subprocess.run`` costs, where asyncio's pipes, transports and child watcher add about 1.5 ms
to every call — as much as rg takes to list a directory. The event loop only awaits the
thread's result; :class:`StreamControl` lets it stop the process from outside (cancellation),
which ends the read loop at once (the pipes close).

The process leads its own session, in a :class:`.tree.ProcessTree` (so it dies with us);
stopping it kills its process group, and the process is always reaped before this returns.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .tree import REAP_TIMEOUT_S, ProcessTree

#: Bytes read from a pipe at a time.
READ_CHUNK = 256 * 1024
#: The capacity asked for the stdout pipe (Linux; the default is 64 KiB): the process writes on
#: while the consumer parses a burst, instead of waiting for it. Capped by the system
#: (/proc/sys/fs/pipe-max-size, 1 MiB by default); a refusal keeps the default.
PIPE_CAPACITY = 1024 * 1024
#: Reading a chatty process in batches: once a run has read COALESCE_AFTER_READS chunks of its
#: stdout, a read that found less than COALESCE_BELOW_BYTES is followed by a pause of COALESCE_S
#: before the next poll — cut short when the process closes its output, so the end of a run is
#: seen at once. rg writes each file's matches as one write (~100 bytes when a file has one
#: match), and waking, reading and parsing per write costs more CPU than rg's search of that file;
#: batched, a capped grep of 10 000 files is read in ~200 chunks instead of ~4 000. rg writes a
#: listing 8 KiB at a time, above the threshold: a listing never pauses. Short runs never pause.
COALESCE_AFTER_READS = 8
COALESCE_BELOW_BYTES = 2 * 1024
COALESCE_S = 0.001


@dataclass
class Streamed:
    """How a streamed run ended."""

    returncode: int | None
    stderr: bytes
    #: The consumer had enough, or the run was stopped from outside: the process was killed.
    stopped: bool = False
    timed_out: bool = False


class StreamControl:
    """Stops a :func:`run_streaming` from another thread (before it started the process, too)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid: int | None = None
        self.stop_requested = False

    def started(self, pid: int) -> None:
        with self._lock:
            self._pid = pid
            stop = self.stop_requested
        if stop:
            _kill_group(pid)

    def stop(self) -> None:
        with self._lock:
            self.stop_requested = True
            pid = self._pid
        if pid is not None:
            _kill_group(pid)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)  # it leads its group; a group id in use is never reused


def run_streaming(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None,
    stdin: int,
    consume: Callable[[bytes], bool],
    control: StreamControl,
    timeout_s: float,
    max_stderr: int,
) -> Streamed:
    """Run ``argv`` (stdin from the open descriptor ``stdin``), handing each chunk of its stdout
    to ``consume`` until that returns False (then the process is killed), the output ends, the
    control stops it, or ``timeout_s`` passes. Blocking: call it on a worker thread."""
    tree = ProcessTree()
    try:
        process = subprocess.Popen(
            list(argv), stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
            env=tree.environment(None), start_new_session=True,
        )  # fmt: skip
        tree.set_leader(process.pid)
        control.started(process.pid)
        assert process.stdout is not None
        _widen(process.stdout.fileno())
        try:
            outcome = _pump(process, consume, control, time.monotonic() + timeout_s, max_stderr)
            if outcome.stopped or outcome.timed_out:
                _kill_group(process.pid)
            outcome.returncode = _reaped(process)
            return outcome
        except BaseException:
            _kill_group(process.pid)
            _reaped(process)
            raise
        finally:
            for pipe in (process.stdout, process.stderr):
                if pipe is not None:
                    pipe.close()
    finally:
        tree.release()


def _reaped(process: subprocess.Popen[bytes]) -> int:
    """The process's exit status, once it has exited (within REAP_TIMEOUT_S). Waited for on a
    pidfd where there is one: ``Popen.wait`` with a timeout polls with sleeps of 1 ms and more,
    and a process that closes its output as it exits is often still running at the first poll."""
    try:
        pidfd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):  # no pidfd (an old kernel, not Linux): Popen's own polling
        return process.wait(REAP_TIMEOUT_S)
    try:
        exited = select.poll()
        exited.register(pidfd, select.POLLIN)
        ready = exited.poll(REAP_TIMEOUT_S * 1000)
    finally:
        os.close(pidfd)
    return process.wait(None if ready else 0)  # collects the exit at once; not exited: TimeoutExpired


def _widen(fd: int) -> None:
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None)
    if set_size is not None:
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, set_size, PIPE_CAPACITY)


def _pump(
    process: subprocess.Popen[bytes],
    consume: Callable[[bytes], bool],
    control: StreamControl,
    deadline: float,
    max_stderr: int,
) -> Streamed:
    assert process.stdout is not None and process.stderr is not None
    out, err = process.stdout.fileno(), process.stderr.fileno()
    poller = select.poll()
    for fd in (out, err):
        poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    # The pause between batches wakes when the process closes its output, not when it writes:
    # registered for no event, a pipe still reports its hang-up.
    closed = select.poll()
    closed.register(out, 0)
    outcome = Streamed(None, b"")
    open_fds = {out, err}
    reads = 0
    while open_fds:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            outcome.timed_out = True
            break
        for fd, _ in poller.poll(remaining * 1000):
            chunk = os.read(fd, READ_CHUNK)
            if not chunk:
                poller.unregister(fd)
                open_fds.discard(fd)
            elif fd == err:
                outcome.stderr += chunk[: max(0, max_stderr - len(outcome.stderr))]
            elif not consume(chunk):
                outcome.stopped = True
                return outcome
            else:
                reads += 1
                if reads > COALESCE_AFTER_READS and len(chunk) < COALESCE_BELOW_BYTES:
                    closed.poll(COALESCE_S * 1000)  # let the writer fill the pipe: one wake-up per batch
    outcome.stopped = outcome.stopped or control.stop_requested
    return outcome
