"""This process's live process trees, and the orphans of trees that have ended.

Which trees are alive is process-wide state, as the subreaper is: an orphan adopted from any
session's command is attributed here by its marks (marks.py), and every tree still registered
dies with this process (atexit). A tree registers before it starts a process and unregisters
once its processes are gone.

An adopted orphan whose marks name no live tree belongs to a call that has ended: its tree's own
stop could not find it (or had no time to). :func:`sweep_unclaimed` kills such orphans at the end
of every tree and when a session closes (the supervisor's ``sweeper``).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import threading
import time
from collections.abc import Mapping
from typing import Protocol

from ..logs import logger
from . import cgroup
from .marks import TREE_ENV, mark_of
from .procfs import ProcStat, descendants, env_value, read_stat
from .subreaper import candidates, is_subreaper

log = logger("toolsmith.proc")

#: A sweep repeats until a scan finds nothing new (a swept process's children are adopted in
#: turn), at most this many times.
MAX_SWEEP_PASSES = 50
#: After a sweep's SIGKILLs, how long it waits (blocking) to reap what it killed.
SWEEP_REAP_S = 1.0
SWEEP_POLL_S = 0.005


class LiveTree(Protocol):
    """What this module needs of a tree (tree.ProcessTree)."""

    tag: str
    mark: int | None

    def kill_now(self) -> None: ...
    def release(self) -> None: ...


_lock = threading.Lock()
#: Every live tree of this process, by tag.
_trees: dict[str, LiveTree] = {}
#: Every leader we started that may still exist, pid → start time: never swept as an orphan
#: (its owner waits for it).
_leaders: dict[int, int] = {}
#: Orphans a sweep killed, pid → start time: reaped by pid once dead.
_swept: dict[int, int] = {}


def register(tree: LiveTree) -> None:
    with _lock:
        _trees[tree.tag] = tree


def unregister(tree: LiveTree, leader: int | None) -> None:
    with _lock:
        _trees.pop(tree.tag, None)
    if leader is not None:
        _forget_leader_if_gone(leader)


def note_leader(pid: int, start: int) -> None:
    with _lock:
        _leaders[pid] = start


def _forget_leader_if_gone(pid: int) -> None:
    """Drop a leader once it was reaped (its pid is free again)."""
    stat = read_stat(pid)
    with _lock:
        if stat is None or stat.start != _leaders.get(pid):
            _leaders.pop(pid, None)


def sweep_unclaimed(table: Mapping[int, ProcStat] | None = None) -> int:
    """Kill adopted orphans whose marks name a tree of ours that has ended, and their
    descendants. Returns how many were killed.

    Only our children (with the subreaper every orphan of our trees is one), never a leader we
    started (its owner waits for it), and never a process that carries no mark or carries the
    marks this process itself inherited (an outer Toolsmith's, which our language servers carry
    too): a process without marks of ours may be the embedder's.
    """
    if not is_subreaper():
        return 0
    me = os.getpid()
    killed: dict[int, int] = {}
    for _ in range(MAX_SWEEP_PASSES):
        # The table first, then the live trees: a tree registers before it starts a process, so
        # every process in the table whose tree is alive is seen as claimed.
        table = candidates() if table is None or killed else table
        for pid in list(_leaders):
            _forget_leader_if_gone(pid)
        with _lock:
            tags = set(_trees) | {os.environ.get(TREE_ENV)}
            marks = {tree.mark for tree in _trees.values()} | {mark_of(me)}
            leaders = dict(_leaders)
        fresh = [
            stat for stat in table.values()
            if stat.ppid == me and not stat.zombie and stat.pid not in killed and leaders.get(stat.pid) != stat.start
            and _unclaimed(stat.pid, tags, marks)
        ]  # fmt: skip
        fresh += [stat for stat in descendants(table, [s.pid for s in fresh]) if not stat.zombie]
        fresh = [stat for stat in fresh if stat.pid not in killed]
        if not fresh:
            break
        for stat in fresh:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(stat.pid, signal.SIGKILL)
            killed[stat.pid] = stat.start
    if killed:
        log.info("killed %d process(es) that ended calls left running", len(killed))
        with _lock:
            _swept.update(killed)
        deadline = time.monotonic() + SWEEP_REAP_S
        while reap_swept() and time.monotonic() < deadline:
            time.sleep(SWEEP_POLL_S)
    return len(killed)


def _unclaimed(pid: int, tags: set[str | None], marks: set[int | None]) -> bool:
    """``pid`` carries a mark of ours, and no mark of a live tree (nor of this process)."""
    mark, tag = mark_of(pid), env_value(pid, TREE_ENV)
    if mark is None and tag is None:
        return False
    return (mark is None or mark not in marks) and (tag is None or tag not in tags)


def reap_swept() -> int:
    """Reap swept orphans that died; how many are still to reap."""
    with _lock:
        swept = list(_swept.items())
    for pid, start in swept:
        stat = read_stat(pid)
        if stat is not None and stat.start == start and not stat.zombie:
            continue
        if stat is not None and stat.start == start and stat.ppid == os.getpid():
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
        with _lock:
            _swept.pop(pid, None)
    with _lock:
        return len(_swept)


@atexit.register
def _kill_all_at_exit() -> None:
    """Whatever a session did not stop dies with this process, not after it."""
    with _lock:
        trees = list(_trees.values())
    for tree in trees:
        with contextlib.suppress(Exception):
            tree.kill_now()
            tree.release()
    cgroup.remove_all()
