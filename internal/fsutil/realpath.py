"""A path's real path as the kernel resolves it: one open and one readlink, whatever its depth."""

from __future__ import annotations

import os
from pathlib import Path

#: Opens a path for its name only (no read, no FIFO wait, no automount of the last component).
_O_PATH = getattr(os, "O_PATH", 0)
#: What the kernel appends to the name of a file deleted while it is open.
_DELETED = " (deleted)"


def kernel_real_path(path: Path) -> Path | None:
    """``path`` with every symlink resolved, as the kernel resolved it on opening (one open and a
    readlink of /proc/self/fd, against an lstat per component for os.path.realpath). A path
    whose end does not exist is its longest existing start resolved so, and the rest as written
    — what realpath makes of it — when the first missing name is not a dangling symlink. None
    when the kernel cannot say (no /proc, no O_PATH, a loop, deleted meanwhile, ``..`` in the
    missing part): then realpath decides."""
    if not _O_PATH:
        return None
    text = os.fspath(path)
    missing = ""
    while True:
        try:
            fd = os.open(text, _O_PATH | os.O_CLOEXEC)
            break
        except FileNotFoundError:
            parent, _, name = text.rpartition("/")
            if not parent or name in ("", ".", ".."):
                return None
            text, missing = parent, f"{name}/{missing}" if missing else name
        except OSError:
            return None
    if missing:
        try:
            os.lstat(f"{text}/{missing.partition('/')[0]}")
            os.close(fd)
            return None  # the first missing name is there after all: a dangling symlink, or a race
        except FileNotFoundError:
            pass
        except OSError:
            os.close(fd)
            return None
        if "/../" in f"/{missing}/" or "/./" in f"/{missing}/":
            os.close(fd)
            return None
    try:
        resolved = os.readlink(f"/proc/self/fd/{fd}")
        opened = os.fstat(fd)
    except OSError:
        return None
    finally:
        os.close(fd)
    if not resolved.startswith("/") or resolved.endswith(_DELETED) or not _still_named(opened, resolved, text):
        return None
    return Path(f"{resolved.rstrip('/')}/{missing}" if missing else resolved)


def _still_named(opened: os.stat_result, resolved: str, text: str) -> bool:
    """The file opened is still the one both the kernel's name for it and the path name: a file
    renamed after the open (a writer's swap moves the old inode to a temporary name) is named
    by readlink where it went, which is no real path of ``text``."""
    identity = (opened.st_dev, opened.st_ino)
    try:
        at_resolved = os.stat(resolved, follow_symlinks=False)
        at_path = os.stat(text)
    except OSError:
        return False
    return (at_resolved.st_dev, at_resolved.st_ino) == identity == (at_path.st_dev, at_path.st_ino)
