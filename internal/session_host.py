"""The per-session host process behind CLI ``--session ID`` calls (docs/cli-session-host.md).

One long-lived process per session id holds one :class:`~agent_toolsmith.session.Session`, so its
language servers stay warm and whatever it runs (background jobs) outlives the CLI call that
started it. The CLI side (:func:`run_call`, :func:`end_host`) uses the standard library only:
a ``--session`` call must not pay for the tool modules the host has already imported.

Where it lives: ``<state dir>/sessions/<ID>/`` (0700) holds ``host.sock`` (0600, the unix
socket), ``host.pid`` (pid and process start time, so a reused pid is never signalled) and
``host.lock`` (flock'd while a host starts, so concurrent first calls start exactly one).

Protocol: one JSON line per connection each way. The request is ``{"op": "run", "tool",
"params", "no_lsp", "audit_log", "spec"}`` or ``{"op": "end"}``. The host answers
``{"accepted": true}`` as soon as it has read a run request, then ``{"envelope": ...}`` (the
ToolResponse as ``to_json`` gives it, images included) — or ``{"mismatch": why}`` when the call
names another workspace or config than the host serves. A connection that closes (or sends
anything) before the answer cancels its call: a CLI killed by SIGINT/SIGTERM stops its work.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .state import StateDir, open_private

if TYPE_CHECKING:
    import asyncio

    from .audit import AuditLog
    from .session import Session

#: ``TOOLSMITH_SESSION_HOST=0`` runs ``--session`` calls in-process, as before hosts existed.
HOST_ENV = "TOOLSMITH_SESSION_HOST"
#: A spawned host must be listening within this long, or the call runs in-process.
HOST_START_TIMEOUT_S = 20.0
#: ``--end`` waits this long for the host to close its session and exit (then kills it).
END_TIMEOUT_S = 30.0
#: After answering ``--end`` the host exits within this long, or it is signalled.
END_GRACE_S = 5.0
#: A cancelled call gets this long to stop through its cancel token before its task is cancelled.
CANCEL_GRACE_S = 2.0
#: Largest request line the host reads (parameters can be a whole file's content).
MAX_REQUEST_BYTES = 256 * 1024 * 1024
#: Longest unix socket path the kernel takes (sun_path is 108 bytes, NUL included).
MAX_SOCKET_PATH = 107
#: What the host prints on its stdout once it listens; the starting CLI reads that line.
READY = "ready"


class HostUnavailable(Exception):
    """No host could serve this call; the message says why (the CLI runs it in-process).
    ``noted`` when the in-process run reports the cause itself (an unusable state directory)."""

    def __init__(self, message: str, *, noted: bool = False) -> None:
        super().__init__(message)
        self.noted = noted


class HostLost(Exception):
    """The host took the call and then stopped answering: the call may have run in part, so it
    is not run again in-process."""


class HostMismatch(Exception):
    """The session's host serves another workspace or config; the message says which."""


@dataclass(frozen=True)
class HostPaths:
    directory: Path

    @property
    def socket(self) -> Path:
        return self.directory / "host.sock"

    @property
    def pid_file(self) -> Path:
        return self.directory / "host.pid"

    @property
    def lock(self) -> Path:
        return self.directory / "host.lock"


def host_enabled() -> bool:
    return os.environ.get(HOST_ENV, "1") != "0"


def host_paths(state_dir: Path, session_id: str) -> HostPaths:
    """The session's host files, in its private state directory (created 0700 on demand)."""
    state = StateDir(state_dir)
    directory = state.directory("sessions", session_id)
    if not state.usable:
        raise HostUnavailable(f"the state directory {state_dir} is not usable", noted=True)
    paths = HostPaths(directory)
    if len(os.fsencode(paths.socket)) > MAX_SOCKET_PATH:
        raise HostUnavailable(f"the socket path {paths.socket} is longer than unix sockets allow")
    return paths


# --- the CLI side -------------------------------------------------------------------------------


def run_call(paths: HostPaths, spec: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """Send one run request to the session's host (started if none answers); the envelope back.

    Raises :class:`HostUnavailable` or :class:`HostMismatch` before the host took the call (run
    it in-process instead), :class:`HostLost` after.
    """
    message = json.dumps({"op": "run", "spec": spec, **request}, ensure_ascii=False).encode("utf-8") + b"\n"
    for _ in range(2):
        conn = _connect(paths.socket) or _start_and_connect(paths, spec)
        with conn, conn.makefile("rb") as reader:
            try:
                conn.sendall(message)
                first = reader.readline()
            except OSError:
                first = b""  # reset: the host closed its socket with this connection unread
            if not first:
                continue  # the host was exiting (idle) and never read the call: start a new one
            accepted = _parse(first)
            if "mismatch" in accepted:
                raise HostMismatch(str(accepted["mismatch"]))
            try:
                answer = reader.readline()
            except OSError:
                answer = b""
            if not answer:
                raise HostLost("the session host stopped during the call; see toolsmith.log in the state directory")
            reply = _parse(answer)
            envelope = reply.get("envelope")
            if not isinstance(envelope, dict):
                raise HostLost(f"the session host answered {answer[:200]!r}")
            if reply.get("problem"):
                sys.stderr.write(f"{reply['problem']}\n")
            return envelope
    raise HostUnavailable("the session host closed the connection before taking the call, twice")


def end_host(paths: HostPaths) -> bool:
    """Stop the session's host and everything it runs; False when none was running."""
    owner = _read_pid_file(paths.pid_file)
    conn = _connect(paths.socket)
    if conn is not None:
        with conn:
            conn.settimeout(END_TIMEOUT_S)
            with contextlib.suppress(OSError):
                conn.sendall(b'{"op": "end"}\n')
                conn.makefile("rb").readline()  # the host answers once its session is closed
    alive = owner is not None and _alive(*owner)
    if owner is not None and alive:
        if conn is not None:
            _wait_gone(owner, END_GRACE_S)  # it is returning from its event loop
        _stop_process(owner, END_TIMEOUT_S if conn is None else END_GRACE_S)
    with contextlib.suppress(FileNotFoundError):
        paths.socket.unlink()
    if owner is not None:
        _reap_if_ours(owner[0])
    return conn is not None or alive


def _reap_if_ours(pid: int) -> None:
    """Collect the host's exit status when it became our child: a process that is a child
    subreaper (proc.py) adopts the detached host once the CLI that started it exits."""
    deadline = time.monotonic() + END_GRACE_S
    while True:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return  # not our child: its own parent (or init) reaps it
        if done or time.monotonic() >= deadline:
            return
        time.sleep(0.01)


def running_hosts(under: Path) -> list[HostPaths]:
    """The hosts whose state directory is below ``under``, found in /proc (tests' teardown)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if len(argv) > 4 and argv[2] == _BOOTSTRAP.encode() and Path(os.fsdecode(argv[4])).is_relative_to(under):
            found.append(HostPaths(Path(os.fsdecode(argv[4]))))
    return found


def _parse(line: bytes) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except ValueError as exc:
        raise HostUnavailable(f"the session host answered something unreadable ({exc})") from None
    if not isinstance(value, dict):
        raise HostUnavailable("the session host answered something unreadable")
    return value


def _connect(path: Path) -> socket.socket | None:
    """A connection to a listening host; None when nobody listens (no socket, or a stale one)."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(path))
    except (FileNotFoundError, ConnectionRefusedError):
        conn.close()
        return None
    except OSError as exc:
        conn.close()
        raise HostUnavailable(f"cannot connect to {path} ({exc.strerror or exc})") from None
    return conn


def _start_and_connect(paths: HostPaths, spec: dict[str, Any]) -> socket.socket:
    """Start the host under the session's start lock (a concurrent caller waits, then connects
    to the winner's host) and connect to it."""
    import fcntl

    try:
        lock = open_private(paths.lock, os.O_RDWR | os.O_CREAT)
    except OSError as exc:
        raise HostUnavailable(f"cannot open {paths.lock} ({exc.strerror})") from None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # held by a starter for at most HOST_START_TIMEOUT_S
        conn = _connect(paths.socket)
        if conn is not None:
            return conn
        _remove_stale(paths)
        _spawn(paths, spec)
        conn = _connect(paths.socket)
        if conn is None:
            raise HostUnavailable("the session host said it was ready but does not answer")
        return conn
    finally:
        os.close(lock)  # releases the flock


def _remove_stale(paths: HostPaths) -> None:
    """Nobody listens on the socket: its host died (or is exiting). Remove what it left."""
    with contextlib.suppress(FileNotFoundError):
        paths.socket.unlink()
    owner = _read_pid_file(paths.pid_file)
    if owner is None or not _alive(*owner):
        with contextlib.suppress(FileNotFoundError):
            paths.pid_file.unlink()


#: Loads this very package (installed, or a checkout's internal/ as ``agent_toolsmith``) in the new
#: process, so the host runs the same code as the CLI that starts it.
_BOOTSTRAP = (
    "import importlib.util, sys\n"
    "spec = importlib.util.spec_from_file_location('agent_toolsmith', sys.argv[1] + '/__init__.py',"
    " submodule_search_locations=[sys.argv[1]])\n"
    "module = importlib.util.module_from_spec(spec)\n"
    "sys.modules['agent_toolsmith'] = module\n"
    "spec.loader.exec_module(module)\n"
    "from agent_toolsmith.session_host import host_main\n"
    "sys.exit(host_main(sys.argv[2], sys.argv[3]))\n"
)


def _spawn(paths: HostPaths, spec: dict[str, Any]) -> None:
    """Start a detached host (its own session: a terminal's ^C to the CLI never reaches it) and
    wait for its ready line."""
    import select
    import subprocess

    package = str(Path(__file__).resolve().parent)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", _BOOTSTRAP, package, str(paths.directory), json.dumps(spec)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=spec["cwd"],
            start_new_session=True,
        )
    except OSError as exc:
        raise HostUnavailable(f"cannot start the session host ({exc.strerror or exc})") from None
    assert proc.stdout is not None
    deadline = time.monotonic() + HOST_START_TIMEOUT_S
    line = b""
    with proc.stdout:
        while not line.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([proc.stdout], [], [], remaining)[0]:
                break
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                break
            line += chunk
    text = line.decode("utf-8", "replace").strip()
    if text != READY:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
        why = text or f"it did not start within {HOST_START_TIMEOUT_S:.0f} s"
        raise HostUnavailable(f"the session host failed to start: {why}")
    # Not waited for: the host outlives this process. Python would warn about a child still
    # running at exit; forget it instead (init, or a subreaper, reaps it).
    proc.returncode = 0


# --- processes ----------------------------------------------------------------------------------


def _start_time(pid: int) -> int | None:
    """The process's start time (clock ticks since boot); None when it is gone (or a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def _alive(pid: int, start_time: int) -> bool:
    return _start_time(pid) == start_time


def _read_pid_file(path: Path) -> tuple[int, int] | None:
    try:
        pid, start = path.read_text(encoding="ascii").split()
        return int(pid), int(start)
    except (OSError, ValueError):
        return None


def _wait_gone(owner: tuple[int, int], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while _alive(*owner) and time.monotonic() < deadline:
        time.sleep(0.02)  # a non-child's exit cannot be waited on


def _stop_process(owner: tuple[int, int], timeout: float) -> None:
    """SIGTERM (the host closes its session), then SIGKILL to its process group after ``timeout``."""
    pid, start = owner
    if not _alive(pid, start):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    _wait_gone(owner, timeout)
    if _alive(pid, start):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


# --- the host side ------------------------------------------------------------------------------


def host_main(directory: str, spec_json: str) -> int:
    """The host process: serve until idle, ``--end`` or SIGTERM. Prints READY (or why not)."""
    import asyncio

    spec = json.loads(spec_json)
    try:
        return asyncio.run(_serve(HostPaths(Path(directory)), spec))
    except Exception as exc:  # before READY the starting CLI shows this line; after, the log has it
        import logging

        logging.getLogger("toolsmith").exception("the session host failed")
        sys.stdout.write(f"{type(exc).__name__}: {exc}\n")
        sys.stdout.flush()
        return 1


async def _serve(paths: HostPaths, spec: dict[str, Any]) -> int:
    import asyncio

    from .config import Config
    from .session import Session
    from .state import log_to_file

    # As for one-shot calls, a view does not start servers (it reports from running ones, which
    # the host keeps warm); an edit starts them.
    config = Config.load(spec["cwd"], file=spec["config"], lsp_on_view=False)
    session = Session(spec["cwd"], session_id=spec["session"], config=config, profile=spec.get("profile", "default"))
    log_to_file(session.ctx.state.directory() / "toolsmith.log", ("toolsmith", "pygls"))
    session.load_state()
    host = _Host(session, paths, spec, config.session_host_idle_s)
    with contextlib.suppress(FileNotFoundError):
        paths.socket.unlink()  # a stale one: the starter holds the start lock, no live host has it
    umask = os.umask(0o177)  # bound 0600 from the start: no window in which others may connect
    try:
        server = await asyncio.start_unix_server(host.handle, path=str(paths.socket), limit=MAX_REQUEST_BYTES)
    finally:
        os.umask(umask)
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
    return 0


def _write_pid_file(paths: HostPaths) -> None:
    start = _start_time(os.getpid())
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
    owner = _read_pid_file(paths.pid_file)
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

        from .cancel import CancelToken

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
            from .audit import AuditLog

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
