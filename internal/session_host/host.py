"""The session host process: one :class:`~agent_toolsmith.session.Session` served on a unix
socket that only this user can reach, to clients that know the session's secret, until it is
idle, ended (``--end``) or signalled.

Everything the session is — its workspace, config, profile, audit log — comes from the host's
own start (the ``spec`` its starting CLI gave it). A request carries a tool call and nothing
else is read from it (see protocol.py), so a client that got hold of the socket and the secret
could run a call in this session, never change what the session is.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import stat
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..logs import logger
from ..state import PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, open_state_file, write_state_file
from .protocol import (
    END_TIMEOUT_S,
    HELLO_TIMEOUT_S,
    MAX_REQUEST_BYTES,
    READY,
    SETTINGS,
    HostPaths,
    open_session_directory,
    peer_uid,
    process_start_time,
    read_pid_file,
)

if TYPE_CHECKING:
    import asyncio

    from ..progress import Progress
    from ..session import Session

log = logger("toolsmith")

#: A cancelled call gets this long to stop through its cancel token before its task is cancelled.
CANCEL_GRACE_S = 2.0
#: Random bytes in the session's secret (written as hex to ``host.secret``).
SECRET_BYTES = 32


def host_main(directory: str, spec_json: str) -> int:
    """The host process: serve until idle, ``--end`` or SIGTERM. Prints READY (or why not)."""
    import asyncio

    spec = json.loads(spec_json)
    try:
        return asyncio.run(_serve(HostPaths(Path(directory)), spec))
    except Exception as exc:  # before READY the starting CLI shows this line; after, the log has it
        from ..logs import get as get_logger

        get_logger("toolsmith").exception("the session host failed")
        sys.stdout.write(f"{type(exc).__name__}: {exc}\n")
        sys.stdout.flush()
        return 1


async def _serve(paths: HostPaths, spec: dict[str, Any]) -> int:
    import asyncio

    from ..config import Config
    from ..session import Session
    from ..state import log_to_file

    # As for one-shot calls, a view does not start servers (it reports from running ones, which
    # the host keeps warm); an edit starts them.
    directory = open_private_directory(paths.directory)
    try:
        audit: dict[str, Any] = {"audit_log": Path(spec["audit_log"])} if spec.get("audit_log") else {}
        config = Config.load(spec["cwd"], file=spec["config"], lsp_on_view=False, **audit)
        session = Session(
            spec["cwd"], session_id=spec["session"], config=config, profile=spec.get("profile", "default")
        )
        log_to_file(session.ctx.state.directory() / "toolsmith.log", ("toolsmith", "pygls"))
        session.load_state()
        secret = secrets.token_hex(SECRET_BYTES)
        write_state_file(paths.secret.name, secret.encode("ascii") + b"\n", dir_fd=directory)
        host = _Host(session, paths, spec, secret, config.session_host_idle_s)
        sock = bind_private_socket(directory, paths.socket.name)
        server = await asyncio.start_unix_server(host.handle, sock=sock, limit=MAX_REQUEST_BYTES)
        write_state_file(paths.pid_file.name, f"{os.getpid()} {process_start_time(os.getpid())}\n".encode(),
                         dir_fd=directory)  # fmt: skip
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(signum, host.stopping.set)
        _announce_ready()
        try:
            await host.run_until_stopped()
        finally:
            server.close()
            _remove_own_files(paths, directory)
            await host.finish()
    finally:
        os.close(directory)  # after the server: the socket's bound name goes through it
    return 0


def open_private_directory(directory: Path) -> int:
    """A descriptor of ``directory`` once it is known that no other user can reach what is in it:
    :func:`~.protocol.open_session_directory`'s checks, and no group or other access at all
    (taken away if it had some)."""
    fd = open_session_directory(directory)
    if stat.S_IMODE(os.fstat(fd).st_mode) & 0o077:
        os.fchmod(fd, PRIVATE_DIR_MODE)
    return fd


def bind_private_socket(directory_fd: int, name: str) -> socket.socket:
    """A unix socket bound as ``name`` in the directory ``directory_fd`` (from
    :func:`open_private_directory`), then made 0600.

    No other user can connect at any moment: connecting needs search access to the directory,
    which only this user has, whatever the socket's mode while it is created. The bind goes
    through the descriptor (``/proc/self/fd``), so a directory swapped in at the same path after
    the check is never used. No umask change: the umask is process-wide, and the session's
    threads create files meanwhile."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=directory_fd)  # a stale one: the starter holds the start lock, no live host has it
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(f"/proc/self/fd/{directory_fd}/{name}")
        os.chmod(name, PRIVATE_FILE_MODE, dir_fd=directory_fd)
    except BaseException:
        sock.close()
        raise
    return sock


def _announce_ready() -> None:
    sys.stdout.write(READY + "\n")
    sys.stdout.flush()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # the starter stops reading; never write to its pipe
    os.close(devnull)


def _remove_own_files(paths: HostPaths, directory: int) -> None:
    """Remove the socket, pid file and secret — only while they are still this host's. Under the
    start lock: a host that a CLI is starting meanwhile writes its own files, never to be removed
    here."""
    import fcntl

    try:
        lock = open_state_file(paths.lock.name, os.O_RDWR | os.O_CREAT, dir_fd=directory)
    except OSError:
        return
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a starting CLI holds it at most HOST_START_TIMEOUT_S
        owner = read_pid_file(paths.pid_file)
        if owner is not None and owner[0] == os.getpid():
            for path in (paths.socket, paths.secret, paths.pid_file):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path.name, dir_fd=directory)
    finally:
        os.close(lock)


class _Host:
    """The calls in flight, the idle clock, and the session's state file."""

    def __init__(self, session: Session, paths: HostPaths, spec: dict[str, Any], secret: str, idle_s: float) -> None:
        import asyncio

        self.session = session
        self.paths = paths
        #: What this host serves, from its start: told to every client, never taken from one.
        self.settings = {key: spec.get(key) for key in SETTINGS}
        self.secret = secret.encode("ascii")
        self.idle_s = idle_s
        self.stopping = asyncio.Event()
        self.calls: set[asyncio.Task[Any]] = set()
        self.connections = 0
        self.last_activity = time.monotonic()
        self.end_writers: list[asyncio.StreamWriter] = []
        self._state_signature = self._signature()

    async def run_until_stopped(self) -> None:
        import asyncio

        while not self.stopping.is_set():
            idle_for = time.monotonic() - self.last_activity
            if self.connections == 0 and idle_for >= self.idle_s:
                self.stopping.set()  # a connection accepted from now on is not taken
                return
            timeout = self.idle_s - idle_for if self.connections == 0 else self.idle_s
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), timeout=max(timeout, 0.05))

    async def finish(self) -> None:
        """Cancel the calls in flight, close the session (its servers, its processes), then
        tell whoever asked for ``--end`` that it is done."""
        import asyncio

        for task in list(self.calls):
            task.cancel()
        if self.calls:
            await asyncio.wait(self.calls, timeout=END_TIMEOUT_S)
        self._save_state()
        await self.session.close()
        for writer in self.end_writers:
            with contextlib.suppress(OSError):
                writer.write(b'{"ended": true}\n')
                await writer.drain()
                writer.close()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.last_activity = time.monotonic()
        try:
            await self._handle(reader, writer)
        except (OSError, ValueError, EOFError, TimeoutError):
            pass  # the client went away, sent garbage or nothing in time: nothing to answer
        finally:
            self.connections -= 1
            self.last_activity = time.monotonic()
            if writer not in self.end_writers:
                writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        import asyncio

        from ..cancel import CancelToken

        if not await self._admit(reader, writer):
            return
        request = json.loads(await reader.readline())
        if not isinstance(request, dict):
            return
        if request.get("op") == "end":
            self.end_writers.append(writer)
            self.stopping.set()
            return
        if self.stopping.is_set() or request.get("op") != "run":
            return  # no "accepted": the CLI starts a new host
        writer.write(b'{"accepted": true}\n')
        await writer.drain()
        self._reload_state_if_changed()
        token = CancelToken()
        # The call, and nothing else from the request: any other field (a workspace, a config,
        # an audit log) is not read.
        tool, params, no_lsp = request.get("tool"), request.get("params", "{}"), request.get("no_lsp") is True
        progress = _progress_to(writer) if request.get("progress") is True else None
        call = asyncio.create_task(self.session.run(str(tool), params, cancel=token, progress=progress,
                                                    lsp=not no_lsp))  # fmt: skip
        self.calls.add(call)
        gone = asyncio.create_task(reader.read(1))  # EOF (or any byte): the CLI is gone
        try:
            await asyncio.wait({call, gone}, return_when=asyncio.FIRST_COMPLETED)
            if not call.done():
                await self._cancel(call, token)
                return
            response = call.result()
        finally:
            gone.cancel()
            self.calls.discard(call)
            self._save_state()
        reply = {"envelope": response.to_json(), "problem": self.session.ctx.state.problem}
        writer.write(json.dumps(reply, ensure_ascii=False).encode("utf-8") + b"\n")
        await writer.drain()

    async def _admit(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Whether the client is this user's and knows the session's secret (checked in constant
        time); then it is told what this host serves. A refused client is told why, once."""
        import asyncio
        import hmac

        uid = peer_uid(writer.get_extra_info("socket"))
        if uid != os.getuid():
            log.warning("refused a connection from uid %s", uid)
            return False
        hello = json.loads(await asyncio.wait_for(reader.readline(), HELLO_TIMEOUT_S))
        secret = hello.get("secret") if isinstance(hello, dict) else None
        if not isinstance(secret, str) or not hmac.compare_digest(secret.encode("utf-8", "replace"), self.secret):
            log.warning("refused a connection without the session's secret")
            writer.write(b'{"refused": "wrong or missing secret"}\n')
            await writer.drain()
            return False
        writer.write(json.dumps({"serves": self.settings}).encode("utf-8") + b"\n")
        await writer.drain()
        return True

    @staticmethod
    async def _cancel(call: asyncio.Task[Any], token: Any) -> None:
        """The token first (the tool kills its processes and returns), the task if that lags."""
        import asyncio

        token.cancel()
        await asyncio.wait({call}, timeout=CANCEL_GRACE_S)
        if not call.done():
            call.cancel()
            await asyncio.wait({call}, timeout=END_TIMEOUT_S)
        if call.done() and not call.cancelled():
            call.exception()  # retrieved, so asyncio does not log it as never seen

    # The state file stays the truth between processes: written after every call, and read
    # again when a call outside this host (--batch in-process, a fallback) changed it.

    def _signature(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.session.state_file())
        except OSError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def _reload_state_if_changed(self) -> None:
        if self._signature() != self._state_signature:
            self.session.load_state()
            self._state_signature = self._signature()

    def _save_state(self) -> None:
        self.session.save_state()
        self._state_signature = self._signature()


def _progress_to(writer: asyncio.StreamWriter) -> Progress:
    """A call's progress sent to the CLI as it comes (``{"progress": [kind, data]}`` lines before
    the answer), for a CLI whose stderr is a terminal. Progress arrives on the event loop; a CLI
    that stopped reading only lets the lines queue up (bounded by the call's own throttling)."""

    def send(kind: str, data: dict[str, Any]) -> None:
        if not writer.is_closing():
            line = json.dumps({"progress": [kind, data]}, ensure_ascii=False, default=str)
            writer.write(line.encode("utf-8") + b"\n")

    return send
