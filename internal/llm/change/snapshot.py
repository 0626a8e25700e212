"""What a change is planned on: each file read once, with its stat and how this session last saw it.

A :class:`Snapshot` is taken under the path lock, in the change's worker thread: the file is
opened non-blocking and refused unless regular (a FIFO, a device or a socket is refused before
anything is read, so nothing can hang), read whole, and compared with the session's read record
(:meth:`...file_tracker.FileTracker.read_state`). Every later check of the change compares with
this snapshot; nothing reads the file twice.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from dataclasses import dataclass
from pathlib import Path

from ...errors import IsDirectory
from ...file_tracker import ReadState
from ...fsutil.paths import open_regular_file, read_opened
from ...fsutil.textio import TextFile, decode_bytes
from ..tools.context import FileServices

#: Said of a file that cannot be changed because it is not a regular file.
NOT_REGULAR_PURPOSE = "only regular files can be changed; nothing was written."


@dataclass(frozen=True)
class Snapshot:
    """One file as the change found it: ``data`` and ``st`` (None when there is no file), and
    ``read``: whether this session read it, and whether it changed since (with the content as
    read, when it is kept — the base an edit planned on)."""

    path: Path
    data: bytes | None
    st: os.stat_result | None
    read: ReadState

    @property
    def exists(self) -> bool:
        return self.data is not None

    @functools.cached_property
    def text(self) -> TextFile:
        """The file's text (encoding, BOM and line endings detected); refuses binary files."""
        assert self.data is not None, "an absent file has no text"
        return decode_bytes(self.data, path=str(self.path))

    def as_read(self) -> Snapshot:
        """The file as this session read it (for re-planning a change on it); only when kept."""
        assert self.read.base is not None
        return dataclasses.replace(self, data=self.read.base, read=ReadState("unchanged"))


def take_snapshot(ctx: FileServices, path: Path) -> Snapshot:
    """``path`` (a resolved file path: a symlink is read through) read once, or absent."""
    if path.is_dir():
        raise IsDirectory(f"Path is a directory, not a file: {path}")
    if not os.path.lexists(path):
        return Snapshot(path, None, None, ReadState("absent"))
    # Non-blocking, checked before any read: a FIFO or a device is refused at once (never a hang).
    fd, st = open_regular_file(path, NOT_REGULAR_PURPOSE)
    try:
        data = read_opened(fd, path, st.st_size)
    finally:
        os.close(fd)
    return Snapshot(path, data, st, ctx.files.read_state(path, data, st))
