"""Parsing with bounds, a per-session cache of trees, and the first syntax errors of a tree.

tree-sitter (and the grammar pack) is imported on first use only: a call that never parses never
loads it. A full parse of a 10k-line file takes tens of milliseconds; reparsing a changed text
from the previous tree (incremental parsing) takes a few, so :class:`SyntaxCache` keeps the last
trees of each file a session changed, per snapshot (the content before and after the last change),
so the gate never parses the same content twice.
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
#: Files whose trees are kept per session (the files it is changing).
MAX_CACHED_TREES = 16
#: Trees kept per file: the snapshots a change is judged between (before and after it), so the
#: next change's "before" is this one's "after", already parsed.
TREES_PER_FILE = 2
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
        """The first syntax errors at or after ``start``: the tree's own (an error node that began
        before ``start`` is reported where it reaches it), and for Python the indentation rules
        the grammar does not enforce, checked in the blocks overlapping ``source[start:end]``."""
        found = first_errors(self.tree.root_node, self.source, limit, start) if self.has_tree_errors else []
        if self.language == "python":
            from .layout import python_layout_issues

            stop = len(self.source) if end is None else end
            found += python_layout_issues(self.tree.root_node, self.source, start, stop, limit)
            found.sort(key=lambda issue: (issue.line, issue.column))
        return found[:limit]


@dataclass(frozen=True)
class Body:
    """The body of a large top-level definition (nested.py): its statements' ``column``, where
    their lines start (``starts``) and where the definition's last line ends (``end``), both
    counted from the definition's start, so a body moves with its definition unchanged."""

    column: int
    starts: tuple[int, ...]
    end: int


#: Bodies by the start of the top-level statement that holds each.
Bodies = dict[int, "Body"]


class StatementStarts:
    """Per file: the sources (TREES_PER_FILE of them, like trees) lists of top-level statement
    starts belong to. Bounded (LRU by file).

    A list marked ``broken`` belongs to a source known to have syntax errors: then it holds where
    the tree's top-level nodes start (any column), the cut points the gate judges such a file's
    changes by (local.py); otherwise the starts of statements on a line of their own."""

    def __init__(self, size: int = MAX_CACHED_TREES) -> None:
        self._size = size
        self._entries: OrderedDict[str, list[tuple[bytes, list[int], bool, Bodies]]] = OrderedDict()

    def get(self, key: str, source: bytes) -> list[int] | None:
        """The statement starts of ``source``, a source without known errors."""
        found = self._find(key, source, broken=False)
        return found[0] if found is not None else None

    def bodies(self, key: str, source: bytes) -> Bodies:
        """The bodies of the large definitions of ``source`` kept with its starts (nested.py)."""
        found = self._find(key, source, broken=False)
        return found[1] if found is not None else {}

    def broken_cuts(self, key: str, source: bytes) -> list[int] | None:
        """The cut points of ``source``, when it is known to have syntax errors."""
        found = self._find(key, source, broken=True)
        return found[0] if found is not None else None

    def _find(self, key: str, source: bytes, *, broken: bool) -> tuple[list[int], Bodies] | None:
        for known, starts, is_broken, bodies in self._entries.get(key, ()):
            if is_broken == broken and known == source:
                self._entries.move_to_end(key)
                return starts, bodies
        return None

    def put(
        self, key: str, source: bytes, starts: list[int], *, broken: bool = False, bodies: Bodies | None = None
    ) -> None:
        kept = [entry for entry in self._entries.get(key, ()) if entry[0] != source]
        self._entries[key] = [*kept[len(kept) - (TREES_PER_FILE - 1) :], (source, starts, broken, bodies or {})]
        self._entries.move_to_end(key)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)


class SyntaxCache:
    """The last trees per file (TREES_PER_FILE snapshots), so the next parse of that file is
    incremental and a snapshot already parsed is not parsed again, and the top-level statement
    starts the gate's fast paths carry from change to change (local.py). Bounded (LRU by file)."""

    def __init__(self, size: int = MAX_CACHED_TREES) -> None:
        self._size = size
        self._trees: OrderedDict[str, list[Parsed]] = OrderedDict()  # per file, newest last
        self.statements = StatementStarts(size)
        #: Per file, the last stretch of statements the fast path judged clean on its own, with
        #: its tree: the next change to the same statements is parsed from it (local.py).
        self.stretches: OrderedDict[str, Parsed] = OrderedDict()

    def keep_stretch(self, key: str, parsed: Parsed) -> None:
        self.stretches[key] = parsed
        self.stretches.move_to_end(key)
        while len(self.stretches) > self._size:
            self.stretches.popitem(last=False)

    def get(self, key: str) -> Parsed | None:
        """The newest tree of ``key`` (the seed of its next incremental parse)."""
        trees = self._trees.get(key)
        if not trees:
            return None
        self._trees.move_to_end(key)
        return trees[-1]

    def get_exact(self, key: str, source: bytes) -> Parsed | None:
        """The tree of exactly ``source``, when one of ``key``'s kept snapshots is it."""
        for parsed in self._trees.get(key, ()):
            if parsed.source == source:
                self._trees.move_to_end(key)
                return parsed
        return None

    def put(self, key: str, parsed: Parsed) -> None:
        kept = [p for p in self._trees.get(key, ()) if p.source != parsed.source]
        self._trees[key] = [*kept[len(kept) - (TREES_PER_FILE - 1) :], parsed]
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


def reparse_detached(previous: Parsed, source: bytes) -> Parsed | None:
    """A parse of ``source`` on its own, seeded with the tree of ``previous`` (a piece of a
    file that ``source`` changes in one range): tree-sitter reparses what the change touches and
    reuses the rest. None as :func:`parse_detached`, or when the change is too wide to reuse."""
    if looks_deep(source):
        return None
    old_tree = _edited_copy(previous, source)
    if old_tree is None:
        return None
    try:
        parser = _parser(previous.language)
    except Exception:  # a grammar the installed pack lacks
        return None
    tree = _bounded_parse(parser, source, old_tree)
    return None if tree is None else Parsed(previous.language, source, tree)


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


def first_errors(root: Node, source: bytes, limit: int, start: int = 0) -> list[SyntaxIssue]:
    """The first ``limit`` ERROR or MISSING nodes at or after byte ``start``, in document order
    (only subtrees that hold an error and reach ``start`` are walked). An ERROR node that begins
    before ``start`` and goes on past it is reported at its first piece from ``start`` on: the
    parser's recovery often wraps lines above a broken change (an import at the top of the file)
    into the error, and the change is where the model has to look."""
    found: list[SyntaxIssue] = []
    stack = [root]
    while stack and len(found) < limit:
        node = stack.pop()
        if node.end_byte < start or (node.end_byte == start and node.start_byte < start):
            continue  # wholly before the change
        if node.is_missing:
            found.append(_issue(node, source, f"missing {node.type!r}"))
            continue
        if node.is_error:
            piece = _piece_from(node, start) if node.start_byte < start else node
            found.append(_issue(piece, source, _unexpected(piece, source)))
            continue
        if node.has_error:
            stack.extend(reversed(node.children))
    return found


def _piece_from(node: Node, start: int) -> Node:
    """The first descendant of ``node`` that begins at or after ``start``, going down through the
    one that straddles it (a token the change starts inside is that token)."""
    at = node
    while True:
        following = next((child for child in at.children if child.end_byte > start), None)
        if following is None:
            return at
        if following.start_byte >= start:
            return following
        at = following


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
