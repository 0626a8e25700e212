"""What the CLI side and the session host share: the session's host files, the wire protocol's
messages and limits, the errors a call can meet, and a process's identity (pid and start time).

Protocol: one JSON line per connection each way. The request is ``{"op": "run", "tool",
"params", "no_lsp", "audit_log", "spec"}`` or ``{"op": "end"}``. The host answers
``{"accepted": true}`` as soon as it has read a run request, then ``{"envelope": ...}`` (the
ToolResponse as ``to_json`` gives it, images included) — or ``{"mismatch": why}`` when the call
names another workspace or config than the host serves. A connection that closes (or sends
anything) before the answer cancels its call: a CLI killed by SIGINT/SIGTERM stops its work.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..state import StateDir

#: ``--end`` waits this long for the host to close its session and exit (then kills it).
END_TIMEOUT_S = 30.0
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
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def is_alive(pid: int, start_time: int) -> bool:
    return process_start_time(pid) == start_time


def read_pid_file(path: Path) -> tuple[int, int] | None:
    try:
        pid, start = path.read_text(encoding="ascii").split()
        return int(pid), int(start)
    except (OSError, ValueError):
        return None
