"""The syntax gate: does a change leave a file that parsed cleanly unparseable?

Every tool that changes a file's content (edit, multiedit, patch, write, symbol_edit) asks
:func:`judge` with the text before and after. The verdict is one of:

- ``None``: nothing to say (no grammar for the file, too large, too slow, or the result parses);
- ``breaks``: the file parsed cleanly before and does not after — refused by default;
- ``warns``: a new file with errors, or a file that already had errors and gains new ones — the
  change goes through with the new errors named.

The result parse is done first: a change whose result parses (the common case) never needs the
file's old state parsed at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .issues import SyntaxIssue
from .parse import Parsed, SyntaxCache, changed_range, parse

#: What the gate does with a change that breaks a clean file (config ``[edit] syntax_gate``).
GateMode = Literal["refuse", "warn", "off"]
GATE_MODES: tuple[str, ...] = ("refuse", "warn", "off")
#: Lines shown around the first error of a refused change.
CONTEXT_LINES = 2


@dataclass(frozen=True)
class Verdict:
    kind: Literal["breaks", "warns"]
    language: str
    #: The errors the change introduces (first ones, in file order).
    errors: list[SyntaxIssue]
    after: Parsed

    def where(self) -> str:
        return self.errors[0].where() if self.errors else "?"

    def summary(self) -> str:
        listed = "; ".join(f"line {e.where()}: {e.message}" for e in self.errors)
        return listed or "a syntax error"


def judge(before: str | None, after: str, path: str, *, cache: SyntaxCache | None = None) -> Verdict | None:
    """Judge replacing ``before`` (None for a new file) with ``after`` in ``path``."""
    parsed_after = parse(after, path, cache=cache)
    if parsed_after is None:
        return None
    if before is None:
        start, old_end, new_end = 0, 0, len(parsed_after.source)
    else:
        start, old_end, new_end = changed_range(before.encode("utf-8", "surrogatepass"), parsed_after.source)
    after_errors = parsed_after.errors(start, new_end)
    if not after_errors:
        return None
    if before is None:
        return Verdict("warns", parsed_after.language, after_errors, parsed_after)
    parsed_before = parse(before, path, cache=cache)
    if parsed_before is None:
        return None
    before_errors = parsed_before.errors(start, old_end)
    if not before_errors:
        return Verdict("breaks", parsed_after.language, after_errors, parsed_after)
    known = {_signature(e, parsed_before.source) for e in before_errors}
    new = [e for e in after_errors if _signature(e, parsed_after.source) not in known]
    return Verdict("warns", parsed_after.language, new, parsed_after) if new else None


def _signature(issue: SyntaxIssue, source: bytes) -> tuple[str, str]:
    """An error as the same whatever moved above it: its message and its line's text."""
    lines = source.split(b"\n", issue.line)
    text = lines[issue.line - 1] if issue.line - 1 < len(lines) else b""
    return issue.message, text.strip().decode("utf-8", "replace")


def would_be_lines(text: str, line: int, context: int = CONTEXT_LINES) -> str:
    """The lines around ``line`` (1-based) of ``text``, numbered as view numbers them."""
    lines = text.split("\n")
    first = max(1, line - context)
    last = min(len(lines), line + context)
    marked = []
    for number in range(first, last + 1):
        marker = ">" if number == line else " "
        marked.append(f"{marker}{number:5d}|{lines[number - 1]}")
    return "\n".join(marked)
