"""Child processes that can always be stopped and reaped, with everything they started.

Every process a session starts (bash commands, background jobs, custom tools, rg) goes through
this module, which owns it as a :class:`ProcessTree`: the leader plus every descendant, wherever
it went. Process groups alone are not enough — ``setsid``, ``nohup … &`` and double forks leave
the group — so a tree is found three ways, on every kill:

- the leader's session and process group (the leader starts a new session);
- the parent links in ``/proc``, from the leader and every member down;
- a tag in the environment (:data:`TREE_ENV`), inherited by every descendant that does not
  clear its environment — which is how an orphan is recognised after its parent exited.

On Linux the process is made a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``, once, on
first use), so orphans of our descendants are re-parented to us rather than to init: they stay
findable, and their exit statuses come to us. Those adopted orphans are reaped here, by pid, and
only pids seen as members of one of our trees — never ``waitpid(-1)``, which would steal the
statuses asyncio's child watcher and :mod:`subprocess` wait for.

A kill freezes the tree first (SIGSTOP, repeated until a scan finds no new member, so nothing can
fork away meanwhile), then SIGKILLs every member. :meth:`ProcessTree.kill_now` does it
synchronously, which is what a cancelled asyncio task gets: no await can be interrupted again.

Pipes: stdout/stderr are pipes we create (``os.pipe`` + ``connect_read_pipe``) rather than
asyncio's ``PIPE``. asyncio's ``Process.wait()`` also waits for its pipes to close, which a
background child holding the pipe delays forever. Here, waiting for the exit and closing the
pipes are separate, and every wait has a bound.

Module-level state is process-wide by nature (the subreaper flag, which trees are alive so an
adopted orphan can be attributed); each session's own processes are in its
:class:`ProcessSupervisor`.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import signal
import sys
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .errors import ToolError

if TYPE_CHECKING:
    import subprocess

log = logging.getLogger("toolsmith.proc")

#: After SIGTERM, how long a tree gets before SIGKILL.
KILL_GRACE_S = 2.0
#: After SIGKILL, how long we wait for the kernel to report the exit before giving up on it.
REAP_TIMEOUT_S = 2.0
#: How often a tree is polled while it is given time to exit.
GROUP_POLL_S = 0.02
#: After a command's shell exits, how long its other processes get to end by themselves before
#: they count as background processes left behind (and are stopped).
SETTLE_AFTER_EXIT_S = 0.2
READ_LIMIT = 64 * 1024
#: The environment variable that tags every process of a tree with the tree's id.
TREE_ENV = "TOOLSMITH_PROCESS_TREE"
#: A freeze pass repeats until a scan finds nothing new; a tree forking faster than we scan
#: still stops after this many passes (each pass stops everything it found).
MAX_FREEZE_PASSES = 50
#: After SIGKILL, how long :meth:`ProcessTree.kill_now` waits (blocking) to see the processes gone.
KILL_CONFIRM_S = 1.0
#: ``prctl`` option number (linux/prctl.h).
PR_SET_CHILD_SUBREAPER = 36

_lock = threading.RLock()
_subreaper: bool | None = None
#: Every live tree of this process, by tag: attributes adopted orphans, and atexit kills them.
_trees: dict[str, ProcessTree] = {}


def check_argument(text: str, what: str) -> str:
    """``text`` if a process argument can carry it: no NUL, no unpaired surrogate."""
    if "\0" in text:
        raise ToolError(f"The {what} contains a NUL character, which a program argument cannot hold.")
    try:
        os.fsencode(text)
    except UnicodeEncodeError:
        raise ToolError(f"The {what} contains an unpaired surrogate character, which cannot be encoded.") from None
    return text


def become_subreaper() -> bool:
    """Make this process a child subreaper (Linux; once). False where that is not possible."""
    global _subreaper
    with _lock:
        if _subreaper is None:
            _subreaper = False
            if sys.platform.startswith("linux"):
                try:
                    import ctypes

                    libc = ctypes.CDLL(None, use_errno=True)
                    _subreaper = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
                except (OSError, AttributeError):
                    _subreaper = False
            if not _subreaper:
                log.info("not a child subreaper: orphans of killed commands are found by their tag only")
        return _subreaper


# --- /proc --------------------------------------------------------------------------------------


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


def _candidates() -> dict[int, ProcStat]:
    """Where a tree's members can be: our descendants with the subreaper, else all of /proc."""
    if _subreaper:
        table = descendant_table()
        if table is not None:
            return table
    return process_table()


def _has_tag(pid: int, marker: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            data = handle.read()
    except OSError:
        return False
    return data.startswith(marker) or b"\0" + marker in data


# --- trees --------------------------------------------------------------------------------------


class ProcessTree:
    """One started process and everything it started. ``leader`` is None until it is running."""

    def __init__(self, owner: ProcessSupervisor | None = None) -> None:
        self.tag = uuid.uuid4().hex
        self.leader: int | None = None
        self.leader_start: int | None = None
        self.owner = owner
        #: Members seen alive, pid → start time: an adopted orphan is reaped only if seen here.
        self._seen: dict[int, int] = {}
        self._marker = f"{TREE_ENV}={self.tag}\0".encode()
        with _lock:
            _trees[self.tag] = self
        if owner is not None:
            owner.add(self)
        become_subreaper()

    def set_leader(self, pid: int) -> None:
        self.leader = pid
        stat = read_stat(pid)
        self.leader_start = stat.start if stat is not None else None

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
        table = _candidates() if table is None else table
        me = os.getpid()
        found: dict[int, ProcStat] = {}
        for stat in table.values():
            if stat.pid == me:
                continue
            if self._led(stat) or self._seen.get(stat.pid) == stat.start:
                found[stat.pid] = stat
        # Orphans: with the subreaper they are our children; without it, anyone's.
        orphan_parents = {me} if _subreaper else None
        for stat in table.values():
            if stat.pid in found or stat.pid == me or stat.zombie:
                continue
            if (orphan_parents is None or stat.ppid in orphan_parents) and _has_tag(stat.pid, self._marker):
                found[stat.pid] = stat
        # Descendants of members (a setsid'd child whose parent still lives).
        children: dict[int, list[ProcStat]] = {}
        for stat in table.values():
            children.setdefault(stat.ppid, []).append(stat)
        stack = list(found)
        while stack:
            for child in children.get(stack.pop(), ()):
                if child.pid not in found and child.pid != me:
                    found[child.pid] = child
                    stack.append(child.pid)
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
        deadline = time.monotonic() + settle_s
        while time.monotonic() < deadline and self.running():
            await asyncio.sleep(GROUP_POLL_S)
        me = os.getpid()
        members = self.members().values()
        count = sum(1 for stat in members if not stat.zombie)
        if not count and not any(self._reapable(stat, me) for stat in members):
            return 0  # the common case: one scan
        if count and grace_s > 0:
            self.signal(signal.SIGTERM)
            deadline = time.monotonic() + grace_s
            while time.monotonic() < deadline and self.alive():
                await asyncio.sleep(GROUP_POLL_S)
        if count:
            self.kill_now()
        deadline = time.monotonic() + REAP_TIMEOUT_S
        while time.monotonic() < deadline and self._unreaped():
            await asyncio.sleep(GROUP_POLL_S)
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
        """An adopted member that died: a zombie whose parent is us, seen alive as a member or in
        the leader's session — never the leader (asyncio or subprocess reaps it)."""
        if not stat.zombie or stat.ppid != me or stat.pid == self.leader:
            return False
        in_session = self.leader is not None and self.leader in (stat.pgid, stat.sid)
        return in_session or self._seen.get(stat.pid) == stat.start

    def reap(self) -> None:
        """Collect adopted members that died, by pid (never ``waitpid(-1)``)."""
        me = os.getpid()
        for stat in self.members().values():
            if self._reapable(stat, me):
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(stat.pid, os.WNOHANG)
        reap_foreign_orphans()
        live = {pid for pid in self._seen if os.path.exists(f"/proc/{pid}")}
        self._seen = {pid: start for pid, start in self._seen.items() if pid in live}

    def release(self) -> None:
        """Forget this tree (its processes are gone)."""
        with _lock:
            _trees.pop(self.tag, None)
        if self.owner is not None:
            self.owner.discard(self)


def reap_foreign_orphans(table: Mapping[int, ProcStat] | None = None) -> int:
    """Reap dead orphans that processes started outside this module left us (a language
    server's workers, a probe's forked child), as a subreaper inherits them too.

    Only zombies that cannot be anyone's direct child: a process started by this process (by
    asyncio, :mod:`subprocess`, ...) is in our process group or leads its own, so a zombie whose
    group is neither was adopted, and nobody else will wait for it.
    """
    if not _subreaper:
        return 0
    me, my_group = os.getpid(), os.getpgrp()
    reaped = 0
    for stat in (_candidates() if table is None else table).values():
        if stat.zombie and stat.ppid == me and stat.pgid not in (my_group, stat.pid) and stat.sid != stat.pid:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(stat.pid, os.WNOHANG)
                reaped += 1
    return reaped


def run_and_reap(argv: Sequence[str], timeout_s: float) -> subprocess.CompletedProcess[str]:
    """``subprocess.run`` (text, output captured) in its own tree, which is killed and reaped
    afterwards: a short probe that forks (bubblewrap) leaves no orphan to this subreaper."""
    import subprocess

    tree = ProcessTree()
    try:
        process = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=tree.environment(None), start_new_session=True,
        )  # fmt: skip
        tree.set_leader(process.pid)
        try:
            out, err = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            tree.kill_now()
            process.communicate()
            raise
        return subprocess.CompletedProcess(list(argv), process.returncode, out, err)
    finally:
        terminate_blocking(tree, 0)
        tree.release()


class ProcessSupervisor:
    """A session's live process trees; :meth:`close` kills them all (Session close)."""

    def __init__(self) -> None:
        self._trees: set[ProcessTree] = set()
        self._lock = threading.Lock()

    def add(self, tree: ProcessTree) -> None:
        with self._lock:
            self._trees.add(tree)

    def discard(self, tree: ProcessTree) -> None:
        with self._lock:
            self._trees.discard(tree)

    def trees(self) -> list[ProcessTree]:
        with self._lock:
            return list(self._trees)

    def kill_all_now(self) -> None:
        for tree in self.trees():
            tree.kill_now()

    async def close(self) -> None:
        await asyncio.gather(*(tree.terminate(grace_s=0) for tree in self.trees()))
        for tree in self.trees():
            tree.release()


@atexit.register
def _kill_all_at_exit() -> None:
    """Whatever a session did not stop dies with this process, not after it."""
    with _lock:
        trees = list(_trees.values())
    for tree in trees:
        with contextlib.suppress(Exception):
            tree.kill_now()


# --- asyncio children ----------------------------------------------------------------------------


@dataclass
class Child:
    """A started process and its tree; its group id is its pid (it leads a new session)."""

    process: asyncio.subprocess.Process
    stdout: asyncio.StreamReader
    stderr: asyncio.StreamReader | None
    tree: ProcessTree
    _transports: list[asyncio.BaseTransport] = field(default_factory=list)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    async def wait(self, timeout: float | None = None) -> int | None:
        """The exit status, or None if it did not exit within ``timeout``. Never waits on pipes."""
        try:
            return await asyncio.wait_for(asyncio.shield(self.process.wait()), timeout)
        except TimeoutError:
            return None

    async def stop(self, grace_s: float = KILL_GRACE_S) -> None:
        """Terminate the whole tree (SIGTERM, SIGKILL after ``grace_s``; 0 kills at once),
        close our pipes and reap the leader — all within bounded time."""
        await self.tree.terminate(grace_s)
        self.close()
        if await self.wait(REAP_TIMEOUT_S) is None:
            log.warning("process %s did not exit after SIGKILL", self.pid)
        self.tree.release()

    def close(self) -> None:
        """Stop reading: readers see EOF; a writer still holding the pipe gets SIGPIPE/EPIPE."""
        for transport in self._transports:
            transport.close()
        for stream in (self.stdout, self.stderr):
            if stream is not None and not stream.at_eof():
                stream.feed_eof()


async def spawn(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    merge_stderr: bool = False,
    owner: ProcessSupervisor | None = None,
) -> Child:
    """Start ``argv`` in its own session and tree, stdin ``/dev/null``, stdout (and stderr,
    separately or merged into stdout) on our own pipes. If this is cancelled half way, the start
    is let finish (it is short) and what it started is killed before the cancellation goes on."""
    tree = ProcessTree(owner)
    starting = asyncio.ensure_future(_start(argv, tree, cwd=cwd, env=env, merge_stderr=merge_stderr))
    try:
        return await asyncio.shield(starting)
    except asyncio.CancelledError:
        try:
            child = await asyncio.wait_for(starting, REAP_TIMEOUT_S)
        except BaseException:
            tree.kill_now()  # found by its tag even without the leader's pid
            tree.release()
            raise
        child.tree.kill_now()
        await asyncio.shield(child.stop(grace_s=0))
        raise


async def _start(
    argv: Sequence[str],
    tree: ProcessTree,
    *,
    cwd: str | os.PathLike[str] | None,
    env: Mapping[str, str] | None,
    merge_stderr: bool,
) -> Child:
    out_read, out_write = os.pipe()
    err_read, err_write = (None, None) if merge_stderr else os.pipe()
    transports: list[asyncio.BaseTransport] = []
    try:
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=out_write,
                stderr=out_write if merge_stderr else err_write,
                cwd=cwd,
                env=tree.environment(env),
                start_new_session=True,
            )
        finally:
            for fd in (out_write, err_write):
                if fd is not None:
                    os.close(fd)
        tree.set_leader(process.pid)
        fd, out_read = out_read, -1  # the reader owns (and on failure closes) it now
        stdout = await _reader(fd, transports)
        stderr = None
        if err_read is not None:
            fd, err_read = err_read, None
            stderr = await _reader(fd, transports)
    except BaseException:
        tree.kill_now()  # found by its tag even before we learnt the leader's pid
        for transport in transports:
            transport.close()
        for fd in (out_read, err_read):
            if fd is not None and fd >= 0:
                os.close(fd)
        tree.release()
        raise
    return Child(process, stdout, stderr, tree, transports)


async def _reader(fd: int, transports: list[asyncio.BaseTransport]) -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    stream = asyncio.StreamReader(limit=READ_LIMIT)
    pipe = os.fdopen(fd, "rb", buffering=0)
    try:
        transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), pipe)
    except BaseException:
        pipe.close()
        raise
    transports.append(transport)
    return stream


def terminate_blocking(tree: ProcessTree, grace_s: float = KILL_GRACE_S, settle_s: float = 0.0) -> int:
    """:meth:`ProcessTree.terminate` for threads without an event loop (background jobs)."""
    deadline = time.monotonic() + settle_s
    while time.monotonic() < deadline and tree.running():
        time.sleep(GROUP_POLL_S)
    me = os.getpid()
    members = tree.members().values()
    count = sum(1 for stat in members if not stat.zombie)
    if not count and not any(tree._reapable(stat, me) for stat in members):
        return 0
    if count and grace_s > 0:
        tree.signal(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and tree.alive():
            time.sleep(GROUP_POLL_S)
    if count:
        tree.kill_now()
    deadline = time.monotonic() + REAP_TIMEOUT_S
    while time.monotonic() < deadline and tree._unreaped():
        time.sleep(GROUP_POLL_S)
        tree.reap()
    return count
