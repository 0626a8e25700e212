"""What every whole-line tier shares: the searched text, spans, and the window search.

The file is never split into lines as a whole. Every whole-line tier compares lines under a key
that only drops or collapses whitespace (``rstrip``, ``strip``, collapsed runs), so a matching
file line always contains each whitespace-free token of the old line literally. The window
search therefore looks for the rarest such token with ``str.find`` (C speed) and checks only
the windows around its occurrences: the cost follows the candidates, not the file size.
"""

from __future__ import annotations

import operator
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

#: How many of old_string's longest tokens are counted in the file to pick the rarest anchor.
MAX_ANCHOR_TOKENS = 16
#: The cancel hook is called once per this many candidate windows.
CANCEL_EVERY = 1024
#: The file's indentation unit is inferred from at most this many of its first lines.
UNIT_SAMPLE_LINES = 20_000


@dataclass(frozen=True)
class Replacement:
    start: int
    end: int
    #: ``None``: old_string matched here, but new_string could not be re-indented to fit.
    text: str | None
    #: Offsets in ``text`` where the mid-line rule inserted indentation (continuation.py).
    indented: tuple[int, ...] = ()


class NoMatch(Exception):
    """Raised by a window check: these lines are not a match."""


@dataclass(frozen=True)
class MatchResult:
    tier: str
    replacements: list[Replacement]


def _never() -> None:
    return None


class Text:
    """The LF-normalised text being searched, shared by every tier of one search.

    ``cancel`` is called between candidates and may raise to stop a long search.
    """

    def __init__(self, text: str, cancel: Callable[[], None] = _never) -> None:
        self.text = text
        self.cancel = cancel
        self._unit: str | None = None

    def line_start(self, offset: int) -> int:
        return self.text.rfind("\n", 0, offset) + 1

    def line_end(self, start: int) -> int:
        """Offset of the newline ending the line at ``start`` (or the text's length)."""
        end = self.text.find("\n", start)
        return len(self.text) if end < 0 else end

    def line_number(self, offset: int) -> int:
        """1-based line of ``offset``."""
        return self.text.count("\n", 0, offset) + 1

    def line_numbers(self, offsets: list[int]) -> list[int]:
        """1-based lines of increasing ``offsets``, counted incrementally (one pass in all)."""
        out, line, previous = [], 1, 0
        for offset in offsets:
            line += self.text.count("\n", previous, offset)
            previous = offset
            out.append(line)
        return out

    def window(self, anchor_start: int, before: int, count: int) -> tuple[int, list[str]] | None:
        """The ``count`` lines starting ``before`` lines above the line at ``anchor_start``, and
        the offset of the first; None when the text has too few lines there."""
        start = anchor_start
        for _ in range(before):
            if start == 0:
                return None
            start = self.line_start(start - 1)
        lines: list[str] = []
        at = start
        for _ in range(count):
            if at > len(self.text):
                return None
            end = self.line_end(at)
            lines.append(self.text[at:end])
            at = end + 1
        return start, lines

    @property
    def indent_unit(self) -> str:
        """The file's indentation step (see :func:`indent_unit`), computed once."""
        if self._unit is None:
            self._unit = file_indent_unit(self.text)
        return self._unit


def split_old(old: str) -> tuple[list[str], bool]:
    """old_string as lines, and whether it ended with a newline."""
    ends_nl = old.endswith("\n")
    lines = (old[:-1] if ends_nl else old).split("\n")
    return lines, ends_nl


LineKey = Callable[[str], str]
#: Given the window's file lines and the offset of its first line: the replacement text, None
#: when old_string matched but new_string cannot be placed there, or NoMatch to veto the window.
Accept = Callable[[list[str], int], str | None]


def _anchor(f: Text, old_lines: list[str], key: LineKey) -> tuple[int, str] | None:
    """(index in old_lines, token): the rarest whitespace-free token of a non-blank key line."""
    tokens = sorted(
        ((len(token), i, token) for i, line in enumerate(old_lines) if key(line) for token in line.split()),
        reverse=True,
    )[:MAX_ANCHOR_TOKENS]
    if not tokens:
        return None
    # The rarest, the longest among equally rare (the first of full ties). The tokens come
    # longest first, so a later one wins only by being strictly rarer: it is counted only up to
    # the best count so far (a rare first token makes the others cost a find or two each).
    best = tokens[0]
    best_count = f.text.count(best[2])
    for token in tokens[1:]:
        if best_count == 0:
            break
        count = _count_below(f.text, token[2], best_count)
        if count is not None:
            best, best_count = token, count
    return best[1], best[2]


#: Above this many occurrences, a capped count is one str.count rather than a loop of finds.
_FIND_LOOP_MAX = 32


def _count_below(text: str, token: str, cap: int) -> int | None:
    """How many times ``token`` occurs in ``text`` (non-overlapping, as str.count counts), when
    fewer than ``cap``; None when it occurs ``cap`` times or more."""
    if cap > _FIND_LOOP_MAX:
        count = text.count(token)
        return count if count < cap else None
    count, at = 0, text.find(token)
    while at >= 0:
        count += 1
        if count >= cap:
            return None
        at = text.find(token, at + len(token))
    return count


def _anchor_lines(f: Text, token: str) -> Iterator[int]:
    """Start offsets of the lines containing ``token``, in order, each once."""
    at = f.text.find(token)
    while at >= 0:
        start = f.line_start(at)
        yield start
        at = f.text.find(token, f.line_end(start))


def window_matches(
    f: Text, old_lines: list[str], key: LineKey, accept: Accept, *, ends_nl: bool
) -> list[tuple[int, int, str | None]]:
    """``(start, end, replacement)`` of every window of file lines equal to ``old_lines`` under
    ``key`` that ``accept`` takes. Windows do not overlap.

    A window that matches but whose replacement cannot be placed still counts (text None), so it
    can never hide an ambiguity. When old_string ends with a newline, so must the window.
    """
    found = _anchor(f, old_lines, key)
    if found is None:
        return []
    anchor, token = found
    wanted = [key(line) for line in old_lines]
    count = len(old_lines)
    out: list[tuple[int, int, str | None]] = []
    taken_until = 0  # windows may not start before the end of the previous match
    for checked, anchor_start in enumerate(_anchor_lines(f, token)):
        if checked % CANCEL_EVERY == 0:
            f.cancel()
        window = f.window(anchor_start, anchor, count)
        if window is None:
            continue
        start, lines = window
        if start < taken_until or any(key(line) != w for line, w in zip(lines, wanted, strict=True)):
            continue
        end = start + sum(len(line) + 1 for line in lines) - 1
        if ends_nl:
            if end >= len(f.text):
                continue
            end += 1
        try:
            text = accept(lines, start)
        except NoMatch:
            continue
        out.append((start, end, text))
        taken_until = end
    return out


def to_replacements(found: list[tuple[int, int, str | None]]) -> list[Replacement]:
    return [Replacement(start, end, text) for start, end, text in found]


def indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def indent_unit(lines: list[str]) -> str:
    """The indentation step of ``lines``: a tab when most indented lines start with one, else
    the most common increase of space indentation between consecutive non-blank lines (4 when
    there is none). A most-common step is robust to continuation lines aligned at odd columns,
    which would ruin a GCD."""
    tabs = spaces = 0
    steps: Counter[int] = Counter()
    previous = 0
    for line in lines:
        if not line.strip():
            continue
        ind = indent_of(line)
        if ind.startswith("\t"):
            tabs += 1
            continue
        if ind:
            spaces += 1
        width = len(ind)
        if width > previous:
            steps[width - previous] += 1
        previous = width
    if tabs > spaces:
        return "\t"
    if not steps:
        return "    "
    best = max(steps.items(), key=lambda kv: (kv[1], -kv[0]))[0]
    return " " * best


#: Non-blank lines (after a newline): the indentation of those not led by a tab, and the
#: lines led by one (for :func:`file_indent_unit`).
_SPACE_LED = re.compile(r"\n((?: [ \t]*)?)(?!\t)(?=\S|[^\n]*\S)")
_TAB_LED = re.compile(r"\n\t(?=[ \t]*\S|[^\n]*\S)")


def file_indent_unit(text: str) -> str:
    """:func:`indent_unit` of the file's first UNIT_SAMPLE_LINES lines, the same answer found
    without a Python loop over the lines (that loop was most of a fuzzy edit's cost in a
    10k-line file): regex scans find the indentations, and the steps are counted in C."""
    if text.count("\n") >= UNIT_SAMPLE_LINES:
        text = "\n".join(text.split("\n", UNIT_SAMPLE_LINES)[:UNIT_SAMPLE_LINES])
    text = "\n" + text  # every line starts after a newline
    widths = list(map(len, _SPACE_LED.findall(text)))  # a tab-led line leaves the previous width
    tabs, spaces = len(_TAB_LED.findall(text)), len(widths) - widths.count(0)
    if tabs > spaces:
        return "\t"
    # Each width less the one before it (0 before the first), counted: the positive ones are the steps.
    rises: Counter[int] = Counter(map(operator.sub, widths, [0, *widths]))
    steps = {rise: times for rise, times in rises.items() if rise > 0}
    if not steps:
        return "    "
    return " " * max(steps.items(), key=lambda kv: (kv[1], -kv[0]))[0]
