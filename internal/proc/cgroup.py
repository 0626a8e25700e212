"""A cgroup v2 per process tree, where the kernel offers one and this process may create it.

Membership of a cgroup is the one mark a process cannot shed by itself: every fork inherits it,
and ``exec``, ``setsid``, a cleared environment (``env -i``) and ``clone(CLONE_PARENT)`` all keep
it. A tree's members are then simply the cgroup's ``cgroup.procs``, and ``cgroup.kill`` (Linux
>= 5.14) ends them all in one step, with nothing able to fork away meanwhile.

Where: beneath this process's own cgroup (the ``0::`` line of ``/proc/self/cgroup``, under the
cgroup2 mount), one directory per process (``toolsmith-<pid>``) holding one directory per tree
(named by the tree's tag). The started process joins its tree's cgroup itself, before it runs
the command (:meth:`TreeCgroup.join`, called between fork and exec), so no child is ever
started outside it. Creating the directories and moving a process needs write access to our own
cgroup: root, or a subtree delegated to the user (systemd's ``user@.service``). Where that is
not possible (cgroup v1 only, no delegation, another OS) :func:`create` answers None once and
for all, and trees are found by their other marks (tree.py).
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from pathlib import Path

from ..logs import logger

log = logger("toolsmith.proc")

#: The directory of this process's tree cgroups is named ``<PREFIX><pid>``.
DIRECTORY_PREFIX = "toolsmith-"

_lock = threading.Lock()
#: This process's directory of tree cgroups; False once found impossible; None before the probe.
_base: Path | bool | None = None
#: The directory made, removed at exit even when trees stopped using it (:func:`disable`).
_made: Path | None = None


def own_cgroup_dir() -> Path | None:
    """The directory of this process's cgroup v2, None without one (cgroup v1 only, no /proc)."""
    try:
        with open("/proc/self/cgroup", encoding="utf-8", errors="surrogateescape") as handle:
            own = next((line[3:].rstrip("\n") for line in handle if line.startswith("0::")), None)
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as handle:
            mounts = [line.split() for line in handle]
    except OSError:
        return None
    if own is None or not own.startswith("/"):
        return None
    for fields in mounts:
        # mountinfo: id parent dev root mount-point options [optional...] - fstype source ...
        if "-" in fields and fields[fields.index("-") + 1] == "cgroup2":
            root, mount_point = fields[3], fields[4]
            if own == root or own.startswith(root.rstrip("/") + "/"):
                return Path(mount_point, own[len(root.rstrip("/")) :].lstrip("/"))
    return None


def _probe() -> Path | None:
    """Create this process's directory of tree cgroups (once); None where that is not allowed."""
    global _base, _made
    with _lock:
        if _base is None:
            _base = False
            own = own_cgroup_dir()
            if own is not None:
                base = own / f"{DIRECTORY_PREFIX}{os.getpid()}"
                try:
                    base.mkdir(exist_ok=True)
                    _base = _made = base
                    remove_stale()
                except OSError as exc:
                    log.info("no cgroup per process tree (%s): trees are found by their marks", exc.strerror)
        return _base if isinstance(_base, Path) else None


def available() -> bool:
    """Whether trees get a cgroup in this process (probing once)."""
    return _probe() is not None


def remove_all() -> None:
    """Remove this process's directory of tree cgroups (at exit, after its trees were killed)."""
    with _lock:
        base = _made
    if base is not None:
        _remove_base(base)


def disable() -> None:
    """No more tree cgroups in this process (a cgroup turned out unusable); the directory made
    so far is still removed at exit."""
    global _base
    with _lock:
        _base = False


def remove_stale() -> None:
    """Remove the directories of tree cgroups that processes of ours left when they died without
    removing them (SIGKILL): their cgroups are empty once the processes in them are gone."""
    own = own_cgroup_dir()
    if own is None:
        return
    with contextlib.suppress(OSError):
        for entry in own.glob(f"{DIRECTORY_PREFIX}*"):
            pid = entry.name[len(DIRECTORY_PREFIX) :]
            if pid.isdigit() and int(pid) != os.getpid() and not os.path.exists(f"/proc/{pid}"):
                _remove_base(entry)


def _remove_base(base: Path) -> None:
    """Remove ``base`` and every cgroup below it that is empty, deepest first."""
    for below, _, _ in os.walk(base, topdown=False):
        with contextlib.suppress(OSError):
            os.rmdir(below)


class TreeCgroup:
    """One tree's cgroup: joined by the tree's first process, removed when the tree is."""

    def __init__(self, path: Path) -> None:
        self.path = path
        #: Encoded once, in the parent: :meth:`join` runs between fork and exec.
        self._procs = os.fsencode(path / "cgroup.procs")

    def join(self, pid: int = 0) -> None:
        """Move ``pid`` (0: the calling process, in the child before exec) into this cgroup.
        Failing silently: the tree's other marks still find the process (tree.py checks
        membership)."""
        try:
            fd = os.open(self._procs, os.O_WRONLY | os.O_CLOEXEC)
            try:
                os.write(fd, b"%d" % pid)
            finally:
                os.close(fd)
        except OSError:
            pass

    def holds(self, pid: int) -> bool:
        """Whether ``pid`` is in this cgroup (how a start is confirmed)."""
        return pid in self.pids()

    def pids(self) -> list[int]:
        """The processes in the cgroup and the cgroups below it now (exited ones are gone from
        it, reaped or not)."""
        found: list[int] = []
        for below, _, _ in os.walk(self.path):
            try:
                with open(os.path.join(below, "cgroup.procs"), "rb") as handle:
                    found += [int(word) for word in handle.read().split()]
            except (OSError, ValueError):
                continue
        return found

    def kill(self) -> bool:
        """SIGKILL every member at once (``cgroup.kill``); False where the kernel lacks it."""
        try:
            fd = os.open(self.path / "cgroup.kill", os.O_WRONLY | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            os.write(fd, b"1")
            return True
        except OSError:
            return False
        finally:
            os.close(fd)

    def remove(self) -> bool:
        """Remove the (empty) cgroup; False while a member still runs. Cgroups below it (a
        Toolsmith run by a command makes its own there) go first."""
        for below, _, _ in os.walk(self.path, topdown=False):
            if below != str(self.path):
                with contextlib.suppress(OSError):
                    os.rmdir(below)
        try:
            self.path.rmdir()
        except FileNotFoundError:
            return True
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                log.warning("cannot remove the cgroup %s: %s", self.path, exc.strerror)
            return False
        return True


def create(tag: str) -> TreeCgroup | None:
    """A new cgroup for the tree ``tag``, None where this process cannot have one."""
    base = _probe()
    if base is None:
        return None
    try:
        path = base / tag
        path.mkdir()
    except OSError as exc:
        log.info("no cgroup for a process tree (%s): found by its marks", exc.strerror)
        return None
    return TreeCgroup(path)
