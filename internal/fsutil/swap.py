"""Swapping a staged file in under a name that programs outside our lock may be saving to.

Editors and scripts do not take our lock, and save in one of two ways:

- *by rename*: a new file renamed over the name — every save is a new inode, and the name moves
  from one to the next atomically;
- *in place*: the file opened for writing (often truncated first), written and closed — the same
  inode, written through a descriptor the writer holds while it saves.

A commit swaps its staged file (*ours*) with the target (*the verified inode*, holding the bytes
the change was computed from), and must never hide an outside save:

1. **A read lease** (``fcntl(F_SETLEASE, F_RDLCK)``) on a descriptor of our own for the verified
   inode. The kernel grants it only while nobody has the file open for writing — an in-place save
   in progress is waited for (at most :data:`LEASE_WAIT_S`, then the change is refused) — and
   while we hold it, whoever opens the file for writing or truncates it waits until we release it,
   and we can see them waiting (``F_GETLEASE``). Readers are never held up. Under the lease the
   content is compared with the snapshot through our descriptor (an ``open`` of our own would wait
   for our own lease) and the name is checked to still be the verified inode.
2. **The exchange** (``renameat2(RENAME_EXCHANGE)``) hands back whatever the name held at that
   instant.
3. The swap stands if what came back is the verified inode and nobody began opening it for
   writing meanwhile. Otherwise :func:`give_back` restores the newest outside content under the
   name, and the change is refused ("modified while saving").

The break of a lease is signalled to the holder — SIGIO by default, which would end the process
— so the lease's descriptor is set (``F_SETSIG``) to signal SIGCHLD, which every process ignores
or already receives for its children.

Where no lease can be had (a file owned by someone else, a file system without leases: NFS, many
FUSE mounts), step 1 compares by name instead and step 3 compares the returned file's bytes: an
in-place save whose write lands after that comparison can still be lost. With a lease, what is
left is an opener that looked the name up before the swap and reaches the lease check only after
we released it (a few instructions inside one ``open``; docs/safety.md).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import signal
import stat
import time
from dataclasses import dataclass

from ..errors import ModifiedWhileSaving, OpenForWriting
from ..logs import logger
from .fs import FileSystem, holds

log = logger("toolsmith.fsutil")

#: How long a swap waits for a program that has the file open for writing to close it.
LEASE_WAIT_S = 2.0
#: How often the lease is asked for meanwhile.
LEASE_POLL_S = 0.001
#: A give-back repeats while outside saves keep replacing what it put back; a writer saving
#: faster than two renames (microseconds apart) could otherwise hold it forever.
MAX_GIVE_BACKS = 100
#: Lease errors that mean "no lease on this file here" (not ours, a file system without them).
NO_LEASE_ERRORS = frozenset({errno.EACCES, errno.EPERM, errno.EINVAL, errno.ENOLCK, errno.ENOSYS, errno.ENOTSUP})


@dataclass(frozen=True)
class Target:
    """An existing file a commit replaces or deletes: what it must still be."""

    #: (st_dev, st_ino) of the verified file.
    identity: tuple[int, int]
    #: The bytes the change was computed from.
    expect: bytes
    #: The path, for messages.
    path: str
    #: Our private name beside it: the staged new content (a swap), or the claim name (a delete).
    staged: str | None


def verified(fs: FileSystem, dir_fd: int, name: str, target: Target, *, follow: bool) -> os.stat_result | None:
    """``name``'s stat when it is still the verified inode with the expected bytes, else None.
    ``follow``: through a symlink (a deleted link was checked by what it points to)."""
    st = holds(fs, dir_fd, name, target.expect, follow=follow)
    return st if st is not None and (st.st_dev, st.st_ino) == target.identity else None


def swap_in(fs: FileSystem, dir_fd: int, name: str, target: Target, *, ours: int | None) -> None:
    """Exchange the staged file (inode ``ours``) with ``name``, without hiding an outside save:
    steps 1–3 above. Raises ModifiedWhileSaving, with the name given back, when one got in the
    way."""
    assert target.staged is not None
    lease = Lease.take(fs, dir_fd, name, target.identity, target.path)
    try:
        if not lease.held:
            if verified(fs, dir_fd, name, target, follow=False) is None:
                raise ModifiedWhileSaving(target.path)
        elif not lease.holds(target.expect) or inode_of(fs, dir_fd, name) != target.identity[1]:
            raise ModifiedWhileSaving(target.path)
        if not fs.exchange(dir_fd, target.staged, name):  # no renameat2 here: a plain rename
            fs.rename(target.staged, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            return
        # target.staged now names what the name held at the instant of the exchange.
        if not _handed_over(fs, dir_fd, target, lease, follow=False):
            log.info("an outside save of %s got in the way of a swap: giving the name back", name)
            give_back(fs, dir_fd, target.staged, name, ours)
            raise ModifiedWhileSaving(target.path)
    finally:
        lease.release()


def delete(fs: FileSystem, dir_fd: int, name: str, target: Target, *, follow: bool) -> None:
    """Remove ``name`` only if it is still the verified file: it is first renamed to the claim
    name (``target.staged``), which takes exactly what the name held, and checked there; an
    outside save claimed by mistake goes back (unless a newer one has the name already). The
    caller removes the claim name. A regular file is checked under a lease, as for a swap."""
    assert target.staged is not None
    entry = fs.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    link = stat.S_ISLNK(entry.st_mode)  # a symlink itself is deleted, checked through the link
    lease = Lease(fs, -1) if link else Lease.take(fs, dir_fd, name, target.identity, target.path)
    try:
        if lease.held and not lease.holds(target.expect):
            raise ModifiedWhileSaving(target.path)
        fs.rename(name, target.staged, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        if not _handed_over(fs, dir_fd, target, lease, follow=follow):
            log.info("an outside save of %s got in the way of a delete: giving the name back", name)
            with contextlib.suppress(FileExistsError):  # else a newer save has it: the claimed one is superseded
                fs.link(target.staged, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            raise ModifiedWhileSaving(target.path)
    finally:
        lease.release()


def _handed_over(fs: FileSystem, dir_fd: int, target: Target, lease: Lease, *, follow: bool) -> bool:
    """What the name gave up (now at ``target.staged``) is the verified file, which nobody began
    writing to: under the lease, by inode and the lease's state; without one, by inode and bytes."""
    assert target.staged is not None
    if lease.held:
        return inode_of(fs, dir_fd, target.staged) == target.identity[1] and not lease.writer_waiting()
    return verified(fs, dir_fd, target.staged, target, follow=follow) is not None


class Lease:
    """A read lease on the verified inode, through a descriptor of our own (``fd``), or None-like
    (``fd`` is -1) where the file or file system cannot have one."""

    def __init__(self, fs: FileSystem, fd: int) -> None:
        self.fs = fs
        self.fd = fd

    @classmethod
    def take(cls, fs: FileSystem, dir_fd: int, name: str, identity: tuple[int, int], path: str) -> Lease:
        """Lease ``name``, which must still be the inode ``identity``; waits (bounded) for a
        writer that has it open. Raises ModifiedWhileSaving or OpenForWriting."""
        flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
        try:
            fd = fs.open(name, flags, dir_fd=dir_fd)
        except OSError:
            raise ModifiedWhileSaving(path) from None  # gone, or a symlink swapped in
        try:
            st = fs.fstat(fd)
            if (st.st_dev, st.st_ino) != identity:
                raise ModifiedWhileSaving(path)
            if not _signals_harmlessly(fs, fd) or not _lease(fs, fd, path):
                fs.close(fd)
                return cls(fs, -1)
        except BaseException:
            fs.close(fd)
            raise
        return cls(fs, fd)

    @property
    def held(self) -> bool:
        return self.fd >= 0

    def holds(self, expect: bytes) -> bool:
        """The leased file's content is exactly ``expect`` (read through our descriptor)."""
        at = 0
        while chunk := self.fs.pread(self.fd, 1 << 20, at):
            if not expect.startswith(chunk, at):
                return False
            at += len(chunk)
        return at == len(expect)

    def writer_waiting(self) -> bool:
        """Someone began opening the file for writing (or truncating it) while we held it."""
        return self.fs.get_lease(self.fd) != fcntl.F_RDLCK

    def release(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            try:
                self.fs.set_lease(fd, fcntl.F_UNLCK)
            finally:
                self.fs.close(fd)


def _signals_harmlessly(fs: FileSystem, fd: int) -> bool:
    """Make a break of ``fd``'s lease signal SIGCHLD; False where that cannot be set (then no
    lease is taken: its break would send SIGIO, which ends the process)."""
    try:
        fs.set_lease_signal(fd, signal.SIGCHLD)
    except OSError:
        return False
    return True


def _lease(fs: FileSystem, fd: int, path: str) -> bool:
    """Take the read lease, waiting while someone has the file open for writing. False where
    leases are not possible; OpenForWriting when the writer does not close it in time."""
    deadline = time.monotonic() + LEASE_WAIT_S
    while True:
        try:
            fs.set_lease(fd, fcntl.F_RDLCK)
            return True
        except OSError as exc:
            if exc.errno in NO_LEASE_ERRORS:
                return False
            if exc.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EBUSY):
                raise
        if time.monotonic() >= deadline:
            raise OpenForWriting(path, LEASE_WAIT_S)
        time.sleep(LEASE_POLL_S)


def inode_of(fs: FileSystem, dir_fd: int, name: str) -> int | None:
    try:
        return fs.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_ino
    except FileNotFoundError:
        return None


def give_back(fs: FileSystem, dir_fd: int, held: str, name: str, placed: int | None) -> None:
    """Put the content ``held`` names back under ``name``, to which we last gave the inode
    ``placed`` (our new file); ``held`` then names what the name gave up.

    Each exchange hands back what the name held: if that is not ``placed``, an outside save
    replaced it meanwhile — newer than what we are putting back, which it is then exchanged with
    in turn. So the name always ends with the newest outside save, and ``held`` with our file or
    an outside save that a later one superseded (as it would have been without us).
    """
    for _ in range(MAX_GIVE_BACKS):
        giving = inode_of(fs, dir_fd, held)
        try:
            swapped = fs.exchange(dir_fd, held, name)
        except FileNotFoundError:  # the name was removed meanwhile: the content goes back under it
            try:
                fs.link(held, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
                return
            except FileExistsError:
                continue  # a new save appeared: exchange with it
        if not swapped:
            raise OSError(errno.EIO, "cannot exchange back after an outside save", name)
        if inode_of(fs, dir_fd, held) == placed:
            return
        placed = giving
    raise OSError(errno.EIO, "outside saves kept replacing the file while its content was put back", name)
