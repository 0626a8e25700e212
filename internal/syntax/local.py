"""The gate's fast path: judge only the top-level statements a change touches.

An incremental parse costs in proportion to what follows the change (tree-sitter revisits every
later top-level node), so an edit near the top of a 10k-line file costs ~20 ms. In the languages
listed here a module is a sequence of statements that each parse on their own — the lexer is back
at column 0, outside any string or bracket, where one ends and the next begins — so when the
changed statements parse cleanly on their own, the whole file does too, and the gate has nothing
to say. When they do not, or the statement boundaries are not known, the gate parses the whole
file as before (that parse decides; this one only ever says "clean").

The boundaries come from a whole-file tree without errors and are carried through each change
judged here: those before the change stay, those after it shift by the change's length, and
those inside it are the new statements' own.

A file that already has syntax errors (a change to it is never refused, only warned about when it
adds errors) has its own fast path, :func:`errors_kept_by_region`: the region the change touches
is parsed on its own before and after, and when it holds the same errors, there is nothing to say.

Each changed region is judged first without the unchanged statement on either side of it (when
leaving them out is safe, see regions.inner_cut), then, if that does not parse, with them: a hunk
that adds an ``else:`` or a decorator parses only joined to its neighbour. Either way all the
regions of a change are judged in one parse when that parse proves they stood apart in it
(stretches.py).
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from typing import TYPE_CHECKING

from .issues import SyntaxIssue
from .languages import language_for
from .nested import bodies_of, clean_in_body
from .parse import MAX_PARSE_BYTES, Bodies, Parsed, SyntaxCache, changed_range, parse_detached
from .regions import assembled_starts, changed_regions, inner_cut
from .stretches import statement_starts, statements_apart, statements_reparsed, statements_together

if TYPE_CHECKING:
    from tree_sitter import Node

#: Languages whose top-level statements are judged one by one (see the module docstring).
#: JavaScript/TypeScript are not: automatic semicolon insertion can join a line to the statement
#: above it.
LOCAL_LANGUAGES = frozenset({"python"})
def clean_by_statements(
    before: str, after: str, path: str, cache: SyntaxCache, *, encoded: tuple[bytes, bytes] | None = None
) -> bool:
    """True when the top-level statements the change touches parse cleanly on their own (the
    result then parses wherever it parsed before); False means "judge the usual way".
    ``encoded``: ``before`` and ``after`` as UTF-8 already."""
    language = language_for(path)
    if language not in LOCAL_LANGUAGES or len(after) > MAX_PARSE_BYTES:
        return False
    old, new = encoded or (before.encode("utf-8", "surrogatepass"), after.encode("utf-8", "surrogatepass"))
    starts = _starts(old, path, cache)
    if starts is None:
        return False
    bodies = cache.statements.bodies(path, old)
    changed = changed_range(old, new)
    in_body = clean_in_body(old, new, starts, bodies, language, changed) if bodies else None
    if in_body is not None:  # judged by the statements of a large definition's body (nested.py)
        cache.statements.put(path, new, in_body[0], bodies=in_body[1])
        cache.stretches.pop(path, None)
        return True
    planned = changed_regions(old, new, starts, changed)
    if planned is None:
        return False
    regions = [region for _, region in planned if region is not None]
    cuts = [inner_cut(new, region) for region in regions]
    trees: list[Parsed] = []
    judged = _reparsed(old, new, cuts, path, cache, trees)
    if judged is None:
        judged = statements_together([new[low:high] for low, high in cuts], language, trees=trees)
    if judged is None:  # the changed statements alone did not do: with the ones around them
        cuts = [(low, high) for low, high, _, _ in regions]
        judged = statements_apart([new[low:high] for low, high in cuts], language, trees=trees)
        if judged is None:
            return False
    if trees:
        cache.keep_stretch(path, trees[0])
    else:
        cache.stretches.pop(path, None)
    kept = _bodies_kept(bodies, cuts[0][0], cuts[-1][1], len(new) - len(old)) if cuts else {}
    if trees and cuts:
        kept.update(bodies_of(trees[0], cuts[0][0]))
    cache.statements.put(path, new, assembled_starts(planned, cuts, judged), bodies=kept)
    return True


def _bodies_kept(bodies: Bodies, low: int, high: int, shift: int) -> Bodies:
    """The bodies that outlive a change judged by the stretch ``[low, high)`` of the new text:
    those wholly before it, and those after it, moved by ``shift``."""
    kept = {key: body for key, body in bodies.items() if key + body.end <= low}
    kept.update((key + shift, body) for key, body in bodies.items() if key >= high - shift)
    return kept


def _reparsed(
    old: bytes, new: bytes, cuts: list[tuple[int, int]], path: str, cache: SyntaxCache, trees: list[Parsed]
) -> list[list[int]] | None:
    """The one changed stretch judged from the stretch the last change left (its tree kept in
    ``cache``), when that is exactly what this change changed: an edit to a statement edited
    just before — the usual next edit — is parsed incrementally, not again from its start."""
    kept = cache.stretches.get(path)
    if kept is None or len(cuts) != 1:
        return None
    low, high = cuts[0]
    before = old[low : high - (len(new) - len(old))]
    if before != kept.source:
        return None
    judged = statements_reparsed(kept, new[low:high])
    if judged is None:
        return None
    trees.append(judged[1])
    return [judged[0]]


def _starts(source: bytes, path: str, cache: SyntaxCache) -> list[int] | None:
    """Where the top-level statements of ``source`` start: carried from the last change, or
    read from the cached whole-file tree of exactly this source when it has no errors."""
    known = cache.statements.get(path, source)
    if known is not None:
        return known
    if cache.statements.broken_cuts(path, source) is not None:
        return None  # known to have errors: its statements cannot vouch for the file
    tree = cache.get_exact(path, source)
    if tree is None or tree.has_tree_errors:
        return None
    starts = statement_starts(tree)
    cache.statements.put(path, source, starts, bodies=bodies_of(tree))
    return starts


# --- files that already have syntax errors ---------------------------------------------------

#: A change to a file with syntax errors is judged by its region alone when the region (the
#: top-level nodes it touches and one on either side) is at most this large: its two parses must
#: cost less than the incremental reparse of the whole file they stand in for (~3 ms for 10k lines).
MAX_BROKEN_REGION_BYTES = 16 * 1024
#: Errors compared per side of a region; a region with more is judged the usual way.
MAX_REGION_ERRORS = 64


def errors_kept_by_region(
    before: str, after: str, path: str, cache: SyntaxCache, *, encoded: tuple[bytes, bytes] | None = None
) -> bool:
    """For a file known to have syntax errors (the gate found them and kept where its tree's
    top-level nodes start, at any column): True when the region the change touches — those nodes
    and one on either side — parsed on its own has the same errors before and after, placed alike
    relative to the change (:func:`error_keys`). The change then adds none and removes none: there
    is nothing new to say, the file keeps its errors, and the cut points are carried to the new
    content. False means "judge the usual way" (which parses the whole file)."""
    language = language_for(path)
    if language not in LOCAL_LANGUAGES or len(after) > MAX_PARSE_BYTES:
        return False
    old, new = encoded or (before.encode("utf-8", "surrogatepass"), after.encode("utf-8", "surrogatepass"))
    cuts = cache.statements.broken_cuts(path, old)
    if cuts is None:
        return False
    start, old_end, new_end = changed_range(old, new)
    low, high = _region(cuts, len(old), start, old_end)
    if high - low > MAX_BROKEN_REGION_BYTES:
        return False
    shift = new_end - old_end
    margin = _column(old, low)
    if margin and (_reaches_left_of(old, start, old_end, margin) or _reaches_left_of(new, start, new_end, margin)):
        return False  # a changed line left of the region's nodes may close the block around them
    parsed = _same_errors(old[low:high], new[low : high + shift], start - low, old_end - low, new_end - low, language)
    if parsed is None:
        return False
    region = [low + cut for cut in cut_points(parsed.tree.root_node, parsed.source)]
    later = [cut + shift for cut in cuts[bisect.bisect_left(cuts, high) :]]
    cache.statements.put(path, new, cuts[: bisect.bisect_left(cuts, low)] + region + later, broken=True)
    return True


def _region(cuts: list[int], size: int, start: int, old_end: int) -> tuple[int, int]:
    """``(low, high)``: from the start of the node before the one ``start`` is in to the end of
    the node after the one ``old_end`` is in (the file's start and end stand in for missing ones)."""
    edges = cuts if cuts and cuts[0] == 0 else [0, *cuts]
    low = edges[max(bisect.bisect_right(edges, start) - 2, 0)]
    after_end = bisect.bisect_left(edges, old_end) + 1
    return low, edges[after_end] if after_end < len(edges) else size


def _same_errors(old: bytes, new: bytes, start: int, old_end: int, new_end: int, language: str) -> Parsed | None:
    """The parse of ``new`` when it and ``old``, each parsed on its own, have the same errors at
    the same places relative to the change (``[start, old_end)`` in old, ``[start, new_end)`` in
    new), and no error node wraps the change (errors inside one are not told apart); else None."""
    parsed_old, parsed_new = parse_detached(old, language), parse_detached(new, language)
    if parsed_old is None or parsed_new is None:
        return None
    if _error_around(parsed_old.tree.root_node, start, old_end) or _error_around(
        parsed_new.tree.root_node, start, new_end
    ):
        return None
    old_errors, new_errors = parsed_old.errors(limit=MAX_REGION_ERRORS), parsed_new.errors(limit=MAX_REGION_ERRORS)
    if MAX_REGION_ERRORS in (len(old_errors), len(new_errors)):
        return None
    same = error_keys(old_errors, old, start, old_end) == error_keys(new_errors, new, start, new_end)
    return parsed_new if same else None


def cut_points(root: Node, source: bytes) -> list[int]:
    """Where a broken file may be cut into regions: the starts of its tree's top-level nodes that
    begin their line (at any column) — looking inside an ERROR node (a parser's recovery can wrap
    the rest of the file in one) and inside a node larger than MAX_BROKEN_REGION_BYTES (a class
    holding the file)."""
    out: list[int] = []
    stack = list(reversed(root.children))
    while stack:
        node = stack.pop()
        start = node.start_byte
        if node.child_count and (node.is_error or node.end_byte - start > MAX_BROKEN_REGION_BYTES):
            stack.extend(reversed(node.children))
        elif (not out or start > out[-1]) and not source[source.rfind(b"\n", 0, start) + 1 : start].strip():
            out.append(start)
    return out


def _column(source: bytes, offset: int) -> int:
    return offset - (source.rfind(b"\n", 0, offset) + 1)


def _reaches_left_of(source: bytes, start: int, end: int, margin: int) -> bool:
    """Does a non-blank line among those ``source[start:end]`` touches begin left of ``margin``?
    A region cut from inside a block is parsed apart from the block; such a line could end it (or,
    removed, join what follows to it), which the region alone cannot show."""
    first = source.rfind(b"\n", 0, start) + 1
    for line in source[first:end].split(b"\n"):
        text = line.lstrip(b" \t")
        if text.strip() and len(line) - len(text) < margin:
            return True
    return False


def _error_around(root: Node, start: int, end: int) -> bool:
    """Is there an error node that begins before ``start`` and reaches past ``end``? (Only
    subtrees holding an error are walked.)"""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.start_byte >= start or node.end_byte <= end or not node.has_error:
            continue
        if node.is_error:
            return True
        stack.extend(node.children)
    return False


ErrorKey = tuple[str, str, int, int]
_LINE_NUMBER = re.compile(r"line \d+")


def error_keys(
    issues: list[SyntaxIssue], source: bytes, start: int, end: int, *, changed_lines_alike: bool = False
) -> Counter[ErrorKey]:
    """Each error as the same whatever the change ``source[start:end]`` did around it: its kind
    and its place — line and column before the change, counted from the change's start inside it
    and from its end after it (so lines the change added or removed do not move it).

    ``changed_lines_alike``: an error on the changed lines is just "there" (the whole-file
    judgement, which only decides a warning: a parser's recovery names whatever text it choked
    on, and that text is what the change changed). The region judgement keeps places exact: it
    decides that there is nothing to check at all."""
    first = _line_column(source, start)
    last = _line_column(source, end)
    last_line = last[0] - 1 if end > start and last[1] == 1 else last[0]  # a change ending a line
    keys: Counter[ErrorKey] = Counter()
    for issue in issues:
        at = (issue.line, issue.column)
        # "unexpected 'text'" quotes the text, and "after line 12" moves with lines added above.
        kind = "unexpected" if issue.message.startswith("unexpected") else _LINE_NUMBER.sub("line", issue.message)
        if changed_lines_alike and first[0] <= issue.line <= last_line:
            keys[(kind, "changed", 0, 0)] += 1
        elif at < first:
            keys[(kind, "before", *at)] += 1
        elif at >= last:
            keys[(kind, "after", *_from(at, last))] += 1
        else:
            keys[(kind, "in", *_from(at, first))] += 1
    return keys


def _line_column(source: bytes, offset: int) -> tuple[int, int]:
    """1-based line and character column of ``offset``, as :class:`SyntaxIssue` counts them."""
    line_start = source.rfind(b"\n", 0, offset) + 1
    column = len(source[line_start:offset].decode("utf-8", "replace")) + 1
    return source.count(b"\n", 0, offset) + 1, column


def _from(at: tuple[int, int], origin: tuple[int, int]) -> tuple[int, int]:
    """``at`` counted from ``origin``: lines after it, and the column too on its own line."""
    line, column = at
    return (0, column - origin[1]) if line == origin[0] else (line - origin[0], column)
