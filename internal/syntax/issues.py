"""A syntax error as the gate, outline and the layout checks report it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SyntaxIssue:
    """One syntax error: 1-based line and column (in characters), and what the parser saw."""

    line: int
    column: int
    message: str

    def where(self) -> str:
        return f"{self.line}:{self.column}"
