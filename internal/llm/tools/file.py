"""Read tracking: a file may be changed only after it was read and only if unchanged since.

Reads are recorded with nanosecond timestamps and the file's ``mtime_ns`` and size at that
moment; the check compares the file now against that record, so two writes within one second
are still told apart.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from internal.errors import ToolError
from internal.fsutil.atomic import atomic_write
from internal.fsutil.paths import not_found_error
from internal.fsutil.textio import TextFile, read_text_file

MUST_READ = "You must read the file before editing it. Use the view tool first."


@dataclass(frozen=True)
class ReadRecord:
    read_ns: int
    mtime_ns: int
    size: int


def _iso(ns: int) -> str:
    return dt.datetime.fromtimestamp(ns / 1e9, tz=dt.UTC).isoformat(timespec="microseconds")


class FileTracker:
    """Per-session record of which files were read (or written by us) and in what state."""

    def __init__(self) -> None:
        self._records: dict[str, ReadRecord] = {}

    @staticmethod
    def _key(path: Path) -> str:
        return os.path.realpath(path)

    def record_read(self, path: Path) -> None:
        """Remember ``path`` as seen now. Called after view and after our own writes."""
        st = os.stat(path)
        self._records[self._key(path)] = ReadRecord(time.time_ns(), st.st_mtime_ns, st.st_size)

    def forget(self, path: Path) -> None:
        self._records.pop(self._key(path), None)

    def last_read(self, path: Path) -> ReadRecord | None:
        return self._records.get(self._key(path))

    def check_unchanged(self, path: Path) -> None:
        """Raise unless ``path`` was read in this session and has not changed since."""
        record = self.last_read(path)
        if record is None:
            raise ToolError(f"{MUST_READ} ({path})")
        st = os.stat(path)
        if st.st_mtime_ns != record.mtime_ns or st.st_size != record.size:
            raise ToolError(
                f"File {path} has been modified since it was last read "
                f"(mod time {_iso(st.st_mtime_ns)}, last read {_iso(record.read_ns)}). "
                "Read it again before editing."
            )

    def to_json(self) -> dict[str, Any]:
        return {path: asdict(record) for path, record in self._records.items()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FileTracker:
        tracker = cls()
        for path, record in data.items():
            try:
                tracker._records[path] = ReadRecord(
                    int(record["read_ns"]), int(record["mtime_ns"]), int(record["size"])
                )
            except (KeyError, TypeError, ValueError):
                continue  # a damaged entry only means that file must be read again
        return tracker


def load_for_change(tracker: FileTracker, path: Path) -> TextFile:
    """An existing text file about to be changed: must be a file, read before, unchanged since."""
    if path.is_dir():
        raise ToolError(f"Path is a directory, not a file: {path}")
    if not path.exists():
        raise not_found_error(path)
    tracker.check_unchanged(path)
    return read_text_file(path)


def store(tracker: FileTracker, path: Path, data: bytes) -> None:
    """Write atomically and record the new state as read, so the next edit needs no re-read."""
    atomic_write(path, data)
    tracker.record_read(path)
