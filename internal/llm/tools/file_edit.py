"""The edit flow shared by edit and multiedit: create a file (empty old_string), or apply edits to
one file as a single change — planned on the snapshot read, re-anchored when the file changed in
lines the edits leave alone, gated, asked, and committed (see file.py for the flow)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ...diff import diff_metadata, span_diff_metadata
from ...errors import ToolError
from ...fsutil.commit import Change
from ...fsutil.textio import new_text_file
from ...textmatch import EditError, EditOutcome, EditRequest, apply_edits
from ...textmatch.rebase import commutes
from ...textmatch.tiers import FIRST_LINE_TIER
from .context import FileServices
from .contract import ToolResponse
from .file import (
    Loaded,
    commit_changes,
    diagnostics_text,
    guard_notebooks,
    load_for_edit,
    plan_ask_commit,
    with_notes,
    write_settled,
)
from .file_gate import gate_change, gate_edit

#: Said when an edit was applied to content that changed since the read.
REANCHORED_NOTE = (
    " Note: the file had changed since you read it (another program or session); the text you replaced was "
    "unchanged and matched one place, so the edit was applied to the current content. View the file to see "
    "the other changes."
)


def check_reanchor(
    ctx: FileServices, current: Loaded, base: Loaded, edits: list[EditRequest], outcome: EditOutcome,
    check: Callable[[], None],
) -> None:  # fmt: skip
    """Refuse (as a change since the read) unless the edit planned on ``base`` lands the same
    way on the current content, in lines the outside change left alone."""
    try:
        planned = apply_edits(base.text, edits, path=str(current.path), cancel=check)
    except EditError:
        planned = None
    if planned is None or not commutes(base.text.text, planned.file.text, current.text.text, outcome.file.text):
        raise ctx.files.changed_error(current.path, current.st)


#: Diff lines shown in the result of a non-exact edit (all of them are in metadata["diff"]).
MAX_NOTE_DIFF_LINES = 40


def verify_note(tiers: list[str], diff: str) -> str:
    """For edits not matched exactly: what was tolerated, and the changed lines to check."""
    loose = sorted({t for t in tiers if t != "exact"})
    if not loose:
        return ""
    if loose == [FIRST_LINE_TIER]:
        what = (
            "old_string started after its first line's indentation, so the whole line was replaced (the "
            "indentation is not doubled)"
        )
    elif any(t.startswith("line_number_gutter") for t in loose):
        what = (
            "old_string carried view's line-number gutter (the 'NNNNNN|' prefix); it was stripped from "
            "old_string and new_string, and the numbers confirmed the lines. Next time copy the text "
            "without the gutter"
        )
        rest = sorted({p for t in loose for p in t.split("+")} - {"line_number_gutter"})
        if rest:
            what += f" (also tolerated: {', '.join(rest)})"
    else:
        what = f"old_string did not match exactly; it was matched tolerating {', '.join(loose)} differences"
    body = [line for line in diff.split("\n") if line and not line.startswith(("--- ", "+++ "))]
    shown = body[:MAX_NOTE_DIFF_LINES]
    if len(body) > len(shown):
        shown.append(f"... ({len(body) - len(shown)} more diff lines in the metadata)")
    return f"\nNote: {what}. Check that the change is what you intended:\n" + "\n".join(shown)


async def create_file(ctx: FileServices, tool: str, file_path: str, content: str) -> ToolResponse:
    """The empty-old_string case shared by edit and multiedit."""
    path = ctx.resolve(file_path)
    target = ctx.check_writable(path)
    async with ctx.locks.hold([target]):
        if os.path.lexists(path):
            raise ToolError(
                f"File already exists: {path}. To change it, read it with view and give a non-empty old_string."
            )
        new = new_text_file(content)
        change = Change("write", target, new.encode())
        guard_notebooks([change])
        warning = gate_change(ctx, path, None, new.text, tool)
        metadata = diff_metadata("", new.text, ctx.display(path))
        await ctx.require_permission(tool, "write", str(path), f"create {ctx.display(path)}", metadata)
        await commit_changes(ctx, [change])
    metadata.update(file_path=str(path), created=True, match="create", first_changed_line=1)
    text = f"<result>\nFile created: {path}{warning}\n</result>"
    return _response(text + await diagnostics_text(ctx, path), metadata)


async def edit_file(ctx: FileServices, tool: str, file_path: str, edits: list[EditRequest]) -> ToolResponse:
    """Apply ``edits`` to an existing file as one atomic change (edit is the one-edit case)."""
    path = ctx.resolve(file_path)
    target = ctx.check_writable(path)
    display = ctx.display(path)

    def prepare(check: Callable[[], None]) -> tuple[Change, EditOutcome, str, dict[str, Any]]:
        old, base = load_for_edit(ctx, target)
        try:
            outcome = apply_edits(old.text, edits, path=str(path), cancel=check)
        except EditError:
            if base is not None:  # the text is not in the file any more: the change since the read is why
                raise ctx.files.changed_error(target, old.st) from None
            raise
        changed = ""
        if base is not None:
            check_reanchor(ctx, old, base, edits, outcome, check)
            changed = REANCHORED_NOTE
        outcome, note = gate_edit(ctx, path, tool, old.text, edits, outcome, check)
        change = old.change(outcome.file.encode())
        guard_notebooks([change])
        metadata = span_diff_metadata(old.text.text, outcome.file.text, outcome.spans, display, cancel=check)
        if base is not None:
            metadata["reanchored"] = True
        if outcome.inserted_indents:
            metadata["reindented"] = True
        return change, outcome, changed + note, metadata

    async def ask(planned: tuple[Change, EditOutcome, str, dict[str, Any]]) -> None:
        await ctx.require_permission(tool, "write", str(path), f"edit {display}", {"diff": planned[3]["diff"]})

    async with ctx.locks.hold([target]):
        planned, notes = await plan_ask_commit(
            ctx, prepare, ask, lambda planned: [planned[0]], settled=write_settled(ctx, tool, str(path))
        )
    _change, outcome, note, metadata = planned
    metadata.update(
        file_path=str(path),
        match=outcome.tiers[0] if len(outcome.tiers) == 1 else outcome.tiers,
        replacements=outcome.replaced,
        first_changed_line=outcome.first_changed_line,
    )
    plural = "s" if outcome.replaced != 1 else ""
    text = (
        f"<result>\nEdited {path}: {outcome.replaced} replacement{plural}, first change at line "
        f"{outcome.first_changed_line}.{note}{verify_note(outcome.tiers, str(metadata['diff']))}\n</result>"
    )
    text = with_notes(text, notes, metadata)
    return _response(text + await diagnostics_text(ctx, path), metadata)


def _response(content: str, metadata: dict[str, Any]) -> ToolResponse:
    return ToolResponse(content, metadata=metadata)
