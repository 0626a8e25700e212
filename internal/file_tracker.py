"""Which files a session has read, and whether they are still as it read them.

A file may be changed by edit, multiedit, write or patch only after the session read it, and
only if it has not changed since. "Changed" is decided by content when the read saw the whole
file (a digest of its bytes, so a rewrite that keeps size and restores the mtime is still
caught, and a ``touch`` that changes nothing is not), and otherwise by the stat signature:
nanosecond mtime, size, ctime and inode. ctime cannot be set back from user space, so even
``os.utime`` restoring the old mtime shows.
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal

from .errors import ChangedSinceRead, NotRead, ToolError
from .fsutil.paths import real_path

#: Contents kept of files read whole, for re-anchoring an edit after an outside change (a
#: formatter, a save): each file up to MAX_SNAPSHOT_BYTES (a larger one is kept as its digest only),
#: and all of a session's together up to MAX_SNAPSHOTS_TOTAL_BYTES, the least recently read or
#: written dropped first (its digest then decides whether it changed, and an edit after an outside
#: change to it is refused rather than re-anchored). Bounded by bytes, not by count: a session that
#: reads 300 source files of ordinary size keeps them all.
MAX_SNAPSHOT_BYTES = 2 * 1024 * 1024
MAX_SNAPSHOTS_TOTAL_BYTES = 64 * 1024 * 1024


def content_digest(data: bytes) -> str:
    # Imported here: hashlib loads OpenSSL (~2.5 ms), and a one-shot view never digests (the
    # bytes it read are kept, and a snapshot decides by comparing them).
    import hashlib

    # SHA-256 is hardware-accelerated on current CPUs: twice as fast as BLAKE2 here.
    return hashlib.sha256(data).hexdigest()[:32]


@dataclass(frozen=True)
class ReadRecord:
    """How a file was when the session last read it (or wrote it), and when that was."""

    read_ns: int
    mtime_ns: int
    size: int
    ctime_ns: int = 0
    inode: int = 0
    #: Digest of the bytes read, when the read saw the whole file (None while the tracker keeps
    #: those bytes themselves: it is made when they are dropped, or the records are saved).
    digest: str | None = None

    def same_stat(self, st: os.stat_result) -> bool:
        return (st.st_mtime_ns, st.st_size, st.st_ctime_ns, st.st_ino) == (
            self.mtime_ns,
            self.size,
            self.ctime_ns,
            self.inode,
        )


@dataclass(frozen=True)
class ReadState:
    """How a session saw a file it is about to change: ``absent`` (no file), ``unread``,
    ``unchanged`` since the read, or ``changed`` — then ``base`` holds the bytes as read when
    they are kept (:data:`MAX_SNAPSHOT_BYTES`), for re-anchoring."""

    kind: Literal["absent", "unread", "unchanged", "changed"]
    base: bytes | None = None


def _iso(ns: int) -> str:
    import datetime as dt  # only for messages about a changed file: not every call pays for it

    return dt.datetime.fromtimestamp(ns / 1e9, tz=dt.UTC).isoformat(timespec="microseconds")


class FileTracker:
    """Per-session record of which files were read (or written by us) and in what state."""

    def __init__(self, snapshot_budget: int = MAX_SNAPSHOTS_TOTAL_BYTES) -> None:
        self._records: dict[str, ReadRecord] = {}
        #: The bytes as last read, for files read whole (in memory only; not in to_json), least
        #: recently used first; together at most ``snapshot_budget`` bytes.
        self._snapshots: OrderedDict[str, bytes] = OrderedDict()
        self._snapshot_budget = snapshot_budget
        self._snapshot_bytes = 0
        #: Records whose digest is not computed yet: their snapshot is kept, and while it is, the
        #: bytes themselves decide (no digest needed). The digest is made when the snapshot is
        #: dropped or the records are saved — an edit does not hash the file it just wrote.
        self._undigested: set[str] = set()

    @staticmethod
    def _key(path: Path) -> str:
        try:
            return str(real_path(path))
        except ToolError:  # a path being swapped mid-resolution: its plain form is the best key
            return os.path.abspath(path)

    def record_read(self, path: Path, data: bytes | None = None, st: os.stat_result | None = None) -> None:
        """Remember ``path`` as seen now: after view, and after our own writes.

        ``data`` is the whole content when the caller has it; ``st`` the stat taken with it.
        """
        st = st or os.stat(path)
        key = self._key(path)
        kept = data if data is not None and len(data) <= MAX_SNAPSHOT_BYTES else None
        digest = content_digest(data) if data is not None and kept is None else None
        self._records[key] = ReadRecord(time.time_ns(), st.st_mtime_ns, st.st_size, st.st_ctime_ns, st.st_ino, digest)
        self._drop_snapshot(key)
        self._undigested.discard(key)
        if kept is not None:
            self._snapshots[key] = kept
            self._snapshot_bytes += len(kept)
            self._undigested.add(key)
            while self._snapshot_bytes > self._snapshot_budget:
                oldest, data = self._snapshots.popitem(last=False)
                self._snapshot_bytes -= len(data)
                self._digest(oldest, data)

    def _drop_snapshot(self, key: str) -> None:
        data = self._snapshots.pop(key, None)
        if data is not None:
            self._snapshot_bytes -= len(data)

    @property
    def snapshot_bytes(self) -> int:
        """The bytes of file contents kept now (at most the budget)."""
        return self._snapshot_bytes

    def _digest(self, key: str, data: bytes) -> None:
        """Give ``key``'s record the digest of ``data`` (its snapshot, about to be dropped)."""
        if key in self._undigested:
            self._undigested.discard(key)
            self._records[key] = replace(self._records[key], digest=content_digest(data))

    def forget(self, path: Path) -> None:
        key = self._key(path)
        self._records.pop(key, None)
        self._drop_snapshot(key)
        self._undigested.discard(key)

    def last_read(self, path: Path) -> ReadRecord | None:
        return self._records.get(self._key(path))

    def check_unchanged(self, path: Path, current: bytes | None = None, st: os.stat_result | None = None) -> None:
        """Raise unless ``path`` was read in this session and has not changed since.

        ``current`` is the file's content now and ``st`` the stat taken with it, when the caller
        has read it (a snapshot): then a recorded digest decides. Without either, the stat
        signature does.
        """
        state = self.read_state(path, current, st)
        if state.kind == "unread":
            raise NotRead(str(path))
        if state.kind == "changed":
            raise self.changed_error(path, st)

    def read_state(self, path: Path, current: bytes | None = None, st: os.stat_result | None = None) -> ReadState:
        """How this session saw ``path`` (whose content is ``current`` and stat ``st`` now, when
        the caller has read it): not read, unchanged since the read, or changed — with the bytes
        as read when they are kept (the base an edit planned on, for re-anchoring)."""
        key = self._key(path)
        record = self._records.get(key)
        if record is None:
            return ReadState("unread")
        snapshot = self._snapshots.get(key) if current is not None else None
        if snapshot is not None:
            self._snapshots.move_to_end(key)  # used: the last to be dropped
            unchanged = snapshot == current  # the bytes as read are at hand: no digest needed
        elif record.digest is not None and current is not None:
            unchanged = content_digest(current) == record.digest
        else:
            unchanged = record.same_stat(st or os.stat(path))
        return ReadState("unchanged") if unchanged else ReadState("changed", snapshot)

    def changed_error(self, path: Path, st: os.stat_result | None = None) -> ChangedSinceRead:
        """The refusal of a change to ``path``, which changed since this session read it."""
        record = self.last_read(path)
        if record is None:
            return ChangedSinceRead(str(path))
        st = st or os.stat(path)
        return ChangedSinceRead(str(path), f"mod time {_iso(st.st_mtime_ns)}, last read {_iso(record.read_ns)}")

    def to_json(self) -> dict[str, Any]:
        for key in list(self._undigested):
            self._digest(key, self._snapshots[key])
        return {path: asdict(record) for path, record in self._records.items()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FileTracker:
        tracker = cls()
        for path, record in data.items():
            try:
                digest = record.get("digest")
                tracker._records[path] = ReadRecord(
                    int(record["read_ns"]),
                    int(record["mtime_ns"]),
                    int(record["size"]),
                    int(record.get("ctime_ns", 0)),
                    int(record.get("inode", 0)),
                    digest if isinstance(digest, str) else None,
                )
            except (AttributeError, KeyError, TypeError, ValueError):
                continue  # a damaged entry only means that file must be read again
        return tracker
