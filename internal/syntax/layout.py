"""Python's indentation rules, which tree-sitter's Python grammar does not enforce.

The grammar accepts an empty block and a statement indented deeper than its siblings (it parses
``if b:\\n    # c\\nreturn x\\n    return 0`` without an error), so a replacement that breaks
the indentation would pass. This checks, inside a byte range, what the CPython compiler checks:
every block holds a statement, and the statements that start a line in one block (the module
included) start at the same column. Only nodes overlapping the range are visited.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .parse import SyntaxIssue

if TYPE_CHECKING:
    from tree_sitter import Node

_BLOCKS = ("module", "block")


def python_layout_issues(root: Node, source: bytes, start: int, end: int, limit: int) -> list[SyntaxIssue]:
    """Indentation errors in blocks overlapping ``source[start:end]`` (at most ``limit``)."""
    found: list[SyntaxIssue] = []
    stack = [root]
    while stack and len(found) < limit:
        node = stack.pop()
        if node.type in _BLOCKS:
            found.extend(_block_issues(node, source))
        for child in reversed(node.named_children):
            if child.end_byte >= start and child.start_byte <= end:
                stack.append(child)
    found.sort(key=lambda issue: (issue.line, issue.column))
    return found[:limit]


def _block_issues(block: Node, source: bytes) -> list[SyntaxIssue]:
    statements = [c for c in block.named_children if c.type != "comment"]
    if not statements:
        if block.type == "module":
            return []
        header = block.parent.start_point[0] + 1 if block.parent is not None else block.start_point[0] + 1
        return [SyntaxIssue(header + 1, 1, f"expected an indented block after line {header}")]
    expected = 0 if block.type == "module" else None
    issues = []
    for statement in statements:
        column = _line_start_column(statement, source)
        if column is None:
            continue
        if expected is None:
            expected = column
        elif column != expected:
            what = "unexpected indent" if column > expected else "unindent does not match the block's indentation"
            issues.append(SyntaxIssue(statement.start_point[0] + 1, column + 1, what))
    return issues


def _line_start_column(node: Node, source: bytes) -> int | None:
    """The node's column when only whitespace precedes it on its line, else None."""
    line_start = source.rfind(b"\n", 0, node.start_byte) + 1
    prefix = source[line_start : node.start_byte]
    return len(prefix) if not prefix.strip() else None
