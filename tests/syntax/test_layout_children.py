"""The indentation check's shortcut for nodes wholly inside the checked range lists the same
children as its cursor walk, so its verdicts are the walk's."""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Iterator
from typing import TYPE_CHECKING

from agent_toolsmith.syntax.layout import _children_to_check, _overlapping, python_layout_issues
from agent_toolsmith.syntax.parse import parse
from hypothesis import given, settings
from hypothesis import strategies as st

if TYPE_CHECKING:
    from tree_sitter import Node

#: A real module, with an empty block and a misindented statement spliced in so that the check
#: has issues to find.
SOURCE = inspect.getsource(textwrap) + "\nif x:\n    # nothing\ny = 1\ndef f():\n    a = 1\n      b = 2\n"
PARSED = parse(SOURCE, "m.py")


def _nodes() -> Iterator[Node]:
    assert PARSED is not None
    stack = [PARSED.tree.root_node]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.named_children)


@settings(deadline=None, max_examples=60)
@given(st.integers(0, len(SOURCE)), st.integers(0, 4000))
def test_the_children_of_a_node_inside_the_range_are_those_the_walk_finds(start: int, width: int) -> None:
    end = min(start + width, len(SOURCE))
    checked = 0
    for node in _nodes():
        if start <= node.start_byte and node.end_byte <= end and checked < 300:
            checked += 1
            shortcut = [n.id for n in _children_to_check(node, start, end)]
            assert shortcut == [n.id for n in _overlapping(node, start, end)]


def test_the_whole_range_finds_the_spliced_issues() -> None:
    assert PARSED is not None
    issues = python_layout_issues(PARSED.tree.root_node, PARSED.source, 0, len(PARSED.source), 5)
    messages = {issue.message for issue in issues}
    assert any(m.startswith("expected an indented block") for m in messages), issues
    assert "unexpected indent" in messages, issues
