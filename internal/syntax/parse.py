"""Parsing with bounds, a per-session cache of trees, and the first syntax errors of a tree.

tree-sitter (and the grammar pack) is imported on first use only: a call that never parses never
loads it. A full parse of a 10k-line file takes tens of milliseconds; reparsing a changed text
from the previous tree (incremental parsing) takes a few, so :class:`SyntaxCache` keeps the last
tree of each file a session changed, keyed by content.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..affix import common_prefix_length, common_suffix_length
from .issues import SyntaxIssue
from .languages import language_for
from .probe import looks_deep, probe

if TYPE_CHECKING:
    from tree_sitter import Node, Tree

#: Files larger than this are not parsed (the gate then does not judge them).
MAX_PARSE_BYTES = 4 * 1024 * 1024
#: A parse still running after this long is abandoned (the gate then does not judge).
MAX_PARSE_SECONDS = 2.0
#: Bytes handed to the parser per read; the deadline is checked between reads.
PARSE_CHUNK_BYTES = 64 * 1024
#: A change spanning more bytes than this is parsed afresh: reusing the old tree across a wide
#: edited range (a patch or multiedit touching the whole file) was measured 5× slower than a full
#: parse, while a small edit's incremental parse is 10× faster than one.
MAX_INCREMENTAL_RANGE_BYTES = 64 * 1024
#: Trees kept per session (the files it is changing).
MAX_CACHED_TREES = 16
#: Syntax errors listed per file in a result.
MAX_ERRORS_LISTED = 5


@dataclass(frozen=True)
class Parsed:
    """A parse of ``source`` (UTF-8 bytes of the LF-normalised text)."""

    language: str
    source: bytes
    tree: Tree

    @property
    def has_tree_errors(self) -> bool:
        return bool(self.tree.root_node.has_error)

    def errors(self, start: int = 0, end: int | None = None, limit: int = MAX_ERRORS_LISTED) -> list[SyntaxIssue]:
        """The first syntax errors: the tree's own, and for Python the indentation rules the
        grammar does not enforce, checked in the blocks overlapping ``source[start:end]``."""
        found = first_errors(self.tree.root_node, self.source, limit) if self.has_tree_errors else []
        if self.language == "python":
            from .layout import python_layout_issues

            stop = len(self.source) if end is None else end
            found += python_layout_issues(self.tree.root_node, self.source, start, stop, limit)
            found.sort(key=lambda issue: (issue.line, issue.column))
        return found[:limit]


class StatementStarts:
    """Per file: the source a list of top-level statement starts belongs to. Bounded (LRU)."""

    def __init__(self, size: int = MAX_CACHED_TREES) -> None:
        self._size = size
        self._entries: OrderedDict[str, tuple[bytes, list[int]]] = OrderedDict()

    def get(self, key: str, source: bytes) -> list[int] | None:
        entry = self._entries.get(key)
        if entry is None or entry[0] != source:
            return None
        self._entries.move_to_end(key)
        return entry[1]

    def put(self, key: str, source: bytes, starts: list[int]) -> None:
        self._entries[key] = (source, starts)
        self._entries.move_to_end(key)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)


class SyntaxCache:
    """The last tree per file, so the next parse of that file is incremental, and the top-level
    statement starts the gate's fast path carries from change to change (local.py). Bounded (LRU)."""

    def __init__(self, size: int = MAX_CACHED_TREES) -> None:
        self._size = size
        self._trees: OrderedDict[str, tuple[str, Parsed]] = OrderedDict()
        self.statements = StatementStarts(size)

    def get(self, key: str) -> Parsed | None:
        entry = self._trees.get(key)
        if entry is None:
            return None
        self._trees.move_to_end(key)
        return entry[1]

    def put(self, key: str, parsed: Parsed) -> None:
        self._trees[key] = (parsed.language, parsed)
        self._trees.move_to_end(key)
        while len(self._trees) > self._size:
            self._trees.popitem(last=False)


def _parser(language: str) -> Any:
    from tree_sitter_language_pack import get_parser

    return get_parser(language)  # type: ignore[arg-type]


def parse(text: str, path: str, *, cache: SyntaxCache | None = None) -> Parsed | None:
    """The tree of ``text`` read as ``path``'s language; None when no grammar reads it, the
    text is larger than :data:`MAX_PARSE_BYTES`, or parsing ran past :data:`MAX_PARSE_SECONDS`.

    With ``cache``, the file's previous tree (if any) seeds an incremental parse, and the new
    tree replaces it. A text that looks deeply nested is parsed in a child process first
    (probe.py): :class:`~agent_toolsmith.errors.ParseFailed` when the parser crashed there.
    """
    language = language_for(path)
    if language is None:
        return None
    if len(text) > MAX_PARSE_BYTES:  # at least as many bytes: no need to encode it to know
        return None
    source = text.encode("utf-8", "surrogatepass")
    if len(source) > MAX_PARSE_BYTES:
        return None
    previous = cache.get(path) if cache is not None else None
    if previous is not None and previous.language == language and previous.source == source:
        return previous
    try:
        parser = _parser(language)
    except Exception:  # a grammar the installed pack lacks: nothing to judge with
        return None
    if looks_deep(source) and not probe(source, language, path):
        return None  # the parse ran past MAX_PARSE_SECONDS in the child: it would here too
    old_tree = _edited_copy(previous, source) if previous is not None and previous.language == language else None
    tree = _bounded_parse(parser, source, old_tree)
    if tree is None:
        return None
    parsed = Parsed(language, source, tree)
    if cache is not None:
        cache.put(path, parsed)
    return parsed


def parse_detached(source: bytes, language: str) -> Parsed | None:
    """A parse of ``source`` on its own (no cache): a piece of a file, judged apart from it.
    None for a piece that looks deeply nested: the whole file's parse (with its probe) decides."""
    return None if looks_deep(source) else parse_in_process(source, language)


def parse_in_process(source: bytes, language: str) -> Parsed | None:
    """A parse of ``source`` here, whatever it looks like (the probe's child parses this way)."""
    try:
        parser = _parser(language)
    except Exception:  # a grammar the installed pack lacks
        return None
    tree = _bounded_parse(parser, source, None)
    return None if tree is None else Parsed(language, source, tree)


def _bounded_parse(parser: Any, source: bytes, old_tree: Tree | None) -> Tree | None:
    deadline = time.monotonic() + MAX_PARSE_SECONDS
    late = False

    def read(offset: int, _point: Any) -> bytes:
        nonlocal late
        if time.monotonic() > deadline:
            late = True
            return b""  # ends the input: the parse stops soon and its tree is discarded
        return source[offset : offset + PARSE_CHUNK_BYTES]

    tree = parser.parse(read, old_tree) if old_tree is not None else parser.parse(read)
    return None if late or tree is None else tree


def _edited_copy(previous: Parsed, source: bytes) -> Tree | None:
    """The previous tree, told which byte range changed (one range: common prefix and suffix);
    None when the range is too wide for reuse to pay (see MAX_INCREMENTAL_RANGE_BYTES)."""
    old = previous.source
    start, old_end, new_end = changed_range(old, source)
    if max(old_end, new_end) - start > MAX_INCREMENTAL_RANGE_BYTES:
        return None
    tree = previous.tree.copy()
    tree.edit(
        start_byte=start,
        old_end_byte=old_end,
        new_end_byte=new_end,
        start_point=_point(old, start),
        old_end_point=_point(old, old_end),
        new_end_point=_point(source, new_end),
    )
    return tree


def changed_range(old: bytes, new: bytes) -> tuple[int, int, int]:
    """``(start, old_end, new_end)``: the one byte range that differs between ``old`` and ``new``."""
    start = common_prefix_length(old, new)
    suffix = common_suffix_length(old, new, min(len(old), len(new)) - start)
    return start, len(old) - suffix, len(new) - suffix


def _point(source: bytes, offset: int) -> tuple[int, int]:
    row = source.count(b"\n", 0, offset)
    return row, offset - (source.rfind(b"\n", 0, offset) + 1)


def first_errors(root: Node, source: bytes, limit: int) -> list[SyntaxIssue]:
    """The first ``limit`` ERROR or MISSING nodes, in document order (only subtrees that hold
    an error are walked)."""
    found: list[SyntaxIssue] = []
    stack = [root]
    while stack and len(found) < limit:
        node = stack.pop()
        if node.is_missing:
            found.append(_issue(node, source, f"missing {node.type!r}"))
            continue
        if node.is_error:
            found.append(_issue(node, source, _unexpected(node, source)))
            continue
        if node.has_error:
            stack.extend(reversed(node.children))
    return found


def _unexpected(node: Node, source: bytes) -> str:
    snippet = source[node.start_byte : min(node.end_byte, node.start_byte + 40)].decode("utf-8", "replace")
    snippet = snippet.split("\n", 1)[0].strip()
    return f"unexpected {snippet!r}" if snippet else "unexpected input"


def _issue(node: Node, source: bytes, message: str) -> SyntaxIssue:
    row, col = node.start_point
    line_start = source.rfind(b"\n", 0, node.start_byte) + 1
    column = len(source[line_start : line_start + col].decode("utf-8", "replace")) + 1
    return SyntaxIssue(row + 1, column, message)


def inside_literal(parsed: Parsed, offsets: list[int]) -> bool:
    """Is any of ``offsets`` (byte offsets in ``parsed.source``) inside a string literal? The
    gate's retries must never change what a string says.

    The nodes around an offset are found going down from the root with a cursor: going up with
    ``Node.parent`` costs a walk from the root per step in tree-sitter, quadratic in the nesting."""
    for offset in offsets:
        cursor = parsed.tree.walk()
        while cursor.goto_first_child_for_byte(offset) is not None:
            node = cursor.node
            if node is None or node.start_byte >= offset:
                break  # the child after the offset (it falls between children): nothing below holds it
            kind = node.type
            if "string" in kind or "heredoc" in kind or "template" in kind:
                return True
    return False
