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
from typing import Any

from ..state import open_private
from .protocol import (
    END_TIMEOUT_S,
    READY,
    HostLost,
    HostMismatch,
    HostPaths,
    HostUnavailable,
    is_alive,
    parse_line,
    read_pid_file,
)

#: ``TOOLSMITH_SESSION_HOST=0`` runs ``--session`` calls in-process, as before hosts existed.
HOST_ENV = "TOOLSMITH_SESSION_HOST"
#: A spawned host must be listening within this long, or the call runs in-process.
HOST_START_TIMEOUT_S = 20.0
#: After answering ``--end`` the host exits within this long, or it is signalled.
END_GRACE_S = 5.0


def host_enabled() -> bool:
    return os.environ.get(HOST_ENV, "1") != "0"


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
            accepted = parse_line(first)
            if "mismatch" in accepted:
                raise HostMismatch(str(accepted["mismatch"]))
            try:
                answer = reader.readline()
            except OSError:
                answer = b""
            if not answer:
                raise HostLost("the session host stopped during the call; see toolsmith.log in the state directory")
            reply = parse_line(answer)
            envelope = reply.get("envelope")
            if not isinstance(envelope, dict):
                raise HostLost(f"the session host answered {answer[:200]!r}")
            if reply.get("problem"):
                sys.stderr.write(f"{reply['problem']}\n")
            return envelope
    raise HostUnavailable("the session host closed the connection before taking the call, twice")


def end_host(paths: HostPaths) -> bool:
    """Stop the session's host and everything it runs; False when none was running."""
    owner = read_pid_file(paths.pid_file)
    conn = _connect(paths.socket)
    if conn is not None:
        with conn:
            conn.settimeout(END_TIMEOUT_S)
            with contextlib.suppress(OSError):
                conn.sendall(b'{"op": "end"}\n')
                conn.makefile("rb").readline()  # the host answers once its session is closed
    alive = owner is not None and is_alive(*owner)
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
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if len(argv) > 4 and argv[2] == _BOOTSTRAP.encode() and Path(os.fsdecode(argv[4])).is_relative_to(under):
            found.append(HostPaths(Path(os.fsdecode(argv[4]))))
    return found


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
    owner = read_pid_file(paths.pid_file)
    if owner is None or not is_alive(*owner):
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
