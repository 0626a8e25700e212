"""What the CLI side and the session host share: the session's host files and the checks that
keep them this user's, the wire protocol's messages and limits, the errors a call can meet, and
a process's identity (pid and start time).

Protocol: one JSON line at a time over the session's unix socket.

1. The host checks the connecting process's uid (``SO_PEERCRED``); another user's connection is
   closed unanswered. The CLI checks the host's uid the same way before it sends anything.
2. The CLI sends ``{"secret": ...}``: the session's secret, read from ``host.secret`` (0600, in
   the private session directory, hidden from the bash sandbox). The host compares it in
   constant time and answers ``{"refused": why}`` and closes when it is wrong.
3. The host says what it serves: ``{"serves": {"session", "cwd", "config", "profile",
   "audit_log"}}`` — the settings it was started with. The CLI compares them with its own and,
   when they differ, closes and runs the call in-process (:class:`HostMismatch`).
4. The CLI sends the call: ``{"op": "run", "tool", "params", "no_lsp"}`` or ``{"op": "end"}``.
   Nothing else in it is read: the host's workspace, config, profile and audit log are those of
   its start, whatever a request says. The host answers ``{"accepted": true}`` at once, then
   ``{"envelope": ...}`` (the ToolResponse as ``to_json`` gives it, images included); for
   ``end``, ``{"ended": true}`` once its session is closed. A connection that closes (or sends
   anything) before the answer cancels its call: a CLI killed by SIGINT/SIGTERM stops its work.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..state import NotPrivate, StateDir, not_private, read_state_file

#: ``--end`` waits this long for the host to close its session and exit (then kills it).
END_TIMEOUT_S = 30.0
#: Largest request line the host reads (parameters can be a whole file's content).
MAX_REQUEST_BYTES = 256 * 1024 * 1024
#: A connection must send its secret within this long, or the host closes it.
HELLO_TIMEOUT_S = 10.0
#: What the CLI reads of ``host.secret`` and ``host.pid`` at most (both are one short line).
MAX_HOST_FILE_BYTES = 256
#: What the host prints on its stdout once it listens; the starting CLI reads that line.
READY = "ready"
#: The settings a host is started with and announces (step 3 above).
SETTINGS = ("session", "cwd", "config", "profile", "audit_log")


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


class UnsafeStateDirectory(Exception):
    """The state directory, the session's directory or its socket is not this user's alone (or
    the process listening there runs as another user): nothing is sent, and the call does not
    run in-process either, since the session's state there is not trustworthy."""


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

    @property
    def secret(self) -> Path:
        return self.directory / "host.secret"


def host_paths(state_dir: Path, session_id: str) -> HostPaths:
    """The session's host files, in its private state directory (created 0700 on demand).

    The state directory, ``sessions`` and the session's directory, where they exist, are checked
    first (:class:`UnsafeStateDirectory`): another user who owns one, or may write in one, could
    have put a socket there that would receive the call."""
    check_private_path(state_dir, "sessions", session_id)
    state = StateDir(state_dir)
    directory = state.directory("sessions", session_id)
    if not state.usable:
        raise HostUnavailable(f"the state directory {state_dir} is not usable", noted=True)
    return HostPaths(directory)


def check_private_path(root: Path, *parts: str) -> None:
    """Check ``root`` (followed if a symbolic link) and each existing directory ``parts`` below it
    (not followed: a symbolic link there is left to the host's own check)."""
    path = root
    for part in ("", *parts):
        path = path / part if part else path
        try:
            st = os.stat(path) if not part else os.lstat(path)
        except OSError:
            return  # missing: created private; unreadable: the state directory says so
        if stat.S_ISLNK(st.st_mode):
            return
        why = not_private(st)
        if why:
            raise UnsafeStateDirectory(_unsafe(path, why))


def open_session_directory(directory: Path) -> int:
    """A descriptor of the session's directory once it is known to be this user's alone: a
    directory itself (not a symbolic link), owned by this user, not writable by group or others.
    :class:`HostUnavailable` (a symbolic link) or :class:`UnsafeStateDirectory` says why not."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        why = "it is a symbolic link" if os.path.islink(directory) else (exc.strerror or str(exc))
        raise HostUnavailable(f"the session directory {directory} is not usable: {why}") from None
    why = not_private(os.fstat(fd))
    if why:
        os.close(fd)
        raise UnsafeStateDirectory(_unsafe(directory, why))
    return fd


def check_socket(directory_fd: int, paths: HostPaths) -> bool:
    """Whether a socket that is this user's is at ``host.sock`` (False: nothing there).
    :class:`UnsafeStateDirectory` when something of another user's (or writable by others) is."""
    try:
        st = os.stat(paths.socket.name, dir_fd=directory_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    why = not_private(st)
    if why:
        raise UnsafeStateDirectory(_unsafe(paths.socket, why))
    return stat.S_ISSOCK(st.st_mode)


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end of a connected unix socket (``SO_PEERCRED``)."""
    _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    return int(uid)


def read_secret(directory_fd: int, paths: HostPaths) -> str:
    """The session's secret from ``host.secret``; :class:`HostUnavailable` when it cannot be read,
    :class:`UnsafeStateDirectory` when the file is not this user's alone."""
    try:
        return read_state_file(paths.secret.name, MAX_HOST_FILE_BYTES, dir_fd=directory_fd).decode("ascii").strip()
    except NotPrivate as exc:
        raise UnsafeStateDirectory(_unsafe(paths.secret, exc.strerror or "")) from None
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not text"
        raise HostUnavailable(f"cannot read the session host's secret {paths.secret} ({why})") from None


def _unsafe(path: Path, why: str) -> str:
    return (
        f"refusing {path}: it {why}, so another user could have put a session host there to receive this "
        "call. Nothing was sent. Fix its owner or mode (chmod go-w), or set TOOLSMITH_STATE_DIR to a "
        "directory of your own."
    )


def parse_line(line: bytes) -> dict[str, Any]:
    """One line of the host's answer, a JSON object; :class:`HostUnavailable` when it is not."""
    try:
        value = json.loads(line)
    except ValueError as exc:
        raise HostUnavailable(f"the session host answered something unreadable ({exc})") from None
    if not isinstance(value, dict):
        raise HostUnavailable("the session host answered something unreadable")
    return value


def process_start_time(pid: int) -> int | None:
    """The process's start time (clock ticks since boot); None when it is gone (or a zombie)."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat_line[stat_line.rindex(")") + 2 :].split()
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def is_alive(pid: int, start_time: int) -> bool:
    return process_start_time(pid) == start_time


def read_pid_file(path: Path) -> tuple[int, int] | None:
    try:
        pid, start = read_state_file(path, MAX_HOST_FILE_BYTES).decode("ascii").split()
        return int(pid), int(start)
    except (OSError, ValueError):
        return None
