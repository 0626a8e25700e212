"""The CLI's progress display: what a long call is doing, on stderr, while stderr is a terminal.

A call's progress callbacks — bash's output as it comes, fetch's bytes, waits for the language
servers, a function tool's steps — are shown while it runs; the result still goes to stdout
when the call ends. When stderr is not a terminal (a pipe, a file: a script or an agent reading
the CLI) nothing is shown, so their bytes stay as they were.
"""

from __future__ import annotations

import time
from typing import Any, TextIO

#: Command output shown live is dimmed, so the result printed after it stands apart.
DIM, RESET = "\x1b[2m", "\x1b[0m"
#: Erases the current terminal line (a status line about to be replaced).
CLEAR_LINE = "\r\x1b[K"
#: A status line (bytes downloaded) is redrawn at most this often.
STATUS_INTERVAL_S = 0.1


def terminal_progress(stream: TextIO) -> TerminalProgress | None:
    """A display on ``stream`` when it is a terminal; None otherwise (nothing is shown)."""
    try:
        return TerminalProgress(stream) if stream.isatty() else None
    except ValueError:  # a closed stream
        return None


class TerminalProgress:
    """Renders progress callbacks (``(kind, data)``, see contract.Progress) on a terminal.

    ``output`` text is written as it comes (dimmed); ``download`` is one status line redrawn in
    place; anything else (``diagnostics``, a function tool's ``progress``) is a line of its own.
    :meth:`finish` ends what is on screen before the result is printed.
    """

    def __init__(self, stream: TextIO, clock: Any = time.monotonic) -> None:
        self._stream = stream
        self._clock = clock
        self._mid_line = False  # output written without its newline yet
        self._status = False  # a status line is on screen
        self._last_status = float("-inf")

    def __call__(self, kind: str, data: dict[str, Any]) -> None:
        try:
            if kind == "output":
                self._output(str(data.get("text", "")))
            elif kind == "download":
                self._download(data)
            else:
                self._line(str(data.get("text") or kind), str(data.get("tool") or ""))
            self._stream.flush()
        except (OSError, ValueError):  # the terminal went away: the call goes on regardless
            pass

    def _output(self, text: str) -> None:
        if not text:
            return
        self._clear_status()
        self._stream.write(f"{DIM}{text}{RESET}")
        self._mid_line = not text.endswith("\n")

    def _download(self, data: dict[str, Any]) -> None:
        size, total, done = data.get("bytes"), data.get("total"), data.get("done") is True
        now = self._clock()
        if not done and now - self._last_status < STATUS_INTERVAL_S:
            return
        self._last_status = now
        self._end_output_line()
        shown = f"{data.get('tool') or 'fetch'}: {_human(size)} downloaded"
        if isinstance(total, int):
            shown += f" of {_human(total)}"
        self._stream.write(CLEAR_LINE + shown)
        self._status = True
        if done:
            self._stream.write("\n")
            self._status = False

    def _line(self, text: str, tool: str) -> None:
        self._clear_status()
        self._end_output_line()
        self._stream.write(f"{DIM}[{tool}] {text}{RESET}\n" if tool else f"{DIM}{text}{RESET}\n")

    def finish(self) -> None:
        """End the call's display: the status line cleared, a partial output line ended."""
        try:
            self._clear_status()
            self._end_output_line()
            self._stream.flush()
        except (OSError, ValueError):
            pass

    def _clear_status(self) -> None:
        if self._status:
            self._stream.write(CLEAR_LINE)
            self._status = False

    def _end_output_line(self) -> None:
        if self._mid_line:
            self._stream.write("\n")
            self._mid_line = False


def _human(size: object) -> str:
    if not isinstance(size, int):
        return "?"
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KiB"
    return f"{size / (1024 * 1024):.1f} MiB"
