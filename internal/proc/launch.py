"""Starting a command in its own process tree: :func:`spawn` for asyncio callers (our own
pipes, bounded waits), :func:`run_and_reap` for a short blocking probe, and
:func:`check_argument` for what a program argument can carry.

Pipes: stdout/stderr are pipes we create (``os.pipe`` + ``connect_read_pipe``) rather than
asyncio's ``PIPE``. asyncio's ``Process.wait()`` also waits for its pipes to close, which a
background child holding the pipe delays forever. Here, waiting for the exit and closing the
pipes are separate, and every wait has a bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import ToolError
from ..logs import logger
from .tree import KILL_GRACE_S, REAP_TIMEOUT_S, ProcessSupervisor, ProcessTree

if TYPE_CHECKING:
    import subprocess

log = logger("toolsmith.proc")

READ_LIMIT = 64 * 1024


def check_argument(text: str, what: str) -> str:
    """``text`` if a process argument can carry it: no NUL, no unpaired surrogate."""
    if "\0" in text:
        raise ToolError(
            f"The {what} contains a NUL character, which a program argument cannot hold.",
            code="invalid_command",
        )
    try:
        os.fsencode(text)
    except UnicodeEncodeError:
        raise ToolError(
            f"The {what} contains an unpaired surrogate character, which cannot be encoded.",
            code="invalid_command",
        ) from None
    return text


def run_and_reap(argv: Sequence[str], timeout_s: float) -> subprocess.CompletedProcess[str]:
    """``subprocess.run`` (text, output captured) in its own tree, which is killed and reaped
    afterwards: a short probe that forks (bubblewrap) leaves no orphan to this subreaper."""
    import subprocess

    tree = ProcessTree()
    try:
        process = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=tree.environment(None), start_new_session=True,
        )  # fmt: skip
        tree.set_leader(process.pid)
        try:
            out, err = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            tree.kill_now()
            process.communicate()
            raise
        return subprocess.CompletedProcess(list(argv), process.returncode, out, err)
    finally:
        tree.terminate_blocking(0)
        tree.release()


@dataclass
class Child:
    """A started process and its tree; its group id is its pid (it leads a new session)."""

    process: asyncio.subprocess.Process
    stdout: asyncio.StreamReader
    stderr: asyncio.StreamReader | None
    tree: ProcessTree
    _transports: list[asyncio.BaseTransport] = field(default_factory=list)

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
        """Terminate the whole tree (SIGTERM, SIGKILL after ``grace_s``; 0 kills at once),
        close our pipes and reap the leader — all within bounded time."""
        await self.tree.terminate(grace_s)
        self.close()
        if await self.wait(REAP_TIMEOUT_S) is None:
            log.warning("process %s did not exit after SIGKILL", self.pid)
        self.tree.release()

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
    owner: ProcessSupervisor | None = None,
    pass_fds: Sequence[int] = (),
    gate: int | None = None,
) -> Child:
    """Start ``argv`` in its own session and tree, stdin ``/dev/null``, stdout (and stderr,
    separately or merged into stdout) on our own pipes; ``pass_fds`` stay open in it under the
    same numbers. ``gate``: the write end of a pipe (the caller's to close) whose read end, one of
    ``pass_fds``, the command reads a line from before it does anything else; the tree is then
    set up from here once the command has started (ProcessTree.adopt), and the line written. If
    this is cancelled half way, the start is let finish (it is short) and what it started is
    killed before the cancellation goes on. The tree is contained (its own cgroup
    where possible, the limit mark): whatever the command starts is found however it detaches
    (tree.py)."""
    tree = ProcessTree(owner, contain=True)
    starting = asyncio.ensure_future(
        _start(argv, tree, cwd=cwd, env=env, merge_stderr=merge_stderr, pass_fds=pass_fds, gate=gate)
    )
    try:
        return await asyncio.shield(starting)
    except asyncio.CancelledError:
        try:
            child = await asyncio.wait_for(starting, REAP_TIMEOUT_S)
        except BaseException:
            tree.kill_now()  # found by its tag even without the leader's pid
            tree.release()
            raise
        child.tree.kill_now()
        await asyncio.shield(child.stop(grace_s=0))
        raise


async def _start(
    argv: Sequence[str],
    tree: ProcessTree,
    *,
    cwd: str | os.PathLike[str] | None,
    env: Mapping[str, str] | None,
    merge_stderr: bool,
    pass_fds: Sequence[int],
    gate: int | None,
) -> Child:
    out_read, out_write = os.pipe()
    err_read, err_write = (None, None) if merge_stderr else os.pipe()
    transports: list[asyncio.BaseTransport] = []
    try:
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=out_write,
                stderr=out_write if merge_stderr else err_write,
                cwd=cwd,
                env=tree.environment(env),
                start_new_session=True,
                pass_fds=pass_fds,
                preexec_fn=tree.child_setup() if gate is None else None,
            )
        finally:
            for fd in (out_write, err_write):
                if fd is not None:
                    os.close(fd)
        if gate is not None:
            # Here, at once: the process waits at the gate, and no shared thread pool may keep
            # it waiting (nor a later pid's reuse meet the set-up).
            tree.adopt(process.pid)
        tree.set_leader(process.pid)
        if gate is not None:
            with contextlib.suppress(BrokenPipeError):  # killed already: its status says so
                os.write(gate, b"\n")
        fd, out_read = out_read, -1  # the reader owns (and on failure closes) it now
        stdout = await pipe_reader(fd, transports)
        stderr = None
        if err_read is not None:
            fd, err_read = err_read, None
            stderr = await pipe_reader(fd, transports)
    except BaseException:
        tree.kill_now()  # found by its tag even before we learnt the leader's pid
        for transport in transports:
            transport.close()
        for fd in (out_read, err_read):
            if fd is not None and fd >= 0:
                os.close(fd)
        tree.release()
        raise
    return Child(process, stdout, stderr, tree, transports)


async def pipe_reader(fd: int, transports: list[asyncio.BaseTransport]) -> asyncio.StreamReader:
    """A stream reading the pipe ``fd`` (which it owns from now on); its transport is added to
    ``transports``, whose closing ends the stream."""
    loop = asyncio.get_running_loop()
    stream = asyncio.StreamReader(limit=READ_LIMIT)
    pipe = os.fdopen(fd, "rb", buffering=0)
    try:
        transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), pipe)
    except BaseException:
        pipe.close()
        raise
    transports.append(transport)
    return stream
