"""Judging several stretches of a file, each as if it were a file of its own, in one parse.

The gate's fast path (local.py) asks whether each changed stretch of top-level statements parses
cleanly on its own. A patch spread over a file has dozens of stretches; parsing each apart costs a
parser call and a layout walk apiece, so they are first parsed together, one after the other in
one buffer. That parse is trusted only when it proves each stretch stood alone in it:

- it has no error (syntax or indentation);
- no top-level node crosses from one stretch into the next — so nothing one stretch left open (a
  bracket, a string, a block, a decorator, a continued line) was closed or continued by another;
- every stretch but the last ends a line, and not with a line continuation, so each next stretch
  starts at column 0 with nothing carried over, as it does at the start of a file.

Then every stretch's statements are exactly those of the combined parse that lie in it, which a
parse of the stretch alone finds too. Anything else (an error, a crossing node, a stretch that
does not end a line) sends every stretch to its own parse, as before: only a clean combined parse
is ever believed, and a doubt costs time, never a verdict.
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

from .parse import Parsed, changed_range, parse_detached, reparse_detached

if TYPE_CHECKING:
    from tree_sitter import Node

#: How a stretch may not end for the next one to start as a file does (a line continuation).
_CONTINUED = (b"\\\n", b"\\\r\n")


def statements_apart(
    stretches: list[bytes], language: str, *, trees: list[Parsed] | None = None
) -> list[list[int]] | None:
    """For each stretch, the offsets (in the stretch) where its top-level statements start on a
    line of their own, when every stretch parses cleanly on its own; None when one does not.
    ``trees`` gets the tree of a single stretch judged clean (for :func:`statements_reparsed`)."""
    if len(stretches) > 1 and _separable(stretches):
        together = _together(stretches, language)
        if together is not None:
            return together
    return _each_apart(stretches, language, trees)


def statements_together(
    stretches: list[bytes], language: str, *, trees: list[Parsed] | None = None
) -> list[list[int]] | None:
    """:func:`statements_apart` from the one combined parse only: None whenever that parse does
    not prove every stretch clean on its own (a quick first try, before wider stretches)."""
    return _together(stretches, language, trees) if _separable(stretches) else None


def statements_reparsed(previous: Parsed, stretch: bytes) -> tuple[list[int], Parsed] | None:
    """The statement starts of ``stretch`` and its tree, when it parses cleanly on its own;
    judged from ``previous``, a stretch judged clean before that ``stretch`` changes in one
    range: parsed incrementally from its tree, and looked at for indentation errors only in the
    blocks around the changed lines (the rest is as clean as it was: the whole-file judgement's
    rule, gate.py). None when that does not show it clean (then it is parsed on its own)."""
    start, _, new_end = changed_range(previous.source, stretch)
    parsed = reparse_detached(previous, stretch)
    if parsed is None or parsed.has_tree_errors:
        return None
    if parsed.errors(stretch.rfind(b"\n", 0, start) + 1, new_end, limit=1):
        return None
    return statement_starts(parsed), parsed


def _separable(stretches: list[bytes]) -> bool:
    """Every stretch but the last ends a line (or is empty), with no continuation into the next."""
    return all(not s or (s.endswith(b"\n") and not s.endswith(_CONTINUED)) for s in stretches[:-1])


def _together(stretches: list[bytes], language: str, trees: list[Parsed] | None = None) -> list[list[int]] | None:
    """The statement starts of each stretch from one parse of them all; None when that parse
    cannot stand for the parses apart (an error, or a node crossing a stretch's boundary)."""
    source = b"".join(stretches)
    parsed = parse_detached(source, language)
    if parsed is None or parsed.has_tree_errors or parsed.errors(limit=1):
        return None
    if trees is not None and len(stretches) == 1:
        trees.append(parsed)
    lows: list[int] = []
    at = 0
    for stretch in stretches:
        lows.append(at)
        at += len(stretch)
    highs = [*lows[1:], at]
    starts: list[list[int]] = [[] for _ in stretches]
    for child in parsed.tree.root_node.children:
        start, end = child.start_byte, child.end_byte
        k = max(bisect.bisect_right(lows, start) - 1, 0)  # the stretch it starts in
        if end > highs[k]:
            return None  # it crosses into the next stretch: the stretches did not stand alone
        if _starts_statement(child, source):
            starts[k].append(start - lows[k])
    return starts


def _each_apart(stretches: list[bytes], language: str, trees: list[Parsed] | None = None) -> list[list[int]] | None:
    out: list[list[int]] = []
    for stretch in stretches:
        parsed = parse_detached(stretch, language)
        if parsed is None or parsed.has_tree_errors or parsed.errors(limit=1):
            return None
        out.append(statement_starts(parsed))
        if trees is not None and len(stretches) == 1:
            trees.append(parsed)
    return out


def statement_starts(parsed: Parsed) -> list[int]:
    """Where the top-level statements of ``parsed`` start on a line of their own."""
    return [child.start_byte for child in parsed.tree.root_node.children if _starts_statement(child, parsed.source)]


def _starts_statement(child: Node, source: bytes) -> bool:
    """A top-level node that starts a statement on a line of its own: column 0, after a line that
    does not continue into it (a trailing backslash). Anything else the parser lists at the top
    level (a stray line continuation) is not a place to cut the file."""
    return (
        child.start_point[1] == 0
        and child.type != "line_continuation"
        and not source[max(child.start_byte - 3, 0) : child.start_byte].endswith(_CONTINUED)
    )
