"""Atomic writes of the project's own files (session state): the complete old file or the new one.

A temp file in the same directory, fsync, then ``os.replace``. The tools' writes to the user's
files go through :mod:`.commit` instead (race-free directories, locks, journal).
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from .fs import default_file_mode, fsync_dir


def _stage(target: Path, data: bytes, mode: int | None = None) -> Path:
    """Write ``data`` to a fsynced temp file beside ``target`` carrying ``target``'s mode
    (or ``mode`` when given)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        try:
            st = target.lstat()
            mode = stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else default_file_mode()
        except FileNotFoundError:
            mode = default_file_mode()
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
    (or setting ``mode``). Whatever had the name — a symbolic link or a FIFO someone put in the
    state directory too — is replaced, never written through."""
    target = path
    tmp = _stage(target, data, mode)
    try:
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(target.parent)
