"""The filesystem seam of the commit mechanism: the few OS operations it performs, in one object.

:class:`FileSystem` calls the real ``os`` functions; a test passes a subclass whose ``link`` or
``rename`` fails (no space, a read-only mount) or kills the process at a chosen step, instead
of monkeypatching :mod:`os`. Above the primitives sit the helpers written once for every
writer: read a file relative to a directory descriptor, create a new file with content
(fsynced), overwrite a file in place, fsync a directory, and the mode new files get.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import cast

from ..errors import NotRegular

#: Mode for new files, before the process umask.
NEW_FILE_MODE = 0o666
#: renameat2 flag: swap two names atomically (Linux >= 3.15; tmpfs, ext4, xfs, btrfs, overlayfs).
RENAME_EXCHANGE = 2


class FileSystem:
    """The real file system. Every method is one system call (``exchange``: renameat2)."""

    def open(self, name: str, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        return os.open(name, flags, mode, dir_fd=dir_fd)

    def close(self, fd: int) -> None:
        os.close(fd)

    def read(self, fd: int, size: int) -> bytes:
        return os.read(fd, size)

    def write(self, fd: int, data: memoryview | bytes) -> int:
        return os.write(fd, data)

    def pwrite(self, fd: int, data: bytes, offset: int) -> int:
        return os.pwrite(fd, data, offset)

    def pread(self, fd: int, size: int, offset: int) -> bytes:
        return os.pread(fd, size, offset)

    def ftruncate(self, fd: int, length: int) -> None:
        os.ftruncate(fd, length)

    def fsync(self, fd: int) -> None:
        os.fsync(fd)

    def fstat(self, fd: int) -> os.stat_result:
        return os.fstat(fd)

    def stat(self, name: str, *, dir_fd: int | None = None, follow_symlinks: bool = True) -> os.stat_result:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=follow_symlinks)

    def fchmod(self, fd: int, mode: int) -> None:
        os.fchmod(fd, mode)

    def fchown(self, fd: int, uid: int, gid: int) -> None:
        os.fchown(fd, uid, gid)

    def link(self, src: str, dst: str, *, src_dir_fd: int, dst_dir_fd: int) -> None:
        os.link(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd, follow_symlinks=False)

    def rename(self, src: str, dst: str, *, src_dir_fd: int, dst_dir_fd: int) -> None:
        os.rename(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)

    def unlink(self, name: str, *, dir_fd: int | None = None) -> None:
        os.unlink(name, dir_fd=dir_fd)

    def set_lease(self, fd: int, kind: int) -> None:
        """``fcntl(F_SETLEASE)``: take (F_RDLCK, F_WRLCK) or release (F_UNLCK) a lease (swap.py).
        ENOSYS where the system has no leases (not Linux)."""
        fcntl.fcntl(fd, _fcntl_command("F_SETLEASE"), kind)

    def get_lease(self, fd: int) -> int:
        """``fcntl(F_GETLEASE)``: the lease held, or the one it is being broken to."""
        return fcntl.fcntl(fd, _fcntl_command("F_GETLEASE"))

    def set_lease_signal(self, fd: int, signum: int) -> None:
        """``fcntl(F_SETSIG)``: the signal a break of ``fd``'s lease sends us."""
        fcntl.fcntl(fd, _fcntl_command("F_SETSIG"), signum)

    def exchange(self, fd: int, a: str, b: str) -> bool:
        """Atomically swap the names ``a`` and ``b`` in directory ``fd``; False when the kernel or
        the file system cannot (the caller falls back to rename)."""
        function = _renameat2()
        if function is None:
            return False
        import ctypes

        if function(fd, os.fsencode(a), fd, os.fsencode(b), RENAME_EXCHANGE) == 0:
            return True
        err = ctypes.get_errno()
        if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
            return False
        raise OSError(err, os.strerror(err), b)


def _fcntl_command(name: str) -> int:
    command = getattr(fcntl, name, None)
    if command is None:
        raise OSError(errno.ENOSYS, f"no {name} on this system")
    return int(command)


#: The file system every caller uses unless it is handed another.
REAL = FileSystem()


@functools.cache
def _renameat2() -> Callable[..., int] | None:
    import ctypes  # only on a write path; the CLI's read paths never load it

    libc = ctypes.CDLL(None, use_errno=True)
    function = getattr(libc, "renameat2", None)
    if function is None:
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    return cast("Callable[..., int]", function)


# --- helpers over the seam ---------------------------------------------------------------------


@contextlib.contextmanager
def opened_at(fs: FileSystem, fd: int, name: str, *, follow: bool) -> Iterator[tuple[int, os.stat_result] | None]:
    """``name`` in the directory ``fd`` opened for reading (never blocking on a FIFO) with its
    stat, closed on leaving; None when it does not exist."""
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | (0 if follow else os.O_NOFOLLOW)
    try:
        file_fd = fs.open(name, flags, dir_fd=fd)
    except FileNotFoundError:
        yield None
        return
    try:
        yield file_fd, fs.fstat(file_fd)
    finally:
        fs.close(file_fd)


def read_at(fs: FileSystem, fd: int, name: str, *, follow: bool) -> tuple[bytes, os.stat_result] | None:
    """Content and stat of ``name`` in the directory ``fd``; None when it does not exist."""
    with opened_at(fs, fd, name, follow=follow) as opened:
        if opened is None:
            return None
        file_fd, st = opened
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(f"{name} is no longer a regular file; nothing was written.")
        chunks = []
        while chunk := fs.read(file_fd, max(st.st_size + 1, 65536)):
            chunks.append(chunk)
        return b"".join(chunks), st


#: Bytes compared per read when checking a file against the content it should hold.
COMPARE_CHUNK_BYTES = 1 << 20


def holds(fs: FileSystem, fd: int, name: str, expect: bytes, *, follow: bool) -> os.stat_result | None:
    """The stat of ``name`` in directory ``fd`` when it is a regular file holding exactly
    ``expect``, else None — compared chunk by chunk, so a large file is never read whole."""
    try:
        with opened_at(fs, fd, name, follow=follow) as opened:
            if opened is None:
                return None
            file_fd, st = opened
            if not stat.S_ISREG(st.st_mode) or st.st_size != len(expect):
                return None
            at = 0
            while chunk := fs.read(file_fd, COMPARE_CHUNK_BYTES):
                # startswith at an offset is one memcmp, with no copy of ``expect`` (a memoryview
                # comparison goes item by item: twenty times slower than the read).
                if not expect.startswith(chunk, at):
                    return None
                at += len(chunk)
            return st if at == len(expect) else None
    except OSError:  # a symlink swapped in (O_NOFOLLOW), a vanished directory: not the file
        return None


def exists(fs: FileSystem, fd: int, name: str) -> bool:
    try:
        fs.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def write_all(fs: FileSystem, fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[fs.write(fd, view) :]


def write_new(
    fs: FileSystem, fd: int, name: str, data: bytes, like: os.stat_result | None, *, sync: bool = True
) -> int:
    """Create ``name`` (exclusively, never through a link) with ``data`` and return its inode.

    It carries ``like``'s mode and owner; with no ``like`` the kernel gives it the default mode
    (0o666 less the process umask — no umask flip needed). ``sync``: fsynced before returning.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    file_fd = fs.open(name, flags, 0o600 if like is not None else NEW_FILE_MODE, dir_fd=fd)
    try:
        write_all(fs, file_fd, data)
        if like is not None:
            fs.fchmod(file_fd, stat.S_IMODE(like.st_mode))
            if (like.st_uid, like.st_gid) != (os.geteuid(), os.getegid()):
                with contextlib.suppress(PermissionError):
                    fs.fchown(file_fd, like.st_uid, like.st_gid)
        if sync:
            fs.fsync(file_fd)
        return fs.fstat(file_fd).st_ino
    except BaseException:
        with contextlib.suppress(OSError):
            fs.unlink(name, dir_fd=fd)
        raise
    finally:
        fs.close(file_fd)  # the one close, on success and on error alike


def overwrite(fs: FileSystem, fd: int, name: str, data: bytes) -> None:
    """Replace the content of the existing file ``name`` in place (same inode), fsynced."""
    target = fs.open(name, os.O_WRONLY | os.O_CLOEXEC | os.O_NOFOLLOW, dir_fd=fd)
    try:
        write_all(fs, target, data)
        fs.ftruncate(target, len(data))
        fs.fsync(target)
    finally:
        fs.close(target)


def fsync_dir(directory: Path, fs: FileSystem = REAL) -> None:
    """Make the names in ``directory`` (a new or renamed entry) durable."""
    with contextlib.suppress(OSError):
        fd = fs.open(str(directory), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fs.fsync(fd)
        finally:
            fs.close(fd)


@functools.cache
def process_umask() -> int:
    """The process umask, read without changing it (``os.umask`` sets it process-wide, which
    races with other threads creating files): the ``Umask:`` line of /proc/self/status, else
    the mode a probe file gets in a private temp directory. Read once."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    with tempfile.TemporaryDirectory() as private:
        probe = os.path.join(private, "probe")
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, NEW_FILE_MODE))
        return NEW_FILE_MODE & ~stat.S_IMODE(os.stat(probe).st_mode)


def default_file_mode() -> int:
    """The mode a new file gets: 0o666 less the process umask."""
    return NEW_FILE_MODE & ~process_umask()
