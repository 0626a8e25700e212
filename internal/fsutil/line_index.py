"""Reading a page of lines from a large file in O(offset + page) at memcmp speed, not per line.

Line starts are found by counting ``b"\\n"`` in large chunks (``bytes.count``/``find``), which
holds for every ASCII-compatible encoding (UTF-8, the single-byte code pages). A sparse index —
how many newlines precede each chunk boundary — is kept per (path, mtime, size) in the session,
so paging through a huge file does not rescan from the start each time.

Not handled here (the caller reads such files another way): UTF-16/32, where a newline is more
than one byte, and files that break lines with a lone ``\\r``.
"""

from __future__ import annotations

import bisect
import os
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

#: Bytes read per step; the index keeps one checkpoint per chunk.
CHUNK_BYTES = 1024 * 1024
#: Files whose index a session keeps (least recently used dropped first).
MAX_INDEXED_FILES = 16


@dataclass
class LineIndex:
    """``newlines[k]``: how many ``\\n`` bytes precede byte ``k * CHUNK_BYTES`` (after ``base``)."""

    base: int  # where line 0 starts (after a BOM)
    size: int
    newlines: list[int] = field(default_factory=lambda: [0])
    #: How many lines the file has, once a scan reached its end.
    total: int | None = None

    def _chunk_start(self, k: int) -> int:
        return self.base + k * CHUNK_BYTES

    def line_start(self, fd: int, line: int, check: Callable[[], None]) -> int | None:
        """Byte offset where 0-based ``line`` starts; None past the end of the file."""
        if line == 0:
            return self.base
        k = bisect.bisect_left(self.newlines, line) - 1  # last chunk with fewer than `line` before it
        k = max(k, 0)
        chunk = bytearray(CHUNK_BYTES)  # one buffer for the whole scan: no allocation per step
        while True:
            check()
            start = self._chunk_start(k)
            size = os.preadv(fd, [chunk], start)
            before = self.newlines[k]
            here = chunk.count(b"\n", 0, size)
            if before + here >= line:
                at = -1
                for _ in range(line - before):
                    at = chunk.find(b"\n", at + 1, size)
                return start + at + 1
            if size < CHUNK_BYTES:  # the end: fewer lines than asked for
                self.total = before + here + (1 if self._partial_last_line(fd) else 0)
                return None
            if k + 1 == len(self.newlines):
                self.newlines.append(before + here)
            k += 1


    def _partial_last_line(self, fd: int) -> bool:
        """Does the file end with a line that has no newline?"""
        return self.size > self.base and os.pread(fd, 1, self.size - 1) != b"\n"


@dataclass(frozen=True)
class PageLines:
    lines: list[bytes]
    #: Byte offset just after the last line returned.
    end: int
    #: The read reached the end of the file.
    at_eof: bool


def read_lines(fd: int, start: int, limit: int, max_bytes: int, max_line_bytes: int) -> PageLines:
    """Up to ``limit`` lines from byte ``start`` (without their ``\\n``/``\\r\\n``), stopping once
    ``max_bytes`` of line content were collected. Lines longer than ``max_line_bytes`` are kept
    cut (their rest skipped without being held in memory)."""
    lines: list[bytes] = []
    collected = 0
    at = start
    pending = b""
    skipping = False
    while len(lines) < limit and collected <= max_bytes:
        chunk = os.pread(fd, CHUNK_BYTES, at)
        if not chunk:
            if pending or skipping:
                lines.append(_strip_cr(pending))
            return PageLines(lines, at, True)
        cursor = 0
        while len(lines) < limit and collected <= max_bytes:
            newline = chunk.find(b"\n", cursor)
            if newline < 0:
                if not skipping:
                    pending += chunk[cursor : cursor + max_line_bytes - len(pending)]
                    skipping = len(pending) >= max_line_bytes
                break
            if not skipping:
                pending += chunk[cursor : min(newline, cursor + max_line_bytes - len(pending))]
            lines.append(_strip_cr(pending))
            collected += len(pending) + 1
            pending, skipping = b"", False
            cursor = newline + 1
        else:
            return PageLines(lines, at + cursor, False)
        at += len(chunk)
    return PageLines(lines, at, False)


def _strip_cr(line: bytes) -> bytes:
    return line[:-1] if line.endswith(b"\r") else line


class LineIndexCache:
    """A session's line indexes, by (path, mtime_ns, size): a changed file gets a fresh one."""

    def __init__(self) -> None:
        self._indexes: OrderedDict[tuple[str, int, int], LineIndex] = OrderedDict()

    def get(self, path: str, st: os.stat_result, base: int) -> LineIndex:
        key = (path, st.st_mtime_ns, st.st_size)
        index = self._indexes.get(key)
        if index is None:
            index = self._indexes[key] = LineIndex(base, st.st_size)
            while len(self._indexes) > MAX_INDEXED_FILES:
                self._indexes.popitem(last=False)
        self._indexes.move_to_end(key)
        return index
