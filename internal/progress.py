"""Streaming a tool's output to its progress callback: every byte, in order, at a bounded rate.

Output arrives in arbitrary chunks, sometimes thousands a second. :class:`OutputProgress`
coalesces them: at most one callback per ``PROGRESS_INTERVAL_S`` (or sooner once
``MAX_PENDING_BYTES`` are waiting, which bounds memory), decoded incrementally so a character
split across chunks is never garbled, and :meth:`OutputProgress.close` always sends what is left.
"""

from __future__ import annotations

import codecs
import time
from collections.abc import Callable
from typing import Any

#: Progress callbacks for one stream are at least this far apart...
PROGRESS_INTERVAL_S = 0.1
#: ... unless this much output is waiting.
MAX_PENDING_BYTES = 1024 * 1024

Progress = Callable[[str, dict[str, Any]], None]


class OutputProgress:
    """Feeds ``progress("output", {"tool": tool, "text": ...})`` from a byte stream."""

    def __init__(self, progress: Progress, tool: str, clock: Callable[[], float] = time.monotonic) -> None:
        self._progress = progress
        self._tool = tool
        self._clock = clock
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = bytearray()
        self._last = float("-inf")  # the first output goes out at once

    def write(self, chunk: bytes) -> None:
        self._pending += chunk
        now = self._clock()
        if now - self._last >= PROGRESS_INTERVAL_S or len(self._pending) >= MAX_PENDING_BYTES:
            self._last = now
            self._send(final=False)

    def close(self) -> None:
        """Send whatever is still pending (also a partial character, as U+FFFD)."""
        self._send(final=True)

    def _send(self, *, final: bool) -> None:
        data = bytes(self._pending)
        self._pending.clear()
        text = self._decoder.decode(data, final=final)
        if text:
            self._progress("output", {"tool": self._tool, "text": text})
