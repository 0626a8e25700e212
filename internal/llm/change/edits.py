"""The plans of edit and multiedit: create a file (an empty old_string), or apply text edits to
one file — through the change pipeline, which re-anchors them when the file changed since the
read in lines they leave alone."""

from __future__ import annotations

from typing import Any

from ...fsutil.textio import new_text_file
from ...textmatch import EditRequest, apply_edits
from ...textmatch.tiers import FIRST_LINE_TIER
from ...vocabulary import tool_name
from ..tools.context import FileServices
from ..tools.contract import ToolResponse
from .gate import REINDENTED_NOTE, keep_literals
from .pipeline import Applied, ChangeRequest, Planned, Target, change_files
from .snapshot import Snapshot
from .worker import Check

#: Said when an edit was applied to content that changed since the read.
REANCHORED_NOTE = (
    " Note: the file had changed since you read it (another program or session); the text you replaced was "
    "unchanged and matched one place, so the edit was applied to the current content. View the file to see "
    "the other changes."
)

#: Diff lines shown in the result of a non-exact edit (all of them are in metadata["diff"]).
MAX_NOTE_DIFF_LINES = 40


async def create_file(ctx: FileServices, tool: str, file_path: str, content: str) -> ToolResponse:
    """The empty-old_string case shared by edit and multiedit: a new file with ``content``."""
    path = ctx.resolve(file_path)

    def plan(_snapshot: Snapshot, _check: Check) -> Planned:
        return Planned(new=new_text_file(content))

    def report(applied: Applied) -> tuple[str, dict[str, Any]]:
        metadata = _file_metadata(applied.planned[0])
        metadata.update(file_path=str(path), created=True, match="create", first_changed_line=1)
        return f"<result>\nFile created: {path}\n</result>", metadata

    exists = (
        f"File already exists: {path}. To change it, read it with {tool_name('view')} and give a non-empty old_string."
    )
    target = Target(path, plan, expect="absent", exists=exists)
    request = ChangeRequest(tool, [target], lambda _planned: f"create {ctx.display(path)}")
    return await change_files(ctx, request, report)


async def edit_file(ctx: FileServices, tool: str, file_path: str, edits: list[EditRequest]) -> ToolResponse:
    """Apply ``edits`` to an existing file as one atomic change (edit is the one-edit case)."""
    path = ctx.resolve(file_path)

    def plan(snapshot: Snapshot, check: Check) -> Planned:
        outcome = apply_edits(snapshot.text, edits, path=str(path), cancel=check)
        outcome = keep_literals(ctx, path, snapshot.text, edits, outcome, check)
        note = REINDENTED_NOTE if outcome.inserted_indents else ""
        return Planned(new=outcome.file, spans=outcome.spans, value=(outcome, note))

    def report(applied: Applied) -> tuple[str, dict[str, Any]]:
        planned = applied.planned[0]
        outcome, note = planned.value
        metadata = _file_metadata(planned)
        if outcome.inserted_indents:
            metadata["reindented"] = True
        if planned.reanchored:
            metadata["reanchored"] = True
            note = REANCHORED_NOTE + note
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
        return text, metadata

    target = Target(path, plan, reanchor=True)
    request = ChangeRequest(tool, [target], lambda _planned: f"edit {ctx.display(path)}")
    return await change_files(ctx, request, report)


def _file_metadata(planned: Planned) -> dict[str, Any]:
    """A one-file change's metadata: its diff and line counts."""
    return {key: planned.meta[key] for key in ("diff", "additions", "removals") if key in planned.meta}


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
