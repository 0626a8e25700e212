"""The syntax gate as the file tools apply it: judge a change, refuse or warn; for an edit, keep
string literals as written when the mid-line rule would indent inside one. See
internal/syntax/gate.py and docs/structure.md."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...errors import ToolError
from ...fsutil.textio import TextFile
from ...syntax import Verdict, inside_literal, judge, parse, would_be_lines
from ...textmatch import EditOutcome, EditRequest, apply_edits
from .context import FileServices


def syntax_verdict(ctx: FileServices, path: Path, before: str | None, after: str) -> Verdict | None:
    """The gate's verdict on changing ``path`` from ``before`` (None: a new file) to ``after``;
    None when the gate is off or has nothing to say."""
    if ctx.config.syntax_gate == "off":
        return None
    return judge(before, after, str(path), cache=ctx.syntax_trees)


def gate_refuses(ctx: FileServices, verdict: Verdict | None) -> bool:
    return verdict is not None and verdict.kind == "breaks" and ctx.config.syntax_gate == "refuse"


def syntax_refusal(verdict: Verdict, display: str, after: str, tool: str) -> ToolError:
    """The refusal of a change that leaves a clean file unparseable: where, the lines as they
    would be, and how to proceed."""
    first = verdict.errors[0] if verdict.errors else None
    together = "one patch" if tool == "patch" else "one multiedit call (judged on its final result)"
    text = (
        f"Syntax check ({verdict.language}): this {tool} would leave {display} unparseable at line "
        f"{verdict.where()} ({verdict.summary()}). The file parsed cleanly before, so nothing was written."
    )
    if first is not None:
        text += f"\nThe lines as they would be:\n{would_be_lines(after, first.line)}"
    text += (
        "\nTo proceed: fix the new text so the result parses (match the indentation of the surrounding "
        f"lines; view shows them). If this change is only valid together with other changes, make them all in "
        f"{together}."
    )
    metadata: dict[str, Any] = {"error": "syntax_error", "language": verdict.language}
    if first is not None:
        metadata.update(line=first.line, column=first.column)
    return ToolError(text, metadata)


def syntax_warning(verdict: Verdict | None, *, new_file: bool = False) -> str:
    """The note for a change the gate lets through with errors."""
    if verdict is None:
        return ""
    if verdict.kind == "breaks":
        why = "the file parsed cleanly before; the syntax gate is set to warn"
    elif new_file:
        why = "a new file"
    else:
        why = "the file already had syntax errors; these are new"
    return f"\nWarning: syntax errors ({verdict.language}, {why}): {verdict.summary()}."


def gate_change(ctx: FileServices, path: Path, before: str | None, after: str, tool: str) -> str:
    """Run the gate on one file: raise the refusal, or return the warning (or "")."""
    verdict = syntax_verdict(ctx, path, before, after)
    if gate_refuses(ctx, verdict):
        assert verdict is not None
        raise syntax_refusal(verdict, ctx.display(path), after, tool)
    return syntax_warning(verdict, new_file=before is None)




def gate_edit(
    ctx: FileServices,
    path: Path,
    tool: str,
    old: TextFile,
    edits: list[EditRequest],
    outcome: EditOutcome,
    check: Callable[[], None],
) -> tuple[EditOutcome, str]:
    """The syntax gate for edits. The matcher already gave a mid-line match's continuation lines
    their line's indentation (textmatch/continuation.py); the one thing only a parse can tell is
    decided here: indentation that would land inside a string literal. Then the edit is applied
    as written instead (string contents never change). The result says when lines were
    re-indented."""
    literal = outcome.inserted_indents and ctx.config.syntax_gate != "off"
    if literal and _indents_in_literals(ctx, path, outcome.file.text, outcome.inserted_indents):
        outcome = apply_edits(old, edits, path=str(path), cancel=check, reindent=False)
    verdict = syntax_verdict(ctx, path, old.text, outcome.file.text)
    if gate_refuses(ctx, verdict):
        assert verdict is not None
        raise syntax_refusal(verdict, ctx.display(path), outcome.file.text, tool)
    note = REINDENTED_NOTE if outcome.inserted_indents else ""
    return outcome, note + syntax_warning(verdict)


#: Said when new_string's continuation lines were given the matched line's indentation.
REINDENTED_NOTE = (
    " Note: old_string started at the first non-blank character of its line and new_string's further "
    "lines were written from that column, so they were given the line's indentation (their relative "
    "indentation kept). Check the diff."
)


def _indents_in_literals(ctx: FileServices, path: Path, text: str, offsets: list[int]) -> bool:
    parsed = parse(text, str(path), cache=ctx.syntax_trees)
    if parsed is None:
        return False  # no grammar (or too large): no literal can be seen, the rule stands
    encoded = [len(text[:o].encode("utf-8", "surrogatepass")) for o in offsets]
    return inside_literal(parsed, encoded)
