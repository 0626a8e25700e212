"""How deeply input nests, measured without recursion: a bracket count over raw bytes (a fast
estimate, in C), and the exact depth of loaded JSON. The syntax layer's probe (syntax/probe.py)
and the notebook reader (documents/notebook.py) bound what they hand to recursive code with them:
a parser, a grammar, ``json``, nbformat.
"""

from __future__ import annotations

from itertools import accumulate, count
from operator import sub
from typing import Any

_BRACKETS = b"()[]{}"
#: Every byte but the brackets, for bytes.translate to delete.
_NOT_BRACKETS = bytes(b for b in range(256) if b not in _BRACKETS)
#: An opening bracket counts 2, a closing one 0: the running sum less the count is the level.
_STEPS = bytes.maketrans(_BRACKETS, b"\x02\x00\x02\x00\x02\x00")
#: Brackets looked at per block by :func:`_shallow_by_blocks`.
_BLOCK = 64


def brackets_nest_deeper(source: bytes, limit: int) -> bool:
    """Do the brackets ``()[]{}`` of ``source`` nest deeper than ``limit`` (kinds not told apart,
    those in strings and comments counted too)? A translate and a count per block of brackets;
    the exact level of every bracket only when a block could reach the limit."""
    steps = source.translate(_STEPS, _NOT_BRACKETS)
    return not _shallow_by_blocks(steps, limit) and bracket_depth(steps) > limit


def _shallow_by_blocks(steps: bytes, limit: int) -> bool:
    """True when no block of _BLOCK brackets can pass ``limit``: the level at its start above the
    lowest before it, plus its opening brackets, is at most the limit in every block."""
    level = low = 0
    for at in range(0, len(steps), _BLOCK):
        block = steps[at : at + _BLOCK]
        opening = block.count(2)
        if level - low + opening > limit:
            return False
        low = min(low, level - (len(block) - opening))  # no lower than if its closers came first
        level += 2 * opening - len(block)
    return True


def bracket_depth(steps: bytes) -> int:
    """The deepest nesting in ``steps`` (brackets as :func:`brackets` gives them), counted from
    the lowest level reached before it, so that stray closing brackets in front hide nothing."""
    levels = list(map(sub, accumulate(steps), count(1)))
    return max(0, max(map(sub, levels, accumulate(levels, min, initial=0)), default=0))


def brackets(source: bytes) -> bytes:
    """The brackets of ``source`` as :func:`bracket_depth` reads them."""
    return source.translate(_STEPS, _NOT_BRACKETS)


def json_deeper(value: Any, limit: int) -> bool:
    """Does loaded JSON ``value`` nest arrays and objects more than ``limit`` deep (a top-level
    object is depth 1)? An explicit stack, stopping at the first container past the limit."""
    if not isinstance(value, dict | list):
        return False
    stack: list[tuple[dict[str, Any] | list[Any], int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        for item in node.values() if isinstance(node, dict) else node:
            if isinstance(item, dict | list):
                if depth + 1 > limit:
                    return True
                stack.append((item, depth + 1))
    return False
