"""The session host process: one :class:`~agent_toolsmith.session.Session` served on a unix
socket that only this user can reach, until it is idle, ended (``--end``) or signalled."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import stat
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..state import PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, open_private
from .protocol import (
    END_TIMEOUT_S,
    MAX_REQUEST_BYTES,
    READY,
    HostPaths,
    HostUnavailable,
    process_start_time,
    read_pid_file,
)

if TYPE_CHECKING:
    import asyncio

    from ..audit import AuditLog
    from ..session import Session

#: A cancelled call gets this long to stop through its cancel token before its task is cancelled.
CANCEL_GRACE_S = 2.0


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
        config = Config.load(spec["cwd"], file=spec["config"], lsp_on_view=False)
        session = Session(
            spec["cwd"], session_id=spec["session"], config=config, profile=spec.get("profile", "default")
        )
        log_to_file(session.ctx.state.directory() / "toolsmith.log", ("toolsmith", "pygls"))
        session.load_state()
        host = _Host(session, paths, spec, config.session_host_idle_s)
        sock = bind_private_socket(directory, paths.socket.name)
        server = await asyncio.start_unix_server(host.handle, sock=sock, limit=MAX_REQUEST_BYTES)
        _write_pid_file(paths)
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(signum, host.stopping.set)
        _announce_ready()
        try:
            await host.run_until_stopped()
        finally:
            server.close()
            _remove_own_files(paths)
            await host.finish()
    finally:
        os.close(directory)  # after the server: the socket's bound name goes through it
    return 0


def open_private_directory(directory: Path) -> int:
    """A descriptor of ``directory`` once it is known that no other user can reach what is in it:
    a directory itself (not a symbolic link), owned by this user, with no group or other access
    (taken away if it had some). :class:`HostUnavailable` says why not."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        why = "it is a symbolic link" if os.path.islink(directory) else (exc.strerror or str(exc))
        raise HostUnavailable(f"the session directory {directory} is not usable: {why}") from None
    st = os.fstat(fd)
    if st.st_uid != os.getuid():
        os.close(fd)
        raise HostUnavailable(f"the session directory {directory} belongs to uid {st.st_uid}, not to this user")
    if stat.S_IMODE(st.st_mode) & 0o077:
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


def _write_pid_file(paths: HostPaths) -> None:
    start = process_start_time(os.getpid())
    fd = open_private(paths.pid_file)
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(f"{os.getpid()} {start}\n")


def _announce_ready() -> None:
    sys.stdout.write(READY + "\n")
    sys.stdout.flush()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # the starter stops reading; never write to its pipe
    os.close(devnull)


def _remove_own_files(paths: HostPaths) -> None:
    """Remove the socket and pid file — only while they are still this host's."""
    owner = read_pid_file(paths.pid_file)
    if owner is not None and owner[0] == os.getpid():
        for path in (paths.socket, paths.pid_file):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


class _Host:
    """The calls in flight, the idle clock, and the session's state file."""

    def __init__(self, session: Session, paths: HostPaths, spec: dict[str, Any], idle_s: float) -> None:
        import asyncio

        self.session = session
        self.paths = paths
        self.spec = spec
        self.idle_s = idle_s
        self.stopping = asyncio.Event()
        self.calls: set[asyncio.Task[Any]] = set()
        self.connections = 0
        self.last_activity = time.monotonic()
        self.audits: dict[str, AuditLog] = {}
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
        for audit in self.audits.values():
            await asyncio.to_thread(audit.close)
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
        except (OSError, ValueError, EOFError):
            pass  # the client went away, or sent garbage: nothing to answer
        finally:
            self.connections -= 1
            self.last_activity = time.monotonic()
            if writer not in self.end_writers:
                writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        import asyncio

        from ..cancel import CancelToken

        request = json.loads(await reader.readline())
        if not isinstance(request, dict):
            return
        if request.get("op") == "end":
            self.end_writers.append(writer)
            self.stopping.set()
            return
        if self.stopping.is_set():
            return  # no "accepted": the CLI starts a new host
        mismatch = self._mismatch(request.get("spec"))
        if mismatch:
            writer.write(json.dumps({"mismatch": mismatch}).encode("utf-8") + b"\n")
            await writer.drain()
            return
        writer.write(b'{"accepted": true}\n')
        await writer.drain()
        self._reload_state_if_changed()
        token = CancelToken()
        call = asyncio.create_task(
            self.session.run(
                str(request.get("tool", "")),
                request.get("params", "{}"),
                cancel=token,
                lsp=not request.get("no_lsp", False),
                audit=self._audit(request.get("audit_log")),
            )
        )
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

    def _mismatch(self, spec: Any) -> str:
        if not isinstance(spec, dict):
            return "the request has no spec"
        ours = self.spec
        if any(spec.get(key) != ours.get(key) for key in ("cwd", "config", "profile")):
            shown = f"workspace {ours['cwd']}" + (f" with --config {ours['config']}" if ours["config"] else "")
            shown += f" in the {ours.get('profile') or 'default'} profile"
            return f"session {ours['session']}'s host serves {shown}"
        return ""

    def _audit(self, path: Any) -> AuditLog | None:
        if not isinstance(path, str):
            return None
        if path not in self.audits:
            from ..audit import AuditLog

            self.audits[path] = AuditLog(path, self.session.ctx.config.audit_redact_keys)
        return self.audits[path]

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
