"""The one place output is bounded: UTF-8-safe cuts, head+tail elision, and spill files.

Every tool's text for the model passes through here, so no tool cuts inside a UTF-8 sequence
and every cut tells the model how to get the rest.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .state import StateDir, open_private

#: Control sequences terminal programs print (CSI: colours, cursor moves; OSC: titles, links;
#: two-byte escapes): not for the model. Shared by tty jobs and notebook outputs.
ANSI_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")


def strip_ansi(text: str) -> str:
    return ANSI_ESCAPE.sub("", text)


#: Spill files (full outputs of bash and fetch) live in one directory of the state dir, shared by
#: every session, under one budget: older than a day, past the newest SPILL_BUDGET_FILES, or past
#: SPILL_BUDGET_BYTES in all, the oldest are deleted whenever a new one is started.
SPILL_MAX_AGE_S = 24 * 3600
SPILL_BUDGET_FILES = 500
SPILL_BUDGET_BYTES = 500 * 1024 * 1024
#: One spill file keeps at most this much: the first half of the output and the last half.
SPILL_FILE_MAX_BYTES = 100 * 1024 * 1024
COPY_CHUNK = 1024 * 1024


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
    return Bounded(f"{head}\n... [{omitted} lines truncated] ...\n\n{tail}", True)


def new_spill_path(state: StateDir, session_id: str, tool: str) -> Path:
    """A fresh path for a tool's full output; the spill budget is enforced first."""
    directory = state.directory("output")
    prune_spill_files(directory)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return directory / f"{tool}-{stamp}-{session_id[:12]}-{os.urandom(4).hex()}.txt"


def prune_spill_files(directory: Path, now: float | None = None) -> None:
    """Delete spill files past the age limit, then the oldest past the count and byte budgets."""
    try:
        entries = [(e.stat(), Path(e.path)) for e in os.scandir(directory) if e.is_file(follow_symlinks=False)]
    except OSError:
        return
    now = time.time() if now is None else now
    entries.sort(key=lambda entry: entry[0].st_mtime, reverse=True)
    used = 0
    for index, (st, path) in enumerate(entries):
        used += st.st_size
        if now - st.st_mtime > SPILL_MAX_AGE_S or index >= SPILL_BUDGET_FILES - 1 or used > SPILL_BUDGET_BYTES:
            with contextlib.suppress(OSError):
                path.unlink()


class _CappedFile:
    """A spill file that keeps the first and last ``cap // 2`` bytes of an unbounded stream.

    The head is written in order; past it, bytes go round a ring of the same size in a sibling
    file, and :meth:`close` appends the ring, oldest first, after a marker saying how much was
    dropped. Disk use never passes ``cap`` (plus the marker); memory stays at one copy chunk.
    """

    def __init__(self, path: Path, cap: int) -> None:
        self.path = path
        self._half = max(cap // 2, 1)
        self._fd = open_private(path)
        self._written = 0
        self._ring_fd: int | None = None
        self._ring_total = 0

    def write(self, data: bytes) -> None:
        room = self._half - self._written
        if room > 0:
            head, data = data[:room], data[room:]
            _write_all(self._fd, head)
            self._written += len(head)
        if not data:
            return
        if self._ring_fd is None:
            ring = self.path.with_name(self.path.name + ".ring")
            self._ring_fd = open_private(ring, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
        if len(data) > self._half:  # only the newest ring-full of this chunk can survive
            self._ring_total += len(data) - self._half
            data = data[-self._half :]
        while data:
            at = self._ring_total % self._half
            piece = data[: self._half - at]
            os.pwrite(self._ring_fd, piece, at)
            self._ring_total += len(piece)
            data = data[len(piece) :]

    def close(self) -> None:
        try:
            if self._ring_fd is not None:
                self._append_ring()
        finally:
            os.close(self._fd)

    def _append_ring(self) -> None:
        assert self._ring_fd is not None
        kept = min(self._ring_total, self._half)
        dropped = self._ring_total - kept
        if dropped:
            marker = f"\n... [{dropped} bytes omitted: a spill file keeps the first and last {self._half} bytes] ...\n"
            _write_all(self._fd, marker.encode())
        start = self._ring_total % self._half
        # Oldest first: once the ring wrapped, from the write position to its end, then the start.
        segments = [(start, self._half - start), (0, start)] if dropped else [(0, kept)]
        for offset, length in segments:
            while length > 0:
                chunk = os.pread(self._ring_fd, min(COPY_CHUNK, length), offset)
                if not chunk:
                    break
                _write_all(self._fd, chunk)
                offset += len(chunk)
                length -= len(chunk)
        os.close(self._ring_fd)
        with contextlib.suppress(OSError):
            os.unlink(self.path.with_name(self.path.name + ".ring"))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class SpillingBuffer:
    """Collects a stream of bytes with bounded memory; spills everything to a file once large.

    Until ``max_chars`` worth of bytes arrive, everything is kept in memory. Past that, the
    stream goes to a spill file (written as it arrives, capped at ``file_cap`` bytes: head and
    tail kept) and memory keeps only a head and a tail, enough to render :func:`head_tail` text.
    Used by bash, fetch and custom tools.
    """

    def __init__(self, max_chars: int, spill_path: Callable[[], Path], file_cap: int = SPILL_FILE_MAX_BYTES) -> None:
        self.max_chars = max_chars
        self._spill_path = spill_path
        self._file_cap = file_cap
        self._memory = bytearray()
        # UTF-8 needs up to 4 bytes a character; keep that much of each end.
        self._edge = 4 * max_chars // 2 + 4
        self._head = b""
        self._tail = bytearray()
        self._file: _CappedFile | None = None
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
        self._file = _CappedFile(self.path, self._file_cap)
        self._file.write(bytes(self._memory))
        self._head = bytes(self._memory[: self._edge])
        self._tail = bytearray(self._memory[-self._edge :])
        self._memory = bytearray()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

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
        return Bounded(f"{head}\n... [{omitted} lines truncated] ...\n\n{tail}", True)


#: The documented token estimate for caps expressed in tokens (``max_output_tokens``): UTF-8
#: bytes / 4, the usual average for English text and code. No tokenizer is loaded for it.
BYTES_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    return -(-len(text.encode("utf-8", "surrogatepass")) // BYTES_PER_TOKEN)


def cap_tokens(text: str, max_tokens: int) -> Bounded:
    """``text`` within about ``max_tokens`` tokens (see BYTES_PER_TOKEN): head and tail kept,
    whole lines elided in the middle, never a character split."""
    size = len(text.encode("utf-8", "surrogatepass"))
    budget = max_tokens * BYTES_PER_TOKEN
    if size <= budget:
        return Bounded(text, False)
    # head_tail counts characters: scale the byte budget by this text's characters per byte.
    return head_tail(text, max(1, budget * len(text) // size))
