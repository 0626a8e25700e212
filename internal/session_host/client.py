"""The CLI side of the session host: send a call to the session's host (starting one when none
answers), end a host, find the running ones. Standard library only (see the package docstring).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any, BinaryIO

from ..progress import Progress
from ..state import open_state_file
from .protocol import (
    END_TIMEOUT_S,
    HELLO_TIMEOUT_S,
    READY,
    SETTINGS,
    HostLost,
    HostMismatch,
    HostPaths,
    HostUnavailable,
    UnsafeStateDirectory,
    check_socket,
    is_alive,
    open_session_directory,
    parse_line,
    peer_uid,
    process_start_time,
    read_pid_file,
    read_secret,
)

#: ``TOOLSMITH_SESSION_HOST=0`` runs ``--session`` calls in-process, as before hosts existed.
HOST_ENV = "TOOLSMITH_SESSION_HOST"
#: A spawned host must be listening within this long, or the call runs in-process.
HOST_START_TIMEOUT_S = 20.0
#: After answering ``--end`` the host exits within this long, or it is signalled.
END_GRACE_S = 5.0


def host_enabled() -> bool:
    return os.environ.get(HOST_ENV, "1") != "0"


def run_call(
    paths: HostPaths, spec: dict[str, Any], call: dict[str, Any], *, progress: Progress | None = None
) -> dict[str, Any]:
    """Send one tool call (``tool``, ``params``, ``no_lsp``) to the session's host (started with
    ``spec`` if none answers); the envelope back. With ``progress``, the host sends the call's
    progress as it runs (``{"progress": [kind, data]}`` lines before the answer), given to it.

    Raises :class:`HostUnavailable` or :class:`HostMismatch` before the host took the call (run
    it in-process instead), :class:`HostLost` after, :class:`UnsafeStateDirectory` when the
    session's files or the listening process are not this user's (nothing was sent).
    """
    if progress is not None:
        call = {**call, "progress": True}
    message = json.dumps({"op": "run", **call}, ensure_ascii=False).encode("utf-8") + b"\n"
    for _ in range(2):
        conn, secret = _connect(paths) or _start_and_connect(paths, spec)
        with conn, conn.makefile("rb") as reader:
            served = _greet(conn, reader, secret)
            if served is None:
                continue  # the host was exiting (idle) and never read the call: start a new one
            ours = {key: spec.get(key) for key in SETTINGS}
            if {key: served.get(key) for key in SETTINGS} != ours:
                raise HostMismatch(_describe(served))
            try:
                conn.sendall(message)
                accepted = reader.readline()
            except OSError:
                accepted = b""  # reset: the host closed its socket with this connection unread
            if not accepted:
                continue
            parse_line(accepted)
            reply = _answer(reader, progress)
            envelope = reply.get("envelope")
            if not isinstance(envelope, dict):
                raise HostLost(f"the session host answered {str(reply)[:200]}")
            if reply.get("problem"):
                sys.stderr.write(f"{reply['problem']}\n")
            return envelope
    raise HostUnavailable("the session host closed the connection before taking the call, twice")


def _answer(reader: BinaryIO, progress: Progress | None) -> dict[str, Any]:
    """The host's answer to a call taken, its progress lines given to ``progress`` on the way."""
    while True:
        try:
            line = reader.readline()
        except OSError:
            line = b""
        if not line:
            raise HostLost("the session host stopped during the call; see toolsmith.log in the state directory")
        reply = parse_line(line)
        update = reply.get("progress")
        if not (isinstance(update, list) and len(update) == 2):
            return reply
        kind, data = update
        if progress is not None and isinstance(kind, str) and isinstance(data, dict):
            progress(kind, data)


def end_host(paths: HostPaths) -> bool:
    """Stop the session's host and everything it runs; False when none was running.
    :class:`UnsafeStateDirectory` when the session's files are not this user's alone."""
    owner = _host_process(paths)
    try:
        connected = _connect(paths)
    except HostUnavailable:
        connected = None  # its secret cannot be read: signalled below instead
    if connected is not None:
        conn, secret = connected
        with conn, conn.makefile("rb") as reader:
            conn.settimeout(END_TIMEOUT_S)
            with contextlib.suppress(OSError, HostUnavailable):
                if _greet(conn, reader, secret) is not None:
                    conn.sendall(b'{"op": "end"}\n')
                    reader.readline()  # the host answers once its session is closed
    alive = owner is not None and is_alive(*owner)
    if owner is not None and alive:
        if connected is not None:
            _wait_gone(owner, END_GRACE_S)  # it is returning from its event loop
        _stop_process(owner, END_TIMEOUT_S if connected is None else END_GRACE_S)
    with contextlib.suppress(FileNotFoundError):
        paths.socket.unlink()
    if owner is not None:
        _reap_if_ours(owner[0])
    return connected is not None or alive


def _greet(conn: socket.socket, reader: BinaryIO, secret: str) -> dict[str, Any] | None:
    """Send the session's secret; what the host serves, or None when it closed unanswered
    (it was exiting). :class:`HostUnavailable` when it refused the secret."""
    previous = conn.gettimeout()
    conn.settimeout(HELLO_TIMEOUT_S)
    try:
        conn.sendall(json.dumps({"secret": secret}).encode("ascii") + b"\n")
        line = reader.readline()
    except OSError:
        line = b""  # reset, or no answer in time
    finally:
        conn.settimeout(previous)
    if not line:
        return None
    greeting = parse_line(line)
    if "refused" in greeting:
        raise HostUnavailable(f"the session host refused the connection: {greeting['refused']}")
    served = greeting.get("serves")
    if not isinstance(served, dict):
        raise HostUnavailable("the session host did not say what it serves")
    return served


def _describe(served: dict[str, Any]) -> str:
    shown = f"workspace {served.get('cwd')}" + (f" with --config {served['config']}" if served.get("config") else "")
    shown += f" in the {served.get('profile') or 'default'} profile"
    if served.get("audit_log"):
        shown += f", auditing to {served['audit_log']}"
    return f"session {served.get('session')}'s host serves {shown}"


def _reap_if_ours(pid: int) -> None:
    """Collect the host's exit status when it became our child: a process that is a child
    subreaper (proc/subreaper.py) adopts the detached host once the CLI that started it exits."""
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
    return [paths for _, paths in _host_processes(under)]


def _host_processes(under: Path) -> list[tuple[int, HostPaths]]:
    """This user's host processes (pid, files) whose session directory is ``under`` or below it."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
            if len(argv) > 4 and argv[2] == _BOOTSTRAP.encode() and cmdline.stat().st_uid == os.getuid():
                directory = Path(os.fsdecode(argv[4]))
                if directory.is_relative_to(under):
                    found.append((int(cmdline.parent.name), HostPaths(directory)))
        except OSError:
            continue
    return found


def _host_process(paths: HostPaths) -> tuple[int, int] | None:
    """The session's host (pid, start time): from its pid file, else found in /proc (a pid file
    that is unreadable, or not a regular file, must not keep ``--end`` from stopping it)."""
    owner = read_pid_file(paths.pid_file)
    if owner is not None:
        return owner
    for pid, found in _host_processes(paths.directory):
        start = process_start_time(pid)
        if found.directory == paths.directory and start is not None:
            return pid, start
    return None


def _connect(paths: HostPaths) -> tuple[socket.socket, str] | None:
    """A connection to the session's listening host, with the session's secret; None when
    nobody listens (no socket, or a stale one).

    It goes through the checked session directory (``/proc/self/fd``), so a directory swapped in
    at the same path is never used, and it is refused (:class:`UnsafeStateDirectory`) when the
    socket or the process listening on it is another user's."""
    directory = open_session_directory(paths.directory)
    try:
        if not check_socket(directory, paths):
            return None
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(f"/proc/self/fd/{directory}/{paths.socket.name}")
        except (FileNotFoundError, ConnectionRefusedError):
            conn.close()
            return None
        except OSError as exc:
            conn.close()
            raise HostUnavailable(f"cannot connect to {paths.socket} ({exc.strerror or exc})") from None
        try:
            uid = peer_uid(conn)
            if uid != os.getuid():
                raise UnsafeStateDirectory(
                    f"refusing {paths.socket}: the process listening on it runs as uid {uid}, not as this user "
                    f"(uid {os.getuid()}). Nothing was sent."
                )
            return conn, read_secret(directory, paths)
        except BaseException:
            conn.close()
            raise
    finally:
        os.close(directory)


def _start_and_connect(paths: HostPaths, spec: dict[str, Any]) -> tuple[socket.socket, str]:
    """Start the host under the session's start lock (a concurrent caller waits, then connects
    to the winner's host) and connect to it."""
    import fcntl

    try:
        lock = open_state_file(paths.lock, os.O_RDWR | os.O_CREAT)
    except OSError as exc:
        raise HostUnavailable(f"cannot open {paths.lock} ({exc.strerror})") from None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # held by a starter for at most HOST_START_TIMEOUT_S
        connected = _connect(paths)
        if connected is not None:
            return connected
        _remove_stale(paths)
        _spawn(paths, spec)
        connected = _connect(paths)
        if connected is None:
            raise HostUnavailable("the session host said it was ready but does not answer")
        return connected
    finally:
        os.close(lock)  # releases the flock


def _remove_stale(paths: HostPaths) -> None:
    """Nobody listens on the socket: its host died (or is exiting). Remove what it left."""
    with contextlib.suppress(FileNotFoundError):
        paths.socket.unlink()
    owner = read_pid_file(paths.pid_file)
    if owner is None or not is_alive(*owner):
        for path in (paths.pid_file, paths.secret):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


#: Loads this very package (installed, or a checkout's internal/ as ``agent_toolsmith``) in the new
#: process, so the host runs the same code as the CLI that starts it.
_BOOTSTRAP = (
    "import importlib.util, sys\n"
    "spec = importlib.util.spec_from_file_location('agent_toolsmith', sys.argv[1] + '/__init__.py',"
    " submodule_search_locations=[sys.argv[1]])\n"
    "module = importlib.util.module_from_spec(spec)\n"
    "sys.modules['agent_toolsmith'] = module\n"
    "spec.loader.exec_module(module)\n"
    "from agent_toolsmith.session_host.host import host_main\n"
    "sys.exit(host_main(sys.argv[2], sys.argv[3]))\n"
)


def _spawn(paths: HostPaths, spec: dict[str, Any]) -> None:
    """Start a detached host (its own session: a terminal's ^C to the CLI never reaches it) and
    wait for its ready line."""
    import select
    import subprocess

    package = str(Path(__file__).resolve().parent.parent)
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


def _wait_gone(owner: tuple[int, int], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while is_alive(*owner) and time.monotonic() < deadline:
        time.sleep(0.02)  # a non-child's exit cannot be waited on


def _stop_process(owner: tuple[int, int], timeout: float) -> None:
    """SIGTERM (the host closes its session), then SIGKILL to its process group after ``timeout``."""
    pid, start = owner
    if not is_alive(pid, start):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    _wait_gone(owner, timeout)
    if is_alive(pid, start):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
