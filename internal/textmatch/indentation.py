"""The indentation tier: whole lines equal up to a uniform change of depth or of tabs vs spaces."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from .lines import LineKey, NoMatch, Replacement, Text, indent_of, split_old, to_replacements, window_matches

#: The file's indentation unit is inferred from at most this many of its first lines.
UNIT_SAMPLE_LINES = 20_000


def indent_unit(lines: list[str]) -> str:
    """The indentation step: a tab, or the most common increase of space indentation between
    consecutive non-blank lines (4 when there is none). A most-common step is robust to
    continuation lines aligned at odd columns, which would ruin a GCD."""
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


def file_indent_unit(text: str) -> str:
    return indent_unit(text.split("\n", UNIT_SAMPLE_LINES)[:UNIT_SAMPLE_LINES])


def _level(indent: str, unit: str) -> float:
    """Indentation depth in ``unit`` steps; a fraction means "not on this grid"."""
    if unit == "\t":
        if indent.strip("\t") == "":
            return float(len(indent))
        return len(indent.replace("\t", "    ")) / 4
    width = len(indent.replace("\t", " " * len(unit)))
    return width / len(unit)


def _reindent(text: str, shift: Callable[[str], str | None]) -> str | None:
    out = []
    for line in text.split("\n"):
        if not line.strip():
            out.append(line)
            continue
        moved = shift(line)
        if moved is None:
            return None
        out.append(moved)
    return "\n".join(out)


Shift = Callable[[str], str | None]


def _prefix_shift(pairs: list[tuple[str, str]]) -> Shift | None:
    """The same whitespace string added to (or removed from) every line's indentation."""
    if not pairs:
        return lambda line: line
    added = {f[: len(f) - len(o)] if f.endswith(o) else None for f, o in pairs}
    if len(added) == 1 and None not in added:
        prefix = added.pop() or ""
        return lambda line: prefix + line
    removed = {o[: len(o) - len(f)] if o.endswith(f) else None for f, o in pairs}
    if len(removed) == 1 and None not in removed:
        cut = removed.pop() or ""
        return lambda line: line[len(cut) :] if line.startswith(cut) else None
    return None


def _unit_shift(pairs: list[tuple[str, str]], file_unit: str, old_unit: str) -> Shift | None:
    """A uniform change of depth measured in indent units (tabs vs spaces, 2 vs 4 spaces)."""
    deltas = {_level(f, file_unit) - _level(o, old_unit) for f, o in pairs}
    if len(deltas) != 1:
        return None
    delta = deltas.pop()
    if delta != int(delta):
        return None

    def shift(line: str) -> str | None:
        level = _level(indent_of(line), old_unit) + delta
        if level < 0 or level != int(level):
            return None
        return file_unit * int(level) + line.lstrip(" \t")

    return shift


def _strip(line: str) -> str:
    return line.strip()


def indent_shift(f: Text, old: str, new: str, *, loose_first: bool = False, key: LineKey = _strip) -> list[Replacement]:
    """Whole lines equal up to a uniform change of indentation (depth and/or tabs vs spaces).

    Every non-blank line must keep its content and its depth relative to the others; only the
    common depth (and the indent character) may differ. ``new_string`` is re-indented by the
    same shift into the file's indent unit. Safe: structure and text are identical; a block that
    matches at two depths is reported as ambiguous like any other. With ``loose_first`` the first
    line's own indentation is ignored (old_string copied from the middle of a line).
    """
    old_lines, ends_nl = split_old(old)
    if not any(line.strip() for line in old_lines):
        return []
    old_unit = indent_unit(old_lines[1:] if loose_first else old_lines)
    unindented = all(not indent_of(line) for line in old_lines if line.strip())

    def accept(window: list[str], start: int) -> str | None:
        pairs: list[tuple[str, str]] = []
        for i, old_line in enumerate(old_lines):
            file_line = window[i]
            if not old_line.strip():
                if file_line.strip():
                    raise NoMatch
                continue
            if not (loose_first and i == 0):
                pairs.append((indent_of(file_line), indent_of(old_line)))
        shift = _prefix_shift(pairs)
        if shift is None:
            unit = f.indent_unit
            shift = _unit_shift(pairs, unit, unit if unindented else old_unit)
        if shift is None:
            raise NoMatch
        body = _reindent(new, shift)
        if body is None:
            return None
        if loose_first and new.strip():
            head, sep, rest = body.partition("\n")
            body = indent_of(window[0]) + head.lstrip(" \t") + sep + rest
        return body

    return to_replacements(window_matches(f, old_lines, key, accept, ends_nl=ends_nl))
