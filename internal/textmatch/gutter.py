"""old_string copied from view with its line-number gutter (``NNNNNN|``) on all or some lines.

Tried only when no tier matched old_string as given. The numbers must follow each other line by
line (a line without the gutter takes the place between its neighbours: a model often drops the
first line's number, or a blank line's); they say on which line old_string starts. Without the
gutter, old_string must match (by any tier) exactly there — then the gutter is stripped from
old_string and from the lines of new_string that carry it, and the numbers have picked the place,
so matches elsewhere do not matter. When the gutter is recognised but does not fit (numbers that
jump, text that matches elsewhere or nowhere), the edit is refused saying so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import NotFoundInFile, not_found
from .lines import MatchResult, Text
from .tiers import find

#: view's line-number gutter: the number right-aligned in 6 columns, then "|".
_GUTTER = re.compile(r"^ *(\d+)\|")
#: The tier name reported when the gutter was stripped.
GUTTER_TIER = "line_number_gutter"
#: Lines named when the text without the gutter matches elsewhere.
MAX_LINES_NAMED = 5


@dataclass(frozen=True)
class _Gutter:
    #: The 1-based file line old_string's first line is, as its numbers say.
    first: int
    #: (index in old_string, number) of the lines that carry the gutter.
    numbered: list[tuple[int, int]]
    lines: int


def _read(old: str) -> _Gutter | None:
    lines = old.split("\n")
    if lines and lines[-1] == "" and len(lines) > 1:
        lines = lines[:-1]
    numbered = [(i, int(m.group(1))) for i, line in enumerate(lines) if (m := _GUTTER.match(line))]
    if not numbered:
        return None
    return _Gutter(numbered[0][1] - numbered[0][0], numbered, len(lines))


def strip_gutter(text: str) -> str:
    return "\n".join(_GUTTER.sub("", line, count=1) for line in text.split("\n"))


def gutter_match(f: Text, old: str, new: str, path: str, *, reindent: bool) -> MatchResult | None:
    """The match at the lines old_string's gutter names; None when old_string carries no gutter
    (or too little of one to tell); raises :class:`NotFoundInFile` with the reason when it does
    but the numbers or the text do not fit the file."""
    gutter = _read(old)
    if gutter is None:
        return None
    numbers = [number for _, number in gutter.numbered]
    if any(number - index != gutter.first for index, number in gutter.numbered):
        if len(gutter.numbered) < 2:
            return None
        raise _refusal(
            f, old, new, path,
            f"old_string's lines carry view's line-number prefix with numbers that do not follow each other "
            f"({', '.join(map(str, numbers[:MAX_LINES_NAMED]))}). Copy one block of consecutive lines, without "
            "the prefix.",
        )  # fmt: skip
    stripped_old, stripped_new = strip_gutter(old), strip_gutter(new)
    if not stripped_old.strip():
        return None
    result = find(f, stripped_old, stripped_new, reindent=reindent)
    where = _which(gutter)
    if result is None:
        raise _refusal(
            f, stripped_old, stripped_new, path,
            f"old_string carried view's line-number prefix ({where}); without it, the text still matches nowhere.",
        )  # fmt: skip
    starts = f.line_numbers([r.start for r in result.replacements])
    at_line = [r for r, line in zip(result.replacements, starts, strict=True) if line == gutter.first]
    if len(at_line) != 1:
        elsewhere = ", ".join(map(str, starts[:MAX_LINES_NAMED])) + (", …" if len(starts) > MAX_LINES_NAMED else "")
        raise _refusal(
            f, stripped_old, stripped_new, path,
            f"old_string carried view's line-number prefix ({where}), which puts it at line {gutter.first}; "
            f"without the prefix it matches at line {elsewhere} instead. The file may have changed since you "
            "viewed it: view it again and copy old_string without the prefix.",
        )  # fmt: skip
    tier = GUTTER_TIER if result.tier == "exact" else f"{GUTTER_TIER}+{result.tier}"
    return MatchResult(tier, at_line)


def _which(gutter: _Gutter) -> str:
    if len(gutter.numbered) == gutter.lines:
        return "on every line"
    return f"on {len(gutter.numbered)} of its {gutter.lines} lines"


def _refusal(f: Text, old: str, new: str, path: str, reason: str) -> NotFoundInFile:
    base = not_found(f, old, new, path)
    return NotFoundInFile(f"{base.message}\n\nNote: {reason}", base.closest)
