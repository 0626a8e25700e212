"""Python's indentation rules, which tree-sitter's Python grammar does not enforce.

The grammar accepts an empty block and a statement indented deeper than its siblings (it parses
``if b:\\n    # c\\nreturn x\\n    return 0`` without an error), so a replacement that breaks
the indentation would pass. This checks, inside a byte range, what the CPython compiler checks:
every block holds a statement, and the statements that start a line in one block (the module
included) start at the same column. Only nodes overlapping the range are visited.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .issues import SyntaxIssue

if TYPE_CHECKING:
    from tree_sitter import Node, TreeCursor

_BLOCKS = ("module", "block")
#: The nodes a block can be found in (Python's compound statements and their clauses; the set
#: of parents of every ``block`` in the grammar). Only these are descended into: the rest —
#: assignments, calls, expressions — hold no block at any depth, and walking them was most of the
#: check's cost on a 10k-statement module. An ERROR node is descended into, to be safe.
_HOLDS_BLOCKS = frozenset({
    "module", "block", "if_statement", "elif_clause", "else_clause", "for_statement", "while_statement",
    "try_statement", "except_clause", "except_group_clause", "finally_clause", "with_statement",
    "function_definition", "class_definition", "decorated_definition", "match_statement", "case_clause", "ERROR",
})  # fmt: skip


def python_layout_issues(root: Node, source: bytes, start: int, end: int, limit: int) -> list[SyntaxIssue]:
    """Indentation errors in blocks overlapping ``source[start:end]`` (at most ``limit``).

    Only the statements overlapping the range are compared with their block's first statement,
    so a change in a 10k-line module costs what the change touches, not the module."""
    found: list[SyntaxIssue] = []
    stack = [root]
    while stack and len(found) < limit:
        node = stack.pop()
        if node.type not in _HOLDS_BLOCKS:
            continue
        children = _children_to_check(node, start, end)
        if node.type in _BLOCKS:
            found.extend(_block_issues(node, children, source))
        elif node.type in _WITH_CLAUSES:
            found.extend(_clause_issues(node, source))
        stack.extend(reversed(children))
    found.sort(key=lambda issue: (issue.line, issue.column))
    return found[:limit]


#: Compound statements whose clauses (``else:``, ``elif``, ``except``, ``finally:``) must start at
#: the statement's own column; the grammar accepts them at any column (an ``else:`` left behind
#: when its ``if`` line was removed attaches to the ``while`` above it).
_WITH_CLAUSES = frozenset({"if_statement", "for_statement", "while_statement", "try_statement"})
_CLAUSES = frozenset({"elif_clause", "else_clause", "except_clause", "except_group_clause", "finally_clause"})


def _clause_issues(statement: Node, source: bytes) -> list[SyntaxIssue]:
    expected = _line_start_column(statement, source)
    if expected is None:
        return []
    issues = []
    for clause in statement.children:
        if clause.type in _CLAUSES:
            column = _line_start_column(clause, source)
            if column is not None and column != expected:
                what = "unexpected indent" if column > expected else "unindent does not match the statement's"
                issues.append(SyntaxIssue(clause.start_point[0] + 1, column + 1, what))
    return issues


def _children_to_check(node: Node, start: int, end: int) -> list[Node]:
    """What :func:`_overlapping` returns. A node wholly inside the range has all its named
    children overlapping it, and the one list call is several times cheaper than the cursor (the
    gate's fast path checks whole stretches, stretches.py)."""
    if start <= node.start_byte and node.end_byte <= end:
        return list(node.named_children)
    return _overlapping(node, start, end)


def _overlapping(node: Node, start: int, end: int) -> list[Node]:
    """The named children of ``node`` that overlap or touch ``[start, end]``, the one after them
    (a change can leave the statement after it misplaced) and the one before them (a change can
    empty a block that ends where the change begins: the ``if x:`` whose only statement was
    removed). A cursor walks them: the Node sibling and child-for-byte calls are slower, and the
    latter crashes the process on some nodes (py-tree-sitter 0.26.1)."""
    cursor = node.walk()
    if cursor.goto_first_child_for_byte(max(0, start - 1)) is None:
        # Every child ends before the range: the last one may hold the emptied block.
        return [last] if cursor.goto_last_child() and (last := _before(cursor)) is not None else []
    out: list[Node] = []
    if cursor.goto_previous_sibling():
        previous = _before(cursor)
        if previous is not None:
            out.append(previous)
        cursor.reset(node)
        cursor.goto_first_child_for_byte(max(0, start - 1))
    while True:
        child = cursor.node
        if child is not None and child.is_named:
            if child.start_byte > end:
                if child.type != "comment":
                    out.append(child)
                    break
            else:
                out.append(child)
        if not cursor.goto_next_sibling():
            break
    return out


def _before(cursor: TreeCursor) -> Node | None:
    """The named child at ``cursor`` or, going back, the first that is not a comment (None if none)."""
    while True:
        child = cursor.node
        if child is not None and child.is_named and child.type != "comment":
            return child
        if not cursor.goto_previous_sibling():
            return None


def _first_statement(block: Node) -> Node | None:
    child = block.named_child(0) if block.named_child_count else None
    while child is not None and child.type == "comment":
        child = child.next_named_sibling
    return child


def _block_issues(block: Node, children: list[Node], source: bytes) -> list[SyntaxIssue]:
    first = _first_statement(block)
    if first is None:
        if block.type == "module":
            return []
        header = block.parent.start_point[0] + 1 if block.parent is not None else block.start_point[0] + 1
        return [SyntaxIssue(header + 1, 1, f"expected an indented block after line {header}")]
    expected = 0 if block.type == "module" else _line_start_column(first, source)
    issues = []
    for statement in children:
        if statement.type == "comment":
            continue
        column = _line_start_column(statement, source)
        if column is None or expected is None:
            continue
        if column != expected:
            what = "unexpected indent" if column > expected else "unindent does not match the block's indentation"
            issues.append(SyntaxIssue(statement.start_point[0] + 1, column + 1, what))
    return issues


#: A statement further right than this (in bytes) is not compared with its block's: only code
#: that is not indentation stands so far right (``a=1;b=2;…`` on one long line), and reading back
#: to the line's start for each of 200 000 such statements was quadratic (4 s for 800 KB).
MAX_INDENT_COLUMN = 4096


def _line_start_column(node: Node, source: bytes) -> int | None:
    """The node's column when only whitespace precedes it on its line, else None (None too past
    MAX_INDENT_COLUMN)."""
    column = node.start_point[1]
    if column > MAX_INDENT_COLUMN:
        return None
    start = node.start_byte
    return column if not source[start - column : start].strip() else None
