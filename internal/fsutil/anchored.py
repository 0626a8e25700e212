"""Directory handles reached from a trusted root without following a single symlink.

Checking a path and then writing to it by name is a race: a directory swapped for a symlink in
between sends the write elsewhere. Writes therefore go through :class:`AnchoredDir`: the root
(the workspace or an allowed directory, itself resolved) is opened, then each component of the
already-resolved target directory is opened relative to the previous one with ``O_NOFOLLOW``.
If any component has become a symlink (or a file) since the check, the open fails and nothing
is written. Every later operation — reading the old content, creating the temp file, renaming,
locking — uses the directory's file descriptor, never the path again.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from ..errors import PathChanged, ToolError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
#: How long a writer waits for another writer of the same directory before giving up.
LOCK_TIMEOUT_S = 30.0
#: Polling steps while waiting for a directory lock (doubling up to the maximum).
LOCK_POLL_S = 0.001
LOCK_POLL_MAX_S = 0.02


class AnchoredDir:
    """An open directory: ``fd`` for every operation, ``path`` (its real path) for messages."""

    def __init__(self, fd: int, path: Path) -> None:
        self.fd = fd
        self.path = path
        st = os.fstat(fd)
        self.key = (st.st_dev, st.st_ino)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> AnchoredDir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _root_for(directory: Path, roots: Iterable[Path]) -> Path:
    """The deepest of ``roots`` holding ``directory`` (the filesystem root when none does).
    Compared as strings: both are absolute and resolved, and a reader of many files asks often."""
    best, best_text, text = Path("/"), "", str(directory)
    for root in roots:
        prefix = str(root).rstrip("/")
        if (text == prefix or text.startswith(prefix + "/")) and len(prefix) > len(best_text):
            best, best_text = root, prefix
    return best


def open_dir(directory: Path, roots: Iterable[Path], *, create: bool = False) -> AnchoredDir:
    """Open the resolved ``directory`` component by component from its root, never following a
    symlink; with ``create``, missing directories are made on the way."""
    root = _root_for(directory, roots)
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in directory.relative_to(root).parts:
            fd = _step(fd, part, directory, create)
    except BaseException:
        os.close(fd)
        raise
    return AnchoredDir(fd, directory)


def _step(fd: int, part: str, directory: Path, create: bool) -> int:
    try:
        child = os.open(part, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
    except FileNotFoundError:
        if not create:
            raise
        with contextlib.suppress(FileExistsError):  # made by someone else meanwhile: open it anyway
            os.mkdir(part, 0o777, dir_fd=fd)
        child = os.open(part, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise PathChanged(
                f"{directory} changed while it was being written: '{part}' is no longer a directory "
                "(it became a symlink or a file). Nothing was written; check the path and try again."
            ) from None
        raise
    os.close(fd)
    return child


#: The most a verifying read (:func:`read_anchored`) reads of one file.
VERIFY_READ_MAX_BYTES = 64 * 1024 * 1024


def read_anchored(path: Path, roots: Iterable[Path]) -> bytes | None:
    """The content of the regular file ``path`` reached from its root without following a single
    symlink (the file itself included); None when it cannot be (a component is, or became, a
    symlink; not a regular file; gone; too large)."""
    try:
        with open_dir(path.parent, roots) as directory:
            return read_at(directory, path.name)
    except (OSError, ToolError, ValueError):
        return None


def read_at(directory: AnchoredDir, name: str) -> bytes | None:
    """:func:`read_anchored` of the file ``name`` in an already opened ``directory`` (for a reader
    of many files in few directories, which opens each directory once)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=directory.fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > VERIFY_READ_MAX_BYTES:
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


#: Directories :func:`names_inside` keeps open at once (then it closes them and starts again).
MAX_OPEN_DIRS = 128


def names_inside(paths: list[str], roots: Iterable[Path], searched: Path, real: Path) -> list[str]:
    """The ``paths`` (absolute, found below ``searched``, whose real path is ``real``) that exist
    as reached from their root without following a single symlink. A listing made by name (rg,
    os.walk) can wander through a directory swapped for a symlink mid-walk; what it found there
    is not inside and is dropped."""
    roots = list(roots)
    prefix, real_prefix = str(searched).rstrip("/"), str(real).rstrip("/")
    by_dir: dict[str, AnchoredDir | None] = {}
    kept = []
    try:
        for path in paths:
            checked = real_prefix + path[len(prefix) :] if path.startswith(prefix + "/") else path
            parent, _, name = checked.rpartition("/")
            if len(by_dir) >= MAX_OPEN_DIRS and parent not in by_dir:
                _close_all(by_dir)  # bounded: a listing of many directories must not run out of descriptors
            directory = _open_cached(parent, roots, by_dir)
            if directory is None:
                continue
            try:
                os.stat(name, dir_fd=directory.fd, follow_symlinks=False)
            except OSError:
                continue
            kept.append(path)
    finally:
        _close_all(by_dir)
    return kept


def _close_all(opened: dict[str, AnchoredDir | None]) -> None:
    for directory in opened.values():
        if directory is not None:
            directory.close()
    opened.clear()


def _open_cached(directory: str, roots: list[Path], opened: dict[str, AnchoredDir | None]) -> AnchoredDir | None:
    """``directory`` opened without following a symlink, through ``opened`` (None: it cannot be):
    from its parent's descriptor when that is open already — one open per directory of a
    listing, not one per component of every directory — else from its root (:func:`open_dir`)."""
    if directory in opened:
        return opened[directory]
    parent, _, name = directory.rpartition("/")
    above = Path(directory or "/")
    result: AnchoredDir | None = None
    try:
        if name and parent and above not in roots:
            base = _open_cached(parent, roots, opened)
            if base is not None:
                result = AnchoredDir(os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=base.fd), above)
        else:
            result = open_dir(above, roots)
    except (OSError, ToolError, ValueError):
        result = None
    opened[directory] = result
    return result


def lock_dirs(dirs: list[AnchoredDir], check: Callable[[], None] | None = None) -> None:
    """Take an exclusive ``flock`` on each directory, in a fixed order so writers never deadlock.

    flock locks belong to the open file description, so this serialises writers in other
    processes *and* other sessions of this process. Locks are released when the fds close.
    """
    for directory in sorted({d.key: d for d in dirs}.values(), key=lambda d: d.key):
        _lock(directory, check)


def _lock(directory: AnchoredDir, check: Callable[[], None] | None) -> None:
    deadline = time.monotonic() + LOCK_TIMEOUT_S
    pause = LOCK_POLL_S
    while True:
        try:
            fcntl.flock(directory.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        if check is not None:
            check()
        if time.monotonic() > deadline:
            raise ToolError(
                f"Another writer has held {directory.path} for over {LOCK_TIMEOUT_S:.0f} s; nothing was written. "
                "Try again.",
                code="lock_timeout",
            )
        time.sleep(pause)
        pause = min(pause * 2, LOCK_POLL_MAX_S)
