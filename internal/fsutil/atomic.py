"""Atomic writes: a reader or a crash sees the complete old file or the complete new one.

Single files go through a temp file in the same directory, fsync, then ``os.replace``. A set of
files (patch) is staged first and swapped in one by one with the originals kept aside, so any
failure puts every file back as it was.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

#: Mode for new files, before the process umask.
NEW_FILE_MODE = 0o666


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _target(path: Path) -> Path:
    """Write through symlinks: replacing the link itself would turn it into a regular file."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _stage(target: Path, data: bytes, mode: int | None = None) -> Path:
    """Write ``data`` to a fsynced temp file beside ``target`` carrying ``target``'s mode
    (or ``mode`` when given)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        try:
            mode = stat.S_IMODE(target.stat().st_mode)
        except FileNotFoundError:
            mode = NEW_FILE_MODE & ~_umask()
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def atomic_write(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` atomically, creating parent directories, keeping its mode
    (or setting ``mode``)."""
    target = _target(path)
    tmp = _stage(target, data, mode)
    try:
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(target.parent)


@dataclass(frozen=True)
class FileChange:
    """New bytes for ``path``, or ``None`` to delete it."""

    path: Path
    data: bytes | None


def commit_file_set(changes: Sequence[FileChange]) -> None:
    """Apply every change or none.

    All new contents are staged before any target is touched; then each target is moved aside
    and replaced. If anything fails, the moved-aside originals are put back and new files are
    removed, so the tree is exactly as before.
    """
    staged: list[tuple[Path, Path | None]] = []
    try:
        for change in changes:
            target = _target(change.path)
            staged.append((target, None if change.data is None else _stage(target, change.data)))
    except BaseException:
        for _, tmp in staged:
            if tmp is not None:
                tmp.unlink(missing_ok=True)
        raise

    done: list[tuple[Path, Path | None]] = []  # (target, backup of the original or None)
    try:
        for target, tmp in staged:
            backup = _move_aside(target)
            done.append((target, backup))
            if tmp is not None:
                os.replace(tmp, target)
    except BaseException:
        _roll_back(done)
        for _, tmp in staged:
            if tmp is not None:
                tmp.unlink(missing_ok=True)
        raise
    for target, backup in done:
        if backup is not None:
            backup.unlink(missing_ok=True)
        _fsync_dir(target.parent)


def _move_aside(target: Path) -> Path | None:
    if not target.exists():
        return None
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".orig")
    os.close(fd)
    backup = Path(name)
    os.replace(target, backup)
    return backup


def _roll_back(done: list[tuple[Path, Path | None]]) -> None:
    for target, backup in reversed(done):
        if backup is None:
            target.unlink(missing_ok=True)
        else:
            os.replace(backup, target)
