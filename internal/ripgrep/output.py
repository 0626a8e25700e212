"""rg's ``--null`` output, parsed as it streams: file listings (``--files``, ``-l``), matching
and context lines, and per-file counts. Paths end at their NUL, so ``:``, ``|`` and newlines in
names never misparse, and a line is decoded only once whole, so no UTF-8 sequence is split.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from .query import Match, SearchResult, fs_path


def mtime(path: str) -> float:
    """A file's modification time; 0 when it cannot be had (gone meanwhile)."""
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


#: ``path NUL number SEP text LF``: a path ends at its NUL (it may hold newlines, ``:`` or
#: ``|``), the number at the first non-digit; SEP is ``|`` for a match line, ``-`` for context.
_LINE_RECORD = re.compile(rb"([^\0]*)\0(\d+)([|-])([^\n]*)\n")
#: ``path NUL count LF`` (``rg --count``).
_COUNT_RECORD = re.compile(rb"([^\0]*)\0(\d+)\n")


class OutputParser:
    """Incremental parser for ``--null`` output; ``limit`` records then it asks to stop.

    ``mode`` "files" reads NUL-terminated paths (``--files``, ``-l``); "search" reads
    ``path NUL number SEP text LF`` where SEP is ``|`` for a match line and ``-`` for a context
    line; "count" reads ``path NUL count LF`` (``-c``). Paths end at the first NUL (so ``:``,
    ``|`` and newlines in names never misparse), the number at the first non-digit, and a line
    is decoded only once whole, so no UTF-8 sequence is ever split. Context lines do not count
    towards ``limit``.
    """

    def __init__(
        self, mode: str, limit: int, with_mtimes: bool = False, on_path: Callable[[str], None] | None = None
    ) -> None:
        self.mode = mode
        self.limit = limit
        self.with_mtimes = with_mtimes
        self.on_path = on_path
        self.buffer = b""
        self.result = SearchResult()
        self.records = 0
        self._last_raw = b""
        self._last_path = ""

    def count(self) -> int:
        return self.records

    def feed(self, chunk: bytes) -> bool:
        """Consume ``chunk``; return False once ``limit`` records were collected."""
        self.buffer += chunk
        if self.mode == "files":
            # Whole records only (up to the last NUL), decoded at once: a NUL never falls inside
            # a UTF-8 sequence, so this is each path decoded on its own.
            complete, separator, self.buffer = self.buffer.rpartition(b"\0")
            records = fs_path(complete).split("\0") if separator else []
            files = self.result.files
            room = self.limit - len(files)
            new = records[:room]
            files.extend(new)
            self.records = len(files)
            if self.with_mtimes:  # stat now, while rg keeps enumerating on another core
                self.result.mtimes.update(zip(new, map(mtime, new), strict=True))
            return len(records) < room
        if self.mode == "count":
            return self._feed_counts()
        return self._feed_lines()

    def _feed_lines(self) -> bool:
        buffer, position = self.buffer, 0
        append, path_of, new_match = self.result.matches.append, self._path, tuple.__new__
        last_raw, path = self._last_raw, self._last_path
        try:
            for record in _LINE_RECORD.finditer(buffer):
                raw_path, number, separator, text = record.groups()
                is_match = separator == b"|"
                if is_match:
                    if self.records >= self.limit:
                        return False
                    self.records += 1
                position = record.end()
                if text[-1:] == b"\r":
                    text = text[:-1]
                if raw_path != last_raw:  # a file's lines come together: its path is decoded once
                    last_raw, path = raw_path, path_of(raw_path)
                # tuple.__new__ directly: Match(...) runs a Python-level __new__ per record.
                append(new_match(Match, (path, int(number), text.decode("utf-8", "replace"), not is_match)))
            return True
        finally:
            # One copy of the unparsed tail per chunk, not one per record.
            self.buffer = buffer[position:]

    def _feed_counts(self) -> bool:
        buffer, position = self.buffer, 0
        try:
            for record in _COUNT_RECORD.finditer(buffer):
                if self.records >= self.limit:
                    return False
                position = record.end()
                self.result.counts[self._path(record[1])] = int(record[2])
                self.records += 1
            return True
        finally:
            self.buffer = buffer[position:]

    def _path(self, raw: bytes) -> str:
        """Decoded once per run of records from the same file (rg prints a file's lines together)."""
        if raw != self._last_raw:
            self._last_raw, self._last_path = raw, fs_path(raw)
            if self.with_mtimes:  # stat now, while rg keeps searching on another core
                self.result.mtimes[self._last_path] = mtime(self._last_path)
            if self.on_path is not None:
                self.on_path(self._last_path)
        return self._last_path
