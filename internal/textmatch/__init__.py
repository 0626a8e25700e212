"""Finding ``old_string`` in a file the way a careful human would, and never in the wrong place.

Models send imperfect ``old_string``s. Each tier below forgives one kind of imperfection and is
tried only when the stricter tiers found nothing. A tier finds *all* its matches in its own
normalised space; more than one without ``replace_all`` is an ambiguity error, never a guess.
No tier compares by similarity: every tier requires the same non-whitespace characters in the
same order (up to escapes and typographic punctuation), which is what keeps wrong edits at zero.

All offsets are in LF-normalised text (``TextFile.text``).
"""

from __future__ import annotations

import bisect
import dataclasses
import difflib
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import ToolError
from ..fsutil.textio import TextFile, normalize_eol

#: How many ambiguous match line numbers an error lists.
MAX_LINES_LISTED = 10
#: Lines of the closest region shown when old_string is not found.
MAX_CLOSEST_LINES = 12
#: A region must be at least this similar to be offered as "closest".
MIN_CLOSEST_RATIO = 0.5


class EditError(ToolError):
    #: Which edit of a multi-edit failed (set by apply_edits).
    edit_index: int | None = None


@dataclass(frozen=True)
class Replacement:
    start: int
    end: int
    #: ``None``: old_string matched here, but new_string could not be re-indented to fit.
    text: str | None


class _NoMatch(Exception):
    """Raised by a window check: these lines are not a match."""


@dataclass(frozen=True)
class MatchResult:
    tier: str
    replacements: list[Replacement]


def _line_of(starts: list[int], offset: int) -> int:
    return bisect.bisect_right(starts, offset)


def line_starts(text: str) -> list[int]:
    starts = [0]
    i = text.find("\n")
    while i >= 0:
        starts.append(i + 1)
        i = text.find("\n", i + 1)
    return starts


# --- tier 1: exact ----------------------------------------------------------------------------


def _exact(content: str, old: str, new: str) -> list[Replacement]:
    """The text as given. Forgives nothing, so it is always safe."""
    out: list[Replacement] = []
    start = content.find(old)
    while start >= 0:
        out.append(Replacement(start, start + len(old), new))
        start = content.find(old, start + len(old))
    return out


# --- whole-line tiers -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Lines:
    """The file split into lines with offsets, built once per search."""

    text: str
    lines: list[str]
    starts: list[int]

    @classmethod
    def of(cls, text: str) -> _Lines:
        lines = text.split("\n")
        return cls(text, lines, line_starts(text))

    def span(self, first: int, count: int, with_newline: bool) -> tuple[int, int]:
        last = first + count - 1
        end = self.starts[last] + len(self.lines[last])
        if with_newline and end < len(self.text):
            end += 1
        return self.starts[first], end


def _split_old(old: str) -> tuple[list[str], bool]:
    """old_string as lines, and whether it ended with a newline."""
    ends_nl = old.endswith("\n")
    lines = (old[:-1] if ends_nl else old).split("\n")
    return lines, ends_nl


LineKey = Callable[[str], str]


def _window_matches(
    f: _Lines, old_lines: list[str], key: LineKey, accept: Callable[[int], str | None], *, ends_nl: bool
) -> list[tuple[int, str | None]]:
    """Windows of ``len(old_lines)`` file lines whose lines equal ``old_lines`` under ``key``.

    ``accept(first_line)`` may still veto a window (raising _NoMatch) or gives its replacement
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
            except _NoMatch:
                first += 1
                continue
            first += count
            continue
        first += 1
    return out


def _to_replacements(f: _Lines, found: list[tuple[int, str | None]], count: int, ends_nl: bool) -> list[Replacement]:
    out = []
    for first, text in found:
        start, end = f.span(first, count, ends_nl)
        out.append(Replacement(start, end, text))
    return out


def _trailing_ws(content: str, old: str, new: str) -> list[Replacement]:
    """Whole lines equal once trailing spaces/tabs are ignored.

    Safe: only invisible trailing whitespace differs; every visible character must match.
    """
    f = _Lines.of(content)
    old_lines, ends_nl = _split_old(old)
    found = _window_matches(f, old_lines, lambda s: s.rstrip(" \t"), lambda _first: new, ends_nl=ends_nl)
    return _to_replacements(f, found, len(old_lines), ends_nl)


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


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
        ind = _indent_of(line)
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
        level = _level(_indent_of(line), old_unit) + delta
        if level < 0 or level != int(level):
            return None
        return file_unit * int(level) + line.lstrip(" \t")

    return shift


def _strip(line: str) -> str:
    return line.strip()


def _indent_shift(
    content: str, old: str, new: str, *, loose_first: bool = False, key: LineKey = _strip
) -> list[Replacement]:
    """Whole lines equal up to a uniform change of indentation (depth and/or tabs vs spaces).

    Every non-blank line must keep its content and its depth relative to the others; only the
    common depth (and the indent character) may differ. ``new_string`` is re-indented by the
    same shift into the file's indent unit. Safe: structure and text are identical; a block that
    matches at two depths is reported as ambiguous like any other. With ``loose_first`` the first
    line's own indentation is ignored (old_string copied from the middle of a line).
    """
    f = _Lines.of(content)
    old_lines, ends_nl = _split_old(old)
    if not any(line.strip() for line in old_lines):
        return []
    file_unit = indent_unit(f.lines)
    old_unit = indent_unit(old_lines[1:] if loose_first else old_lines)
    if all(not _indent_of(line) for line in old_lines if line.strip()):
        old_unit = file_unit

    def accept(first: int) -> str | None:
        pairs: list[tuple[str, str]] = []
        for i, old_line in enumerate(old_lines):
            file_line = f.lines[first + i]
            if not old_line.strip():
                if file_line.strip():
                    raise _NoMatch
                continue
            if not (loose_first and i == 0):
                pairs.append((_indent_of(file_line), _indent_of(old_line)))
        shift = _prefix_shift(pairs) or _unit_shift(pairs, file_unit, old_unit)
        if shift is None:
            raise _NoMatch
        body = _reindent(new, shift)
        if body is None:
            return None
        if loose_first and new.strip():
            head, sep, rest = body.partition("\n")
            body = _indent_of(f.lines[first]) + head.lstrip(" \t") + sep + rest
        return body

    found = _window_matches(f, old_lines, key, accept, ends_nl=ends_nl)
    return _to_replacements(f, found, len(old_lines), ends_nl)


_WS = re.compile(r"[ \t]+")


def _collapse(line: str) -> str:
    return _WS.sub(" ", line.strip())


def _ws_normalised(content: str, old: str, new: str) -> list[Replacement]:
    """Whole lines equal once runs of spaces/tabs inside them are collapsed, with the same
    indentation structure the indentation tier demands.

    Forgives spacing inside lines (``x  =  1`` vs ``x = 1``) but never a missing or extra token:
    collapsing keeps every separation (``a = b`` never equals ``a=b``), and the lines' relative
    depths must agree, so new_string is re-indented exactly like the indentation tier does.
    """
    return _indent_shift(content, old, new, key=_collapse)


# --- escape and punctuation tiers -------------------------------------------------------------

_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "'": "'", "\\": "\\", "r": ""}
_ESCAPE_RE = re.compile(r"\\([nt\"'\\r])")


def unescape(text: str) -> str:
    return _ESCAPE_RE.sub(lambda m: _ESCAPES[m.group(1)], text)


_PUNCT = str.maketrans(
    {
        "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'",
        "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"',
        "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2212": "-",
        "\u00a0": " ", "\u2009": " ", "\u202f": " ",
    }
)  # fmt: skip


def fold_punctuation(text: str) -> str:
    """Typographic quotes, dashes and odd spaces → ASCII, one character for one (offsets hold)."""
    return text.translate(_PUNCT)


def _punctuation(content: str, old: str, new: str) -> list[Replacement]:
    """Exact once typographic punctuation is folded on both sides (“x” vs "x", – vs -).

    Safe: the fold maps single characters to single characters, so offsets are the file's own,
    and every other character must match exactly. new_string is folded too when the matched
    text had no typographic characters, so an ASCII file stays ASCII.
    """
    found = _exact(fold_punctuation(content), fold_punctuation(old), new)
    out = []
    for r in found:
        region = content[r.start : r.end]
        text = fold_punctuation(new) if fold_punctuation(region) == region else new
        out.append(Replacement(r.start, r.end, text))
    return out


# --- the pipeline -----------------------------------------------------------------------------

Tier = Callable[[str, str, str], list[Replacement]]
BASE_TIERS: list[tuple[str, Tier]] = [
    ("exact", _exact),
    ("trailing_whitespace", _trailing_ws),
    ("indentation", _indent_shift),
    ("whitespace", _ws_normalised),
]


def _trim_boundaries(old: str, new: str) -> tuple[str, str] | None:
    """old/new without blank lines at either end and without trailing spaces at the end."""

    def trim(s: str) -> str:
        lines = s.split("\n")
        while lines and not lines[0].strip():
            lines.pop(0)
        while lines and not lines[-1].strip():
            lines.pop()
        return "\n".join(lines).rstrip(" \t")

    old2, new2 = trim(old), trim(new) if new.strip() else new
    return (old2, new2) if old2 and old2 != old else None


def _tiers(old: str, new: str) -> list[tuple[str, str, str, Tier]]:
    """(name, old, new, matcher) in the order they are tried."""
    plan = [(name, old, new, tier) for name, tier in BASE_TIERS]
    if "\\" in old:
        o, n = unescape(old), unescape(new)
        if o != old:
            plan += [("escapes", o, n, _exact), ("escapes", o, n, _trailing_ws)]
    plan.append(("punctuation", old, new, _punctuation))
    trimmed = _trim_boundaries(old, new)
    if trimmed:
        o, n = trimmed
        plan += [("trimmed", o, n, _exact), ("trimmed", o, n, _trailing_ws), ("trimmed", o, n, _indent_shift)]
    first_line = old.lstrip("\n").split("\n", 1)[0]
    if "\n" in old.strip("\n") and first_line and not _indent_of(first_line):
        # old_string copied from the middle of its first line: that line's depth is unknown,
        # the rest must still agree among themselves.
        plan.append(("first_line_indent", old, new, lambda c, o, n: _indent_shift(c, o, n, loose_first=True)))
    return plan


def find(content: str, old: str, new: str) -> MatchResult | None:
    """The first tier with any match, with every match of that tier."""
    for name, o, n, tier in _tiers(old, new):
        if not o:
            continue
        found = tier(content, o, n)
        if found:
            return MatchResult(name, found)
    return None


def _visible(line: str) -> str:
    indent = _indent_of(line)
    return indent.replace(" ", "·").replace("\t", "→   ") + line[len(indent) :]


def _closest_region(content: str, old: str) -> str:
    f = _Lines.of(content)
    old_lines, _ = _split_old(old)
    count = min(len(old_lines), MAX_CLOSEST_LINES)
    probe = next((line.strip() for line in old_lines if line.strip()), "")
    if not probe or not f.lines:
        return ""
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(probe)
    scored = []
    for i, line in enumerate(f.lines):
        matcher.set_seq1(line.strip())
        if matcher.real_quick_ratio() >= MIN_CLOSEST_RATIO and matcher.quick_ratio() >= MIN_CLOSEST_RATIO:
            scored.append((matcher.ratio(), i))
    if not scored:
        return ""
    _best_score, best = max(scored, key=lambda s: (s[0], -s[1]))
    window = "\n".join(f.lines[best : best + count])
    if difflib.SequenceMatcher(None, window, "\n".join(old_lines[:count]), autojunk=False).ratio() < MIN_CLOSEST_RATIO:
        return ""
    shown = [f"{best + i + 1:6d}|{_visible(line)}" for i, line in enumerate(f.lines[best : best + count])]
    return "\n".join(shown)


def not_found(content: str, old: str, new: str, path: str) -> EditError:
    message = (
        f"old_string was not found in {path}. It must match the file's text exactly "
        "(whitespace differences in indentation and at line ends are tolerated)."
    )
    region = _closest_region(content, old)
    if region:
        message += (
            "\n\nThe closest region in the file (whitespace shown as · for spaces, → for tabs):\n"
            f"{region}\n\nCopy the exact text from the file (use view) and try again."
        )
    else:
        message += " Use view to read the current text and copy it exactly."
    if new and new in content:
        line = _line_of(line_starts(content), content.find(new))
        message += f"\n\nNote: new_string already appears in the file (line {line}); the edit may already be applied."
    return EditError(message)


def ambiguous(content: str, result: MatchResult) -> EditError:
    starts = line_starts(content)
    lines = [_line_of(starts, r.start) for r in result.replacements]
    listed = ", ".join(map(str, lines[:MAX_LINES_LISTED])) + (", …" if len(lines) > MAX_LINES_LISTED else "")
    return EditError(
        f"old_string appears {len(lines)} times in the file (lines {listed}). Provide more surrounding "
        "context to make the match unique, or set replace_all to true."
    )


@dataclass(frozen=True)
class EditPlan:
    tier: str
    replacements: list[Replacement]


def plan_edit(content: str, old: str, new: str, *, replace_all: bool, path: str) -> EditPlan:
    """Where and what to replace, or an :class:`EditError` the model can act on."""
    if old == new:
        raise EditError("old_string and new_string are identical: there is nothing to change.")
    result = find(content, old, new)
    if result is None:
        raise not_found(content, old, new, path)
    if len(result.replacements) > 1 and not replace_all:
        raise ambiguous(content, result)
    for r in result.replacements:
        if r.text is None:
            line = content.count("\n", 0, r.start) + 1
            raise EditError(
                f"old_string matched at line {line} with different indentation, but new_string cannot be "
                "shifted the same way (some of its lines would need less than no indentation). Send "
                "old_string and new_string with the file's own indentation (use view)."
            )
    return EditPlan(result.tier, result.replacements)


def apply_plan(content: str, plan: EditPlan) -> str:
    out, cursor = [], 0
    for r in plan.replacements:
        assert r.text is not None, "plan_edit refuses unplaceable replacements"
        out += [content[cursor : r.start], r.text]
        cursor = r.end
    out.append(content[cursor:])
    return "".join(out)


@dataclass(frozen=True)
class EditRequest:
    old_string: str
    new_string: str
    replace_all: bool = False


@dataclass(frozen=True)
class EditOutcome:
    file: TextFile
    tiers: list[str]
    replaced: int
    first_changed_line: int


def apply_edits(file: TextFile, edits: list[EditRequest], *, path: str) -> EditOutcome:
    """Apply ``edits`` in order to the evolving text; raise on the first that cannot apply.

    Each edit is spliced into the raw text, so line endings outside the spans never change.
    """
    tiers: list[str] = []
    replaced = 0
    first_changed: int | None = None
    for index, edit in enumerate(edits):
        old = normalize_eol(edit.old_string)
        new = normalize_eol(edit.new_string)
        try:
            plan = plan_edit(file.text, old, new, replace_all=edit.replace_all, path=path)
        except EditError as exc:
            exc.edit_index = index
            raise
        line = file.text.count("\n", 0, plan.replacements[0].start) + 1
        first_changed = line if first_changed is None else min(first_changed, line)
        spans = [(r.start, r.end, r.text) for r in plan.replacements if r.text is not None]
        file = dataclasses.replace(file, raw=file.splice(spans))
        tiers.append(plan.tier)
        replaced += len(plan.replacements)
    return EditOutcome(file, tiers, replaced, first_changed or 1)
