"""What a change changed, for the diagnostics that follow it: the lines (errors on or near them are
shown first) and the names (the files that use them are the ones a change can break).

Names come from the syntax layer's outline of the old and the new text (tree-sitter, no server):
the innermost definitions (functions, classes, methods …) whose lines the change touched, and the
names assigned by touched top-level lines (``LIMIT = 3``, ``export const x = …``). A touched
top-level line that is neither (an import, a statement) may change anything the module offers:
then every importer of the module is a candidate, not only the users of some names.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..syntax.outline import Symbol

#: Lines either side of a change whose diagnostics count as "near" it (shown first).
NEAR_LINES = 3
#: Texts whose differing middle has more lines than this are compared as one changed block:
#: a line diff of two very different large texts costs more than it tells.
MAX_DIFF_LINES = 5000

_ASSIGNED = re.compile(r"^(?:export\s+)?(?:(?:const|let|var|type)\s+)?([A-Za-z_$][\w$]*)\s*(?::[^=\n]*)?=(?!=)")
_QUIET_LINE = re.compile(r"^\s*(?:#|//|/\*|\*|$)")


@dataclass(frozen=True)
class Region:
    """One changed block: lines [old_start, old_end) of the old text became [new_start, new_end)
    of the new one (0-based; an empty range is an insertion or deletion point)."""

    old_start: int
    old_end: int
    new_start: int
    new_end: int


def changed_regions(old: str, new: str) -> list[Region]:
    """The blocks of lines that differ between ``old`` and ``new``."""
    a, b = old.split("\n"), new.split("\n")
    head = 0
    while head < len(a) and head < len(b) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < len(a) - head and tail < len(b) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    middle_a, middle_b = a[head : len(a) - tail], b[head : len(b) - tail]
    if not middle_a and not middle_b:
        return []
    if len(middle_a) > MAX_DIFF_LINES or len(middle_b) > MAX_DIFF_LINES:
        return [Region(head, len(a) - tail, head, len(b) - tail)]
    matcher = difflib.SequenceMatcher(None, middle_a, middle_b, autojunk=False)
    return [
        Region(head + i1, head + i2, head + j1, head + j2)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def closeness(line: int, regions: list[Region], margin: int = NEAR_LINES) -> int:
    """How close 0-based ``line`` of the new text is to a change: 0 on a changed line (or where
    lines were removed), 1 within ``margin`` lines of one, 2 farther."""
    spans = [(r.new_start, max(r.new_end, r.new_start + 1)) for r in regions]
    if any(start <= line < end for start, end in spans):
        return 0
    return 1 if any(start - margin <= line < end + margin for start, end in spans) else 2


@dataclass(frozen=True)
class NamePlace:
    """A changed definition's name and where it stands in the old text (0-based, characters)."""

    name: str
    line: int
    character: int


@dataclass
class ChangedNames:
    #: Definitions the change touched in the old text, with the name's place (for references).
    old: list[NamePlace] = field(default_factory=list)
    #: Every name the change touched, old or new.
    names: set[str] = field(default_factory=set)
    #: A touched top-level line that defines no name: any importer may be affected.
    anything: bool = False


def changed_names(path: Path, old: str | None, new: str, regions: list[Region]) -> ChangedNames:
    """The names ``regions`` touched in ``old`` (None: the file is new) and in ``new``."""
    out = ChangedNames()
    sides = [(new, [(r.new_start, r.new_end) for r in regions], False)]
    if old is not None:
        sides.insert(0, (old, [(r.old_start, r.old_end) for r in regions], True))
    for text, spans, is_old in sides:
        if not _names_of_side(path, text, spans, is_old, out):
            out.anything = True
    return out


def _names_of_side(path: Path, text: str, spans: list[tuple[int, int]], is_old: bool, out: ChangedNames) -> bool:
    """Adds the names ``spans`` touch in ``text`` to ``out``; False when the text cannot be read
    as a known language (then anything may have changed)."""
    from ..syntax import parse
    from ..syntax.outline import flatten, outline

    parsed = parse(text, str(path))
    if parsed is None:
        return False
    symbols = flatten(outline(parsed))
    lines = text.split("\n")
    for start, end in spans:
        touched = [s for s in symbols if _overlaps(s, start, end)]
        innermost = [s for s in touched if not any(c in touched for c in s.children)]
        for symbol in innermost:
            out.names.add(symbol.name)
            if is_old:
                place = _name_place(symbol, lines)
                if place is not None and place not in out.old:
                    out.old.append(place)
        for number in range(start, min(end, len(lines))):
            if any(s.start_line - 1 <= number <= s.end_line - 1 for s in touched):
                continue
            line = lines[number]
            assigned = _ASSIGNED.match(line)
            if assigned is not None:
                out.names.add(assigned.group(1))
            elif not _QUIET_LINE.match(line):
                out.anything = True
    return True


def _overlaps(symbol: Symbol, start: int, end: int) -> bool:
    first, last = symbol.start_line - 1, symbol.end_line - 1
    if start == end:  # an insertion or deletion point: inside when lines on both sides are
        return first < start <= last
    return first < end and start <= last


def _name_place(symbol: Symbol, lines: list[str]) -> NamePlace | None:
    """Where the symbol's name stands on its definition line (the outline's signature line)."""
    name, signature = symbol.name, symbol.signature.rstrip("…")
    pattern = re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])")
    for number in range(symbol.start_line - 1, min(symbol.end_line, len(lines))):
        line = lines[number]
        if line.strip().startswith(signature[:40]):
            found = pattern.search(line)
            if found is not None:
                return NamePlace(name, number, found.start())
    return None
