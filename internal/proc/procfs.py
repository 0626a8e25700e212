"""Reading processes from ``/proc``: one process's stat line, the whole table, our descendants
only, and the tree tag a process carries in its environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ProcStat:
    pid: int
    ppid: int
    pgid: int
    sid: int
    state: str
    #: Clock ticks since boot: with the pid, identifies a process (a reused pid has another).
    start: int

    @property
    def zombie(self) -> bool:
        return self.state in ("Z", "X")


def read_stat(pid: int) -> ProcStat | None:
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
        try:
            raw = os.read(fd, 4096)
        finally:
            os.close(fd)
        fields = raw.rsplit(b")", 1)[1].split()
        return ProcStat(pid, int(fields[1]), int(fields[2]), int(fields[3]), fields[0].decode(), int(fields[19]))
    except (OSError, IndexError, ValueError):
        return None


def process_table() -> dict[int, ProcStat]:
    """Every visible process; empty where there is no /proc."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return {}
    table = {}
    for entry in entries:
        if entry.isdigit():
            stat = read_stat(int(entry))
            if stat is not None:
                table[stat.pid] = stat
    return table


def _read_children(pid: int) -> list[int] | None:
    """Children of every thread of ``pid`` (``/proc/PID/task/TID/children``); None where the
    kernel does not offer that file."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    out: list[int] = []
    for tid in tids:
        try:
            fd = os.open(f"/proc/{pid}/task/{tid}/children", os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            if not os.path.exists(f"/proc/{pid}/task/{tid}"):
                continue  # the thread ended meanwhile
            return None
        except OSError:
            continue
        try:
            raw = os.read(fd, 1 << 20)
        finally:
            os.close(fd)
        out += [int(word) for word in raw.split()]
    return out


def descendant_table() -> dict[int, ProcStat] | None:
    """This process's descendants only: with the subreaper, every process of every tree of ours
    is one, and reading them is much cheaper than reading all of /proc. None when unavailable."""
    pending = _read_children(os.getpid())
    if pending is None:
        return None
    table: dict[int, ProcStat] = {}
    while pending:
        pid = pending.pop()
        if pid in table:
            continue
        stat = read_stat(pid)
        if stat is None:
            continue
        table[pid] = stat
        pending += _read_children(pid) or []
    return table


def _environ(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return handle.read()
    except OSError:
        return b""


def has_tag(pid: int, marker: bytes) -> bool:
    """Whether ``marker`` (a tree's ``TAG=value\0``) is in the environment of ``pid``."""
    data = _environ(pid)
    return data.startswith(marker) or b"\0" + marker in data


def env_value(pid: int, name: str) -> str | None:
    """The value of ``name`` in the environment ``pid`` started with, None when absent."""
    prefix = name.encode() + b"="
    for item in _environ(pid).split(b"\0"):
        if item.startswith(prefix):
            return item[len(prefix) :].decode("utf-8", "surrogateescape")
    return None


def descendants(table: Mapping[int, ProcStat], roots: list[int]) -> list[ProcStat]:
    """Every process of ``table`` below the pids ``roots``, by parent links."""
    children: dict[int, list[ProcStat]] = {}
    for stat in table.values():
        children.setdefault(stat.ppid, []).append(stat)
    found: list[ProcStat] = []
    seen = set(roots)
    stack = list(roots)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child.pid not in seen:
                seen.add(child.pid)
                found.append(child)
                stack.append(child.pid)
    return found
