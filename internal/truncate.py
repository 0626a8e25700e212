"""The one place output is bounded: UTF-8-safe cuts, head+tail elision, and spill files.

Every tool's text for the model passes through here, so no tool cuts inside a UTF-8 sequence
and every cut tells the model how to get the rest.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Spill files older than this are deleted when a new one is written in the same directory.
SPILL_MAX_AGE_S = 24 * 3600
#: At most this many spill files are kept per session; the oldest go first.
SPILL_MAX_FILES = 100


def cut_utf8(text: str, max_bytes: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 encoding fits in ``max_bytes``."""
    encoded = text.encode("utf-8", "surrogatepass")
    if len(encoded) <= max_bytes:
        return text
    return encoded[:max_bytes].decode("utf-8", "ignore")


def shorten_line(line: str, max_chars: int) -> str:
    return line if len(line) <= max_chars else line[:max_chars] + "..."


@dataclass(frozen=True)
class Bounded:
    text: str
    truncated: bool
    #: Lines dropped from the middle (head+tail) or the end (head only).
    omitted_lines: int = 0


def head_tail(text: str, max_chars: int) -> Bounded:
    """Keep the first and last halves of the budget, eliding whole lines in between.

    The marker reads ``... [N lines truncated] ...``. Cuts fall on line boundaries when there
    are any, otherwise on character boundaries (never inside a character).
    """
    if len(text) <= max_chars:
        return Bounded(text, False)
    half = max_chars // 2
    head = text[:half]
    tail = text[len(text) - half :]
    if "\n" in head:
        head = head[: head.rfind("\n") + 1]
    if "\n" in tail:
        tail = tail[tail.find("\n") + 1 :]
    middle = text[len(head) : len(text) - len(tail)]
    omitted = middle.count("\n") + (0 if middle.endswith("\n") or not middle else 1)
    return Bounded(f"{head}\n... [{omitted} lines truncated] ...\n\n{tail}", True, omitted)


def spill_dir(state_dir: Path, session_id: str) -> Path:
    return state_dir / "sessions" / session_id / "output"


def new_spill_path(state_dir: Path, session_id: str, tool: str) -> Path:
    """A fresh file for a tool's full output; old spill files are pruned first."""
    directory = spill_dir(state_dir, session_id)
    directory.mkdir(parents=True, exist_ok=True)
    prune_spill_files(directory)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return directory / f"{tool}-{stamp}-{uuid.uuid4().hex[:8]}.txt"


def prune_spill_files(directory: Path) -> None:
    """Delete spill files older than a day, then all but the newest SPILL_MAX_FILES."""
    try:
        entries = [(e.stat().st_mtime, Path(e.path)) for e in os.scandir(directory) if e.is_file()]
    except OSError:
        return
    now = time.time()
    entries.sort(reverse=True)
    for index, (mtime, path) in enumerate(entries):
        if now - mtime > SPILL_MAX_AGE_S or index >= SPILL_MAX_FILES:
            path.unlink(missing_ok=True)


class SpillingBuffer:
    """Collects a stream of bytes with bounded memory; spills everything to a file once large.

    Until ``max_chars`` worth of bytes arrive, everything is kept in memory. Past that, the whole
    stream goes to ``spill_path`` (written as it arrives) and memory keeps only a head and a
    tail, enough to render :func:`head_tail` text. Used by bash and fetch.
    """

    def __init__(self, max_chars: int, spill_path: Callable[[], Path]) -> None:
        self.max_chars = max_chars
        self._spill_path = spill_path
        self._memory = bytearray()
        # UTF-8 needs up to 4 bytes a character; keep that much of each end.
        self._edge = 4 * max_chars // 2 + 4
        self._head = b""
        self._tail = bytearray()
        self._file: Any = None
        self.path: Path | None = None
        self.total_bytes = 0
        self.newlines = 0

    def write(self, chunk: bytes) -> None:
        self.total_bytes += len(chunk)
        self.newlines += chunk.count(b"\n")
        if self._file is None:
            self._memory += chunk
            if len(self._memory) > 4 * self.max_chars:
                self._start_spilling()
            return
        self._file.write(chunk)
        self._tail += chunk
        if len(self._tail) > 2 * self._edge:
            del self._tail[: len(self._tail) - self._edge]

    def _start_spilling(self) -> None:
        self.path = self._spill_path()
        self._file = open(self.path, "wb")  # noqa: SIM115 - closed in close()
        self._file.write(self._memory)
        self._head = bytes(self._memory[: self._edge])
        self._tail = bytearray(self._memory[-self._edge :])
        self._memory = bytearray()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()

    @property
    def spilled(self) -> bool:
        return self.path is not None

    def render(self) -> Bounded:
        """The text for the model: whole, or head + ``... [N lines truncated] ...`` + tail."""
        if not self.spilled:
            text = self._memory.decode("utf-8", "replace")
            if len(text) <= self.max_chars:
                return Bounded(text, False)
            self._start_spilling()  # too long to show whole: the full text goes to a file too
            self.close()
            return head_tail(text, self.max_chars)
        half = self.max_chars // 2
        head = self._head.decode("utf-8", "ignore")[:half]
        tail = bytes(self._tail).decode("utf-8", "ignore")
        tail = tail[len(tail) - half :]
        if "\n" in head:
            head = head[: head.rfind("\n") + 1]
        if "\n" in tail[:-1]:
            tail = tail[tail.find("\n") + 1 :]
        omitted = max(self.newlines - head.count("\n") - tail.count("\n"), 0)
        return Bounded(f"{head}\n... [{omitted} lines truncated] ...\n\n{tail}", True, omitted)
