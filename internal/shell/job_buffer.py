"""A background job's output: the last :data:`JOB_RING_BYTES` in memory, from which reads are
deltas (never the same byte twice), and all of it in a spill file (under the spill budget of
truncate.py)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

from ..truncate import SPILL_FILE_MAX_BYTES, _CappedFile

#: Output kept in memory per job; older output is only in the job's spill file.
JOB_RING_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Delta:
    text: str
    #: Bytes that left the in-memory ring before they were read (they are in the spill file).
    skipped: int
    total_bytes: int


class OutputRing:
    """A job's output so far. Not locked on its own: the job holds its lock around every call,
    so that a read sees the output and the job's state as of one moment."""

    def __init__(self, spill_path: Path) -> None:
        self.total = 0
        self._ring = bytearray()
        self._ring_start = 0
        self._read = 0
        self._spill = _CappedFile(spill_path, SPILL_FILE_MAX_BYTES)

    def append(self, chunk: bytes) -> None:
        self._ring += chunk
        self.total += len(chunk)
        excess = len(self._ring) - JOB_RING_BYTES
        if excess > 0:
            del self._ring[:excess]
            self._ring_start += excess
        with contextlib.suppress(OSError):
            self._spill.write(chunk)

    def unread(self) -> int:
        return self.total - self._read

    def take(self, *, whole_characters: bool) -> tuple[bytes, int]:
        """What arrived since the last take, and how many bytes before it left the ring unread.
        ``whole_characters``: keep back a UTF-8 character that has not fully arrived."""
        start = max(self._read, self._ring_start)
        skipped = start - self._read
        data = bytes(self._ring[start - self._ring_start :])
        if whole_characters:
            data = data[: len(data) - _incomplete_utf8_tail(data)]
        self._read = start + len(data)
        return data, skipped

    def close(self) -> None:
        """Close the spill file (the output stays readable in memory)."""
        self._spill.close()


def _incomplete_utf8_tail(data: bytes) -> int:
    """How many bytes at the end start a UTF-8 character that has not fully arrived."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # a lead byte (or ASCII)
            need = 2 if byte & 0xE0 == 0xC0 else 3 if byte & 0xF0 == 0xE0 else 4 if byte & 0xF8 == 0xF0 else 1
            return back if need > back else 0
    return 0
