"""What a change's result must not break: the syntax gate as the pipeline applies it (judge a
change, refuse or warn; see internal/syntax/gate.py and docs/structure.md), the one decision about
an edit's re-indented continuation lines only a parse can make (none inside a string literal),
and the notebook guard."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...documents import is_notebook
from ...errors import ParseFailed, ToolError
from ...fsutil.commit import Change
from ...fsutil.textio import TextFile
from ...syntax import Verdict, inside_literal, judge, parse, would_be_lines
from ...textmatch import EditOutcome, EditRequest, apply_edits
from ..tools.context import FileServices


@dataclass(frozen=True)
class Unjudged:
    """The gate could not judge the change: the parser failed on the text in the child process it
    was tried in first (syntax/probe.py). The change is not blocked; the result says so."""

    failure: ParseFailed


def syntax_verdict(ctx: FileServices, path: Path, before: str | None, after: str) -> Verdict | Unjudged | None:
    """The gate's verdict on changing ``path`` from ``before`` (None: a new file) to ``after``;
    None when the gate is off or has nothing to say."""
    if ctx.config.syntax_gate == "off":
        return None
    try:
        return judge(before, after, str(path), cache=ctx.syntax_trees)
    except ParseFailed as failure:
        return Unjudged(failure)


def gate_refuses(ctx: FileServices, verdict: Verdict | Unjudged | None) -> bool:
    return isinstance(verdict, Verdict) and verdict.kind == "breaks" and ctx.config.syntax_gate == "refuse"


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
    metadata: dict[str, Any] = {"language": verdict.language}
    if first is not None:
        metadata.update(line=first.line, column=first.column)
    return ToolError(text, metadata, code="syntax_error")


def syntax_warning(verdict: Verdict | Unjudged | None, *, new_file: bool = False) -> str:
    """The note for a change the gate lets through with errors, or could not judge."""
    if verdict is None:
        return ""
    if isinstance(verdict, Unjudged):
        return (
            f"\nNote: the syntax check was skipped: {verdict.failure.reason} (in a separate process, tried first "
            "because the file nests deeply). The change was made unchecked."
        )
    if verdict.kind == "breaks":
        why = "the file parsed cleanly before; the syntax gate is set to warn"
    elif new_file:
        why = "a new file"
    else:
        why = "the file already had syntax errors; these are new"
    return f"\nWarning: syntax errors ({verdict.language}, {why}): {verdict.summary()}."


def keep_literals(
    ctx: FileServices,
    path: Path,
    old: TextFile,
    edits: list[EditRequest],
    outcome: EditOutcome,
    check: Callable[[], None],
) -> EditOutcome:
    """``outcome``, unless the matcher's mid-line rule (textmatch/continuation.py) put indentation
    inside a string literal of the result: then the edits applied as written (string contents
    never change), which the gate then judges as usual. With the gate off nothing is parsed and
    the rule stands."""
    if not outcome.inserted_indents or ctx.config.syntax_gate == "off":
        return outcome
    if not _indents_in_literals(ctx, path, outcome.file.text, outcome.inserted_indents):
        return outcome
    return apply_edits(old, edits, path=str(path), cancel=check, reindent=False)


#: Said when new_string's continuation lines were given the matched line's indentation.
REINDENTED_NOTE = (
    " Note: old_string started at the first non-blank character of its line and new_string's further "
    "lines were written from that column, so they were given the line's indentation (their relative "
    "indentation kept). Check the diff."
)


def _indents_in_literals(ctx: FileServices, path: Path, text: str, offsets: list[int]) -> bool:
    try:
        parsed = parse(text, str(path), cache=ctx.syntax_trees)
    except ParseFailed:
        parsed = None
    if parsed is None:
        return False  # no grammar (or too large, or the parse failed): no literal can be seen, the rule stands
    encoded = [len(text[:o].encode("utf-8", "surrogatepass")) for o in offsets]
    return inside_literal(parsed, encoded)


def guard_notebooks(changes: Sequence[Change]) -> None:
    """Refuse text changes that would leave a notebook (.ipynb) that no longer parses or
    validates; notebook_edit is the tool for notebooks (see documents/notebook_edit.py)."""
    for change in changes:
        if change.kind == "delete" or not is_notebook(change.path):
            continue
        from ...documents.notebook_edit import check_text_change

        new = change.data if change.data is not None else change.expect
        was_notebook = change.kind == "write" or (change.source is not None and is_notebook(change.source))
        if new is not None:
            check_text_change(change.path, change.expect if was_notebook else None, new)
