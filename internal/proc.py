"""Child processes that can always be stopped and reaped: own process group, own pipes.

Every tool that runs a program (bash, rg, custom tools) starts it through :func:`spawn`:

- in a new session, so the whole group — and whatever it started — can be signalled at once;
- with stdout/stderr on pipes we create (``os.pipe`` + ``connect_read_pipe``) rather than
  asyncio's ``PIPE``. asyncio's ``Process.wait()`` also waits for its pipes to close, which a
  background child holding the pipe, or a reader that paused the transport (a full buffer after
  we stopped reading), delays forever. Here, waiting for the exit and closing the pipes are
  separate, and every wait has a bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .errors import ToolError

log = logging.getLogger("toolsmith.proc")

#: After SIGTERM, how long a group gets before SIGKILL.
KILL_GRACE_S = 2.0
#: After SIGKILL, how long we wait for the kernel to report the exit before giving up on it.
REAP_TIMEOUT_S = 2.0
#: How often a group is polled while it is given time to exit.
GROUP_POLL_S = 0.02
READ_LIMIT = 64 * 1024


def check_argument(text: str, what: str) -> str:
    """``text`` if a process argument can carry it: no NUL, no unpaired surrogate."""
    if "\0" in text:
        raise ToolError(f"The {what} contains a NUL character, which a program argument cannot hold.")
    try:
        os.fsencode(text)
    except UnicodeEncodeError:
        raise ToolError(f"The {what} contains an unpaired surrogate character, which cannot be encoded.") from None
    return text


@dataclass
class Child:
    """A started process: its group id is its pid (it leads a new session)."""

    process: asyncio.subprocess.Process
    stdout: asyncio.StreamReader
    stderr: asyncio.StreamReader | None
    _transports: list[asyncio.BaseTransport]

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    async def wait(self, timeout: float | None = None) -> int | None:
        """The exit status, or None if it did not exit within ``timeout``. Never waits on pipes."""
        try:
            return await asyncio.wait_for(asyncio.shield(self.process.wait()), timeout)
        except TimeoutError:
            return None

    async def stop(self, grace_s: float = KILL_GRACE_S) -> None:
        """Terminate the whole group (SIGTERM, SIGKILL after ``grace_s``; 0 kills at once),
        close our pipes and reap the leader — all within bounded time."""
        await terminate_group(self.pid, grace_s)
        self.close()
        if await self.wait(REAP_TIMEOUT_S) is None:
            log.warning("process %s did not exit after SIGKILL", self.pid)

    def close(self) -> None:
        """Stop reading: readers see EOF; a writer still holding the pipe gets SIGPIPE/EPIPE."""
        for transport in self._transports:
            transport.close()
        for stream in (self.stdout, self.stderr):
            if stream is not None and not stream.at_eof():
                stream.feed_eof()


async def spawn(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    merge_stderr: bool = False,
) -> Child:
    """Start ``argv`` in its own session, stdin ``/dev/null``, stdout (and stderr, separately or
    merged into stdout) on our own pipes."""
    out_read, out_write = os.pipe()
    err_read, err_write = (None, None) if merge_stderr else os.pipe()
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out_write,
            stderr=out_write if merge_stderr else err_write,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )
    except BaseException:
        for fd in (out_read, err_read):
            if fd is not None:
                os.close(fd)
        raise
    finally:
        for fd in (out_write, err_write):
            if fd is not None:
                os.close(fd)
    transports: list[asyncio.BaseTransport] = []
    stdout = await _reader(out_read, transports)
    stderr = await _reader(err_read, transports) if err_read is not None else None
    return Child(process, stdout, stderr, transports)


async def _reader(fd: int, transports: list[asyncio.BaseTransport]) -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    stream = asyncio.StreamReader(limit=READ_LIMIT)
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(stream), os.fdopen(fd, "rb", buffering=0)
    )
    transports.append(transport)
    return stream


def group_alive(pgid: int) -> bool:
    """Does the group have a running (non-zombie) member?

    Zombies count as members for ``killpg(pgid, 0)``, and an init that reaps slowly would make
    every kill wait out the whole grace period; /proc tells them apart where it exists.
    """
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False


async def terminate_group(pgid: int, grace_s: float = KILL_GRACE_S) -> None:
    """SIGTERM the group, SIGKILL whatever is left after ``grace_s`` (at once when 0)."""
    if grace_s <= 0:
        kill_group(pgid)
        return
    if not group_alive(pgid):
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if not group_alive(pgid):
            return
        await asyncio.sleep(GROUP_POLL_S)
    kill_group(pgid)


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
