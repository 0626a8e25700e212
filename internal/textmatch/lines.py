"""What every whole-line tier shares: spans, the file split into lines, and the window search."""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Replacement:
    start: int
    end: int
    #: ``None``: old_string matched here, but new_string could not be re-indented to fit.
    text: str | None


class NoMatch(Exception):
    """Raised by a window check: these lines are not a match."""


@dataclass(frozen=True)
class MatchResult:
    tier: str
    replacements: list[Replacement]


def line_of(starts: list[int], offset: int) -> int:
    return bisect.bisect_right(starts, offset)


def line_starts(text: str) -> list[int]:
    starts = [0]
    i = text.find("\n")
    while i >= 0:
        starts.append(i + 1)
        i = text.find("\n", i + 1)
    return starts



@dataclass(frozen=True)
class Lines:
    """The file split into lines with offsets, built once per search."""

    text: str
    lines: list[str]
    starts: list[int]

    @classmethod
    def of(cls, text: str) -> Lines:
        lines = text.split("\n")
        return cls(text, lines, line_starts(text))

    def span(self, first: int, count: int, with_newline: bool) -> tuple[int, int]:
        last = first + count - 1
        end = self.starts[last] + len(self.lines[last])
        if with_newline and end < len(self.text):
            end += 1
        return self.starts[first], end


def split_old(old: str) -> tuple[list[str], bool]:
    """old_string as lines, and whether it ended with a newline."""
    ends_nl = old.endswith("\n")
    lines = (old[:-1] if ends_nl else old).split("\n")
    return lines, ends_nl


LineKey = Callable[[str], str]


def window_matches(
    f: Lines, old_lines: list[str], key: LineKey, accept: Callable[[int], str | None], *, ends_nl: bool
) -> list[tuple[int, str | None]]:
    """Windows of ``len(old_lines)`` file lines whose lines equal ``old_lines`` under ``key``.

    ``accept(first_line)`` may still veto a window (raising NoMatch) or gives its replacement
    (None when the window matches but new_string cannot be placed there: that still counts as
    a match, so it can never hide an ambiguity). Windows do not overlap.
    """
    wanted = [key(line) for line in old_lines]
    count = len(old_lines)
    anchor = next((i for i, w in enumerate(wanted) if w), None)
    if anchor is None:
        return []
    keys = [key(line) for line in f.lines]
    out: list[tuple[int, str | None]] = []
    first = 0
    # When old_string ends with a newline, its last line must be followed by one: the text after
    # the file's final newline (the last element of the split) can never end the window.
    limit = len(f.lines) - count - (1 if ends_nl else 0)
    while first <= limit:
        if keys[first + anchor] == wanted[anchor] and keys[first : first + count] == wanted:
            try:
                out.append((first, accept(first)))
            except NoMatch:
                first += 1
                continue
            first += count
            continue
        first += 1
    return out


def to_replacements(f: Lines, found: list[tuple[int, str | None]], count: int, ends_nl: bool) -> list[Replacement]:
    out = []
    for first, text in found:
        start, end = f.span(first, count, ends_nl)
        out.append(Replacement(start, end, text))
    return out


def indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]
