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
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

from .languages import language_for
from .parse import MAX_PARSE_BYTES, SyntaxCache, changed_range, parse_detached

if TYPE_CHECKING:
    from tree_sitter import Node

#: Languages whose top-level statements are judged one by one (see the module docstring).
#: JavaScript/TypeScript are not: automatic semicolon insertion can join a line to the statement
#: above it.
LOCAL_LANGUAGES = frozenset({"python"})
#: A change whose statements span more than this is judged by the whole-file parse.
MAX_LOCAL_BYTES = 256 * 1024


def clean_by_statements(before: str, after: str, path: str, cache: SyntaxCache) -> bool:
    """True when the top-level statements the change touches parse cleanly on their own (the
    result then parses wherever it parsed before); False means "judge the usual way"."""
    language = language_for(path)
    if language not in LOCAL_LANGUAGES or len(after) > MAX_PARSE_BYTES:
        return False
    old = before.encode("utf-8", "surrogatepass")
    new = after.encode("utf-8", "surrogatepass")
    starts = _starts(old, path, cache)
    if starts is None:
        return False
    start, old_end, new_end = changed_range(old, new)
    # From the start of the statement the change begins in (the one before, when it begins
    # exactly at a statement's start) to the end of the first statement wholly after it: what a
    # change can join to (a trailing backslash, an unclosed bracket) is inside the region.
    first = bisect.bisect_left(starts, start) - 1
    last = bisect.bisect_right(starts, old_end) + 1
    low = starts[first] if first >= 0 else 0
    high = starts[last] if last < len(starts) else len(old)
    shift = new_end - old_end
    if high + shift - low > MAX_LOCAL_BYTES:
        return False
    region = parse_detached(new[low : high + shift], language)
    if region is None or region.has_tree_errors or region.errors(limit=1):
        return False
    inside = [low + offset for offset in _statement_starts(region.tree.root_node.children, region.source)]
    kept_before = starts[: max(first, 0)] if first >= 0 else []
    cache.statements.put(path, new, [*kept_before, *inside, *(s + shift for s in starts[last:])])
    return True


def _starts(source: bytes, path: str, cache: SyntaxCache) -> list[int] | None:
    """Where the top-level statements of ``source`` start: carried from the last change, or
    read from the cached whole-file tree of exactly this source when it has no errors."""
    known = cache.statements.get(path, source)
    if known is not None:
        return known
    tree = cache.get(path)
    if tree is None or tree.source != source or tree.has_tree_errors:
        return None
    starts = _statement_starts(tree.tree.root_node.children, source)
    cache.statements.put(path, source, starts)
    return starts


def _statement_starts(children: list[Node], source: bytes) -> list[int]:
    """The offsets where a top-level statement starts on a line of its own: column 0, after a
    line that does not continue into it (a trailing backslash). Anything else the parser lists
    at the top level (a stray line continuation) is not a place to cut the file."""
    return [
        child.start_byte
        for child in children
        if child.start_point[1] == 0
        and child.type != "line_continuation"
        and not source[max(child.start_byte - 3, 0) : child.start_byte].endswith((b"\\\n", b"\\\r\n"))
    ]
