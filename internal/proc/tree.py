"""A process tree: one started process and everything it started, wherever it went; how its
members are found, and how the whole tree is stopped and reaped.

Process groups alone are not enough — ``setsid``, ``nohup … &`` and double forks leave the
group, ``env -i`` clears the environment, ``clone(CLONE_PARENT)`` makes a sibling of its
creator — so a tree is found several ways, on every kill:

- the leader's session and process group (the leader starts a new session);
- the parent links in ``/proc``, from the leader and every member down;
- the tree's cgroup (cgroup.py), where the kernel offers one and we may create it: a contained
  tree's first process joins it before running the command, and no member can leave it;
- marks on every descendant, which is how an orphan is recognised after its parent exited: a
  tag in the environment (:data:`TREE_ENV`), and in a contained tree the limit mark
  (marks.py), which ``env -i``, ``setsid``, ``exec`` and ``CLONE_PARENT`` all keep.

With the subreaper (subreaper.py) adopted orphans are reaped here, by pid, and only pids seen as
members of one of our trees — never ``waitpid(-1)``, which would steal the statuses asyncio's
child watcher and :mod:`subprocess` wait for. An adopted orphan whose marks name a tree that has
ended is killed when any tree ends and when a session closes (live_trees.py).

A kill ends the cgroup at once where there is one, and freezes the tree (SIGSTOP, repeated until
a scan finds no new member, so nothing can fork away meanwhile), then SIGKILLs every member.
:meth:`ProcessTree.kill_now` does it synchronously, which is what a cancelled asyncio task gets:
no await can be interrupted again.

Which trees are alive is process-wide state (live_trees.py: so an adopted orphan can be
attributed, and so they die with this process); each session's own trees are in its
:class:`ProcessSupervisor` (supervisor.py).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Generator, Mapping

from ..logs import logger
from . import cgroup, live_trees
from .marks import TREE_ENV as TREE_ENV  # re-exported: the package's name for it
from .marks import give_mark, mark_of, mark_setter, new_mark
from .procfs import ProcStat, descendants, has_tag, read_stat
from .subreaper import become_subreaper, candidates, is_subreaper, reap_foreign_orphans
from .supervisor import ProcessSupervisor as ProcessSupervisor  # a tree's owner; launch imports it from here

#: After SIGTERM, how long a tree gets before SIGKILL.
KILL_GRACE_S = 2.0
#: After SIGKILL, how long we wait for the kernel to report the exit before giving up on it.
REAP_TIMEOUT_S = 2.0
#: How often a tree is polled while it is given time to exit.
GROUP_POLL_S = 0.02
#: After a command's shell exits, how long its other processes get to end by themselves before
#: they count as background processes left behind (and are stopped).
SETTLE_AFTER_EXIT_S = 0.2
#: A freeze pass repeats until a scan finds nothing new; a tree forking faster than we scan
#: still stops after this many passes (each pass stops everything it found).
MAX_FREEZE_PASSES = 50
#: After SIGKILL, how long :meth:`ProcessTree.kill_now` waits (blocking) to see the processes gone.
KILL_CONFIRM_S = 1.0

log = logger("toolsmith.proc")


class ProcessTree:
    """One started process and everything it started. ``leader`` is None until it is running.

    ``contain``: the started process runs :meth:`child_setup` before the command (pass it as
    ``preexec_fn``), which puts the tree in its own cgroup and gives it the limit mark — for
    commands the model or the user wrote, which may detach in every way. Without it (rg, probes)
    the process starts faster (no ``preexec_fn``: ``vfork``) and carries the environment tag.
    """

    def __init__(self, owner: ProcessSupervisor | None = None, *, contain: bool = False) -> None:
        self.tag = os.urandom(16).hex()
        self.leader: int | None = None
        self.leader_start: int | None = None
        self.owner = owner
        self.mark = new_mark() if contain else None
        self.cgroup = cgroup.create(self.tag) if contain else None
        #: Members seen alive, pid → start time: an adopted orphan is reaped only if seen here.
        self._seen: dict[int, int] = {}
        self._marker = f"{TREE_ENV}={self.tag}\0".encode()
        live_trees.register(self)
        if owner is not None:
            owner.add(self)
            owner.sweeper = live_trees.sweep_unclaimed
        become_subreaper()

    def child_setup(self, then: Callable[[], None] | None = None) -> Callable[[], None] | None:
        """What the started process runs between fork and exec (``preexec_fn``): join the
        tree's cgroup, take its mark, then run ``then``. None when there is nothing to run."""
        group = self.cgroup
        take_mark = mark_setter(self.mark) if self.mark is not None else None
        if group is None and take_mark is None:
            return then

        def setup() -> None:
            if group is not None:
                group.join()
            if take_mark is not None:
                take_mark()
            if then is not None:
                then()

        return setup

    def adopt(self, pid: int) -> None:
        """What :meth:`child_setup` does, done from here to a started process that waits until
        it is done (it has run nothing of its command yet): join the cgroup, take the mark.
        A start without ``preexec_fn`` needs no fork of this process (``vfork``): a fork copies
        the page tables of the whole interpreter, milliseconds with the interpreter lock held."""
        if self.cgroup is not None:
            self.cgroup.join(pid)
        if self.mark is not None:
            give_mark(pid, self.mark)

    def set_leader(self, pid: int) -> None:
        self.leader = pid
        stat = read_stat(pid)
        self.leader_start = stat.start if stat is not None else None
        if stat is not None:
            live_trees.note_leader(pid, stat.start)
        if self.cgroup is not None and stat is not None and not self.cgroup.holds(pid) and self._running(pid):
            log.info("a process could not join its tree's cgroup: trees are found by their marks")
            cgroup.disable()
            self.cgroup.remove()
            self.cgroup = None

    @staticmethod
    def _running(pid: int) -> bool:
        """Still running (a leader that exited at once is not in its cgroup any more)."""
        return (stat := read_stat(pid)) is not None and not stat.zombie

    def _led(self, stat: ProcStat) -> bool:
        """In the leader's session or group, or the leader itself (not a reuse of its pid).

        A pid in use as a group or session id is never reused, so those two are safe."""
        if self.leader is None:
            return False
        if stat.pid == self.leader:
            return self.leader_start is None or stat.start == self.leader_start
        return self.leader in (stat.pgid, stat.sid)

    def environment(self, env: Mapping[str, str] | None) -> dict[str, str]:
        out = dict(os.environ if env is None else env)
        out[TREE_ENV] = self.tag
        return out

    def members(self, table: Mapping[int, ProcStat] | None = None) -> dict[int, ProcStat]:
        """The tree's processes now, zombies included, the leader included while it exists."""
        table = candidates() if table is None else table
        me = os.getpid()
        found: dict[int, ProcStat] = {}
        for stat in table.values():
            if stat.pid == me:
                continue
            if self._led(stat) or self._seen.get(stat.pid) == stat.start:
                found[stat.pid] = stat
        for pid in self.cgroup.pids() if self.cgroup is not None else ():
            if pid != me and (member := table.get(pid) or read_stat(pid)) is not None:
                found[pid] = member
        # Orphans: with the subreaper they are our children; without it, anyone's.
        orphan_parents = {me} if is_subreaper() else None
        for stat in table.values():
            if stat.pid in found or stat.pid == me:
                continue
            if (orphan_parents is None or stat.ppid in orphan_parents) and self._marked(stat):
                found[stat.pid] = stat
        # Descendants of members (a setsid'd child whose parent still lives).
        for child in descendants(table, list(found)):
            if child.pid != me:
                found.setdefault(child.pid, child)
        # Never ourselves, init, or an ancestor of ours (a safety net: no tree may hold them).
        ancestor = me
        while ancestor in table and ancestor > 1:
            found.pop(ancestor, None)
            ancestor = table[ancestor].ppid
        found.pop(1, None)
        for stat in found.values():
            if not stat.zombie:
                self._seen[stat.pid] = stat.start
        return found

    def _marked(self, stat: ProcStat) -> bool:
        """The process carries this tree's limit mark (a zombie still shows it) or environment
        tag (a zombie's environment is gone)."""
        if self.mark is not None and mark_of(stat.pid) == self.mark:
            return True
        return not stat.zombie and has_tag(stat.pid, self._marker)

    def alive(self, *, include_leader: bool = True) -> list[int]:
        """Members that are running (not zombies)."""
        return [s.pid for s in self.members().values() if not s.zombie and (include_leader or s.pid != self.leader)]

    def signal(self, signum: int) -> int:
        """Send ``signum`` to every running member; how many there were."""
        pids = self.alive()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signum)
        return len(pids)

    def kill_now(self) -> None:
        """Freeze the whole tree, then SIGKILL it. Synchronous: safe where awaiting is not."""
        if self.cgroup is not None:
            self.cgroup.kill()  # every member at once; what the scans find next is already dying
        stopped: set[int] = set()
        for _ in range(MAX_FREEZE_PASSES):
            fresh = [pid for pid in self.alive() if pid not in stopped]
            if not fresh:
                break
            for pid in fresh:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGSTOP)
            stopped.update(fresh)
        if self.leader is not None:  # the group too: a pid in use as a group id is never reused
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.leader, signal.SIGKILL)
        killed = stopped | set(self.alive())
        for pid in killed:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                os.kill(pid, signal.SIGCONT)
        # SIGKILL is delivered when the process next runs; on a loaded machine that takes a
        # moment. Confirm (bounded) so that "killed" means gone when this returns.
        deadline = time.monotonic() + KILL_CONFIRM_S
        while killed and time.monotonic() < deadline:
            killed = {pid for pid in killed if (stat := read_stat(pid)) is not None and not stat.zombie}
            if killed:
                time.sleep(GROUP_POLL_S / 4)
        self.reap()

    async def terminate(self, grace_s: float = KILL_GRACE_S, settle_s: float = 0.0) -> int:
        """SIGTERM every member, SIGKILL what is left after ``grace_s`` (at once when 0), and
        wait (bounded) until they are gone. Returns how many processes were running.

        ``settle_s``: members already on their way out get this long to go by themselves first,
        and are not counted (a sandbox's inner init still exiting after its shell did)."""
        import asyncio  # here, not at the top: a session that starts no process never imports it

        steps = self._terminating(grace_s, settle_s)
        try:
            while True:
                await asyncio.sleep(next(steps))
        except StopIteration as done:
            return int(done.value)

    def terminate_blocking(self, grace_s: float = KILL_GRACE_S, settle_s: float = 0.0) -> int:
        """:meth:`terminate` for threads without an event loop (background jobs)."""
        steps = self._terminating(grace_s, settle_s)
        try:
            while True:
                time.sleep(next(steps))
        except StopIteration as done:
            return int(done.value)

    def _terminating(self, grace_s: float, settle_s: float) -> Generator[float, None, int]:
        """The steps of a termination, written once for both callers: yields each pause between
        two polls (the caller sleeps it, awaiting or blocking); returns the count."""
        deadline = time.monotonic() + settle_s
        while time.monotonic() < deadline and self.running():
            yield GROUP_POLL_S
        me = os.getpid()
        table = candidates()
        live_trees.sweep_unclaimed(table)  # what ended calls left is killed at every call's end
        members = self.members(table).values()
        count = sum(1 for stat in members if not stat.zombie)
        if not count and not any(self._reapable(stat, me) for stat in members):
            return 0  # the common case: one scan
        if count and grace_s > 0:
            self.signal(signal.SIGTERM)
            deadline = time.monotonic() + grace_s
            while time.monotonic() < deadline and self.alive():
                yield GROUP_POLL_S
        if count:
            self.kill_now()
        deadline = time.monotonic() + REAP_TIMEOUT_S
        while time.monotonic() < deadline and self._unreaped():
            yield GROUP_POLL_S
            self.reap()
        return count

    def running(self) -> int:
        """How many members are running (not zombies)."""
        return sum(1 for stat in self.members().values() if not stat.zombie)

    def _unreaped(self) -> bool:
        """A member other than the leader (whose owner reaps it) still running, or dead and
        ours to reap?"""
        me = os.getpid()
        return any(
            stat.pid != self.leader and (not stat.zombie or self._reapable(stat, me))
            for stat in self.members().values()
        )

    def _reapable(self, stat: ProcStat, me: int) -> bool:
        """An adopted member that died: a zombie whose parent is us, seen alive as a member, in
        the leader's session or carrying the tree's mark (a cgroup kill can end members before
        any scan saw them alive) — never the leader (asyncio or subprocess reaps it)."""
        if not stat.zombie or stat.ppid != me or stat.pid == self.leader:
            return False
        in_session = self.leader is not None and self.leader in (stat.pgid, stat.sid)
        if in_session or self._seen.get(stat.pid) == stat.start:
            return True
        return self.mark is not None and mark_of(stat.pid) == self.mark

    def reap(self) -> None:
        """Collect adopted members that died, by pid (never ``waitpid(-1)``)."""
        me = os.getpid()
        for stat in self.members().values():
            if self._reapable(stat, me):
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(stat.pid, os.WNOHANG)
        reap_foreign_orphans()
        live_trees.reap_swept()
        live = {pid for pid in self._seen if os.path.exists(f"/proc/{pid}")}
        self._seen = {pid: start for pid, start in self._seen.items() if pid in live}

    def release(self) -> None:
        """Forget this tree (its processes are gone), and remove its cgroup."""
        if self.cgroup is not None and not self.cgroup.remove():
            # A member still running after the kill (uninterruptible sleep): end it and retry
            # within bounds; atexit removes what is left.
            self.cgroup.kill()
            deadline = time.monotonic() + KILL_CONFIRM_S
            while not self.cgroup.remove() and time.monotonic() < deadline:
                time.sleep(GROUP_POLL_S / 4)
        live_trees.unregister(self, self.leader)
        if self.owner is not None:
            self.owner.discard(self)
