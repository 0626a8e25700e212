"""The indentation tier: whole lines equal up to a uniform change of depth or of tabs vs spaces.

A window of file lines matches old_string when every line has the same text once indentation
is set aside, and one *mapping* turns each old line's indentation into the file line's. The
mappings tried, in order:

1. a prefix — the same whitespace added to (or removed from) every line;
2. columns — each indentation's visual width (tab stops every 4, 8 or 2 columns) shifted by
   one constant, rendered in the window's own style (gofmt-style tabs for depth plus spaces for
   alignment, or spaces);
3. levels — depth counted in indentation units (the file's unit, inferred from its whole
   indentation histogram, and the unit old_string seems to use), with any remainder past the
   last whole unit (continuation lines aligned at odd columns) kept as it is.

new_string is re-indented by the mapping that fits; one that keeps old_string at the same depth
(only tabs vs spaces differ) is preferred when there is one. When several fit old_string but
would indent new_string differently, the edit is refused as ambiguous — unless old_string gives
no evidence to tell them apart (every line at one depth), when the file's conventions decide.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .lines import (
    LineKey,
    NoMatch,
    Replacement,
    Text,
    indent_of,
    indent_unit,
    split_old,
    to_replacements,
    window_matches,
)

#: Tab widths a model may have assumed when it turned tabs into spaces (or back).
TAB_WIDTHS = (4, 8, 2)
#: Space units a model may have used for one level.
SPACE_UNITS = ("    ", "  ", "        ", "   ")

Shift = Callable[[str], str | None]
Pairs = list[tuple[str, str]]  # (file line's indentation, old line's indentation)


def _reindent(text: str, shift: Shift) -> str | None:
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


# --- the mappings -----------------------------------------------------------------------------


def _prefix(pairs: Pairs) -> Shift | None:
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


def _columns(indent: str, tab: int) -> int:
    col = 0
    for ch in indent:
        col = (col // tab + 1) * tab if ch == "\t" else col + 1
    return col


def _render_columns(cols: int, tab: int, tabs: bool) -> str:
    return "\t" * (cols // tab) + " " * (cols % tab) if tabs else " " * cols


def _column_shift(pairs: Pairs, tab: int, tabs: bool) -> tuple[Shift, int] | None:
    deltas = {_columns(f, tab) - _columns(o, tab) for f, o in pairs}
    if len(deltas) != 1:
        return None
    delta = deltas.pop()

    def shift(line: str) -> str | None:
        cols = _columns(indent_of(line), tab) + delta
        return None if cols < 0 else _render_columns(cols, tab, tabs) + line.lstrip(" \t")

    return shift, delta


def _split(indent: str, unit: str) -> tuple[int, int] | None:
    """(whole units, remaining spaces) of ``indent`` in ``unit``; None when not on that grid."""
    if unit == "\t":
        whole = len(indent) - len(indent.lstrip("\t"))
        rest = indent[whole:]
        return (whole, len(rest)) if rest.strip(" ") == "" else None
    if "\t" in indent:
        return None
    return len(indent) // len(unit), len(indent) % len(unit)


def _level_shift(pairs: Pairs, file_unit: str, old_unit: str) -> tuple[Shift, int] | None:
    deltas = set()
    for f, o in pairs:
        fs, os_ = _split(f, file_unit), _split(o, old_unit)
        if fs is None or os_ is None or fs[1] != os_[1]:
            return None
        deltas.add(fs[0] - os_[0])
    if len(deltas) != 1:
        return None
    delta = deltas.pop()

    def shift(line: str) -> str | None:
        split = _split(indent_of(line), old_unit)
        if split is None or split[0] + delta < 0:
            return None
        return file_unit * (split[0] + delta) + " " * split[1] + line.lstrip(" \t")

    return shift, delta


@dataclass(frozen=True)
class _Fit:
    body: str | None  # new_string re-indented (None: it cannot be)
    evidence: bool  # old_string's lines sit at more than one depth


def _fit(pairs: Pairs, new: str, window_tabs: bool, file_unit: str, old_unit: str) -> _Fit | None:
    """new_string re-indented by the mapping that fits ``pairs``; None when none fits. Mappings
    that fit but disagree give a None body: the match counts (so it can never hide an
    ambiguity) and the edit is refused."""
    prefix = _prefix(pairs)
    if prefix is not None:
        return _Fit(_reindent(new, prefix), True)
    shifts = [_column_shift(pairs, tab, window_tabs) for tab in TAB_WIDTHS]
    units = dict.fromkeys([file_unit, old_unit, "\t", *SPACE_UNITS])
    shifts += [_level_shift(pairs, file_unit, unit) for unit in units]
    fitting = [s for s in shifts if s is not None]
    if not fitting:
        return None
    # A reading that keeps old_string at the same depth (only the style differs) is the one a
    # model means when it exists; the others are consulted only without it.
    same_depth = [s for s in fitting if s[1] == 0]
    bodies = list(dict.fromkeys(_reindent(new, shift) for shift, _ in (same_depth or fitting)))
    evidence = len({o for _, o in pairs}) > 1
    if len(bodies) == 1 or not evidence:
        return _Fit(bodies[0], evidence)  # agreed, or no evidence: the file's conventions decide
    return _Fit(None, evidence)  # genuinely ambiguous: refuse rather than guess


def _strip(line: str) -> str:
    return line.strip()


def indent_shift(f: Text, old: str, new: str, *, loose_first: bool = False, key: LineKey = _strip) -> list[Replacement]:
    """Whole lines equal up to a uniform change of indentation (see the module docstring).

    Safe: structure and text are identical; a block that matches at two depths is reported as
    ambiguous like any other. With ``loose_first`` the first line's own indentation is ignored
    (old_string copied from the middle of a line).
    """
    old_lines, ends_nl = split_old(old)
    if not any(line.strip() for line in old_lines):
        return []
    old_unit = indent_unit(old_lines[1:] if loose_first else old_lines)

    def accept(window: list[str], start: int) -> str | None:
        pairs: Pairs = []
        for i, old_line in enumerate(old_lines):
            file_line = window[i]
            if not old_line.strip():
                if file_line.strip():
                    raise NoMatch
                continue
            if not (loose_first and i == 0):
                pairs.append((indent_of(file_line), indent_of(old_line)))
        indents = [indent_of(line) for line in window if line.strip()]
        window_tabs = any(i.startswith("\t") for i in indents) or (
            not any(indents) and f.indent_unit == "\t"
        )  # fmt: skip
        fit = _fit(pairs, new, window_tabs, f.indent_unit, old_unit)
        if fit is None:
            raise NoMatch
        body = fit.body
        if body is not None and loose_first and new.strip():
            head, sep, rest = body.partition("\n")
            body = indent_of(window[0]) + head.lstrip(" \t") + sep + rest
        return body

    return to_replacements(window_matches(f, old_lines, key, accept, ends_nl=ends_nl))
