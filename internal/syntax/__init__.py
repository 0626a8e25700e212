"""The syntax layer: tree-sitter parses of files, without a language server.

- :mod:`.languages`: which grammar reads a file (by extension);
- :mod:`.parse`: bounded parsing (size and time limits), a per-session cache of trees for
  incremental reparsing, and the first syntax errors of a tree as line:column;
- :mod:`.gate`: the syntax gate every content-changing tool runs;
- :mod:`.outline`: symbols (kind, name path, line range, signature line) of a file.

Importing this package does not import tree-sitter: that happens on the first parse. The gate
loads when first asked for: every session's context holds a :class:`SyntaxCache`, few calls judge
a change.
"""

from typing import TYPE_CHECKING, Any

from .issues import SyntaxIssue
from .languages import language_for
from .parse import MAX_PARSE_BYTES, MAX_PARSE_SECONDS, Parsed, SyntaxCache, inside_literal, parse

if TYPE_CHECKING:
    from .gate import GATE_MODES, GateMode, Verdict, judge, would_be_lines

_FROM_GATE = frozenset({"GATE_MODES", "GateMode", "Verdict", "judge", "would_be_lines"})


def __getattr__(name: str) -> Any:
    if name in _FROM_GATE:
        from . import gate

        return getattr(gate, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "GATE_MODES",
    "MAX_PARSE_BYTES",
    "MAX_PARSE_SECONDS",
    "GateMode",
    "Parsed",
    "SyntaxCache",
    "SyntaxIssue",
    "Verdict",
    "inside_literal",
    "judge",
    "language_for",
    "parse",
    "would_be_lines",
]
