"""The tiers, in the order they are tried, and the pipeline that stops at the first with a match.

Each tier forgives one kind of slip and finds *all* its matches in its own normalised space.
The indentation tiers live in :mod:`.indentation`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from .continuation import with_continuations
from .indentation import indent_shift
from .lines import CANCEL_EVERY, MatchResult, Replacement, Text, indent_of, split_old, to_replacements, window_matches

#: The tier of a match whose first line started after its indentation (copied from the first
#: visible character): the match then starts at the line's indentation.
FIRST_LINE_TIER = "first_line_indentation"

# --- tier 1: exact ----------------------------------------------------------------------------


def exact(f: Text, old: str, new: str) -> list[Replacement]:
    """The text as given. Forgives nothing, so it is always safe."""
    return _occurrences(f.text, old, new, f.cancel)


def _occurrences(content: str, old: str, new: str, check: Callable[[], None]) -> list[Replacement]:
    out: list[Replacement] = []
    start = content.find(old)
    while start >= 0:
        if len(out) % CANCEL_EVERY == 0:
            check()
        out.append(Replacement(start, start + len(old), new))
        start = content.find(old, start + len(old))
    return out


# --- whole-line tiers ---------------------------------------------------------------------


def trailing_whitespace(f: Text, old: str, new: str) -> list[Replacement]:
    """Whole lines equal once trailing spaces/tabs are ignored.

    Safe: only invisible trailing whitespace differs; every visible character must match.
    """
    old_lines, ends_nl = split_old(old)
    found = window_matches(f, old_lines, lambda s: s.rstrip(" \t"), lambda _lines, _start: new, ends_nl=ends_nl)
    return to_replacements(found)


_WS = re.compile(r"[ \t]+")


def _collapse(line: str) -> str:
    return _WS.sub(" ", line.strip())


def whitespace_normalised(f: Text, old: str, new: str) -> list[Replacement]:
    """Whole lines equal once runs of spaces/tabs inside them are collapsed, with the same
    indentation structure the indentation tier demands.

    Forgives spacing inside lines (``x  =  1`` vs ``x = 1``) but never a missing or extra token:
    collapsing keeps every separation (``a = b`` never equals ``a=b``), and the lines' relative
    depths must agree, so new_string is re-indented exactly like the indentation tier does.
    """
    return indent_shift(f, old, new, key=_collapse)


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


def punctuation(f: Text, old: str, new: str) -> list[Replacement]:
    """Exact once typographic punctuation is folded on both sides (“x” vs "x", – vs -).

    Safe: the fold maps single characters to single characters, so offsets are the file's own,
    and every other character must match exactly. new_string is folded too when the matched
    text had no typographic characters, so an ASCII file stays ASCII.
    """
    found = _occurrences(fold_punctuation(f.text), fold_punctuation(old), new, f.cancel)
    out = []
    for r in found:
        region = f.text[r.start : r.end]
        text = fold_punctuation(new) if fold_punctuation(region) == region else new
        out.append(Replacement(r.start, r.end, text))
    return out


# --- the pipeline -----------------------------------------------------------------------------

Tier = Callable[[Text, str, str], list[Replacement]]
BASE_TIERS: list[tuple[str, Tier]] = [
    ("exact", exact),
    ("trailing_whitespace", trailing_whitespace),
    ("indentation", indent_shift),
    ("whitespace", whitespace_normalised),
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


def _tiers(old: str, new: str) -> Iterator[tuple[str, str, str, Tier]]:
    """(name, old, new, matcher) in the order they are tried; each variant of old/new is made
    only when the tiers before it found nothing (most edits stop at the first, exact)."""
    for name, tier in BASE_TIERS:
        yield name, old, new, tier
    if "\\" in old:
        o, n = unescape(old), unescape(new)
        if o != old:
            yield "escapes", o, n, exact
            yield "escapes", o, n, trailing_whitespace
    yield "punctuation", old, new, punctuation
    trimmed = _trim_boundaries(old, new)
    if trimmed:
        o, n = trimmed
        yield "trimmed", o, n, exact
        yield "trimmed", o, n, trailing_whitespace
        yield "trimmed", o, n, indent_shift
    first_line = old.lstrip("\n").split("\n", 1)[0]
    if "\n" in old.strip("\n") and first_line and not indent_of(first_line):
        # old_string copied from the middle of its first line: that line's depth is unknown,
        # the rest must still agree among themselves.
        yield FIRST_LINE_TIER, old, new, lambda f, o, n: indent_shift(f, o, n, loose_first=True)


def find(content: str | Text, old: str, new: str, *, reindent: bool = True) -> MatchResult | None:
    """The first tier with any match, with every match of that tier. With ``reindent``, a
    replacement starting after its line's indentation follows the mid-line rule
    (continuation.py); without, new_string's continuation lines are spliced as written."""
    f = content if isinstance(content, Text) else Text(content)
    for name, o, n, tier in _tiers(old, new):
        if not o:
            continue
        f.cancel()
        found = tier(f, o, n)
        if found:
            result = _first_line_slip(f, found, o, n) if name == "exact" else MatchResult(name, found)
            if reindent:
                result = MatchResult(result.tier, with_continuations(f, result.replacements, o))
            return result
    return None


def _first_line_slip(f: Text, found: list[Replacement], old: str, new: str) -> MatchResult:
    """Exact matches that start right after their line's indentation, when new_string begins
    with that same indentation: the model copied old_string from the first visible character but
    wrote new_string whole. Replacing from the match would indent the line twice; the intended
    edit is the whole line. A match that starts after other text on its line is left alone."""
    if old[:1].isspace():
        return MatchResult("exact", found)
    adjusted = []
    slipped = False
    for r in found:
        line_start = f.line_start(r.start)
        indent = f.text[line_start : r.start]
        if indent and not indent.strip(" \t") and r.text is not None and r.text.startswith(indent):
            adjusted.append(Replacement(line_start, r.end, r.text))
            slipped = True
        else:
            adjusted.append(r)
    return MatchResult(FIRST_LINE_TIER if slipped else "exact", adjusted)
