"""The change flow shared by the file tools: load a file for a change, store it, edit it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...cancel import in_thread
from ...diff import diff_metadata
from ...errors import ToolError
from ...file_tracker import FileTracker
from ...fsutil.atomic import atomic_write
from ...fsutil.paths import not_found_error
from ...fsutil.textio import TextFile, decode_bytes, new_text_file
from ...textmatch import EditOutcome, EditRequest, apply_edits
from .tools import ToolContext, ToolResponse


def load_for_change(tracker: FileTracker, path: Path) -> TextFile:
    """An existing text file about to be changed: must be a file, read before, unchanged since."""
    if path.is_dir():
        raise ToolError(f"Path is a directory, not a file: {path}")
    if not path.exists():
        raise not_found_error(path)
    data = path.read_bytes()
    tracker.check_unchanged(path, data)
    return decode_bytes(data, path=str(path))


def store(tracker: FileTracker, path: Path, data: bytes) -> None:
    """Write atomically and record the new state as read, so the next edit needs no re-read."""
    atomic_write(path, data)
    tracker.record_read(path, data)


# --- the change flow shared by edit and multiedit --------------------------------------------


def verify_note(tiers: list[str]) -> str:
    loose = sorted({t for t in tiers if t != "exact"})
    if not loose:
        return ""
    return (
        f"\nNote: old_string did not match exactly; it was matched tolerating {', '.join(loose)} "
        "differences. Check the diff to verify the edit landed where you intended."
    )


async def create_file(ctx: ToolContext, tool: str, file_path: str, content: str) -> ToolResponse:
    """The empty-old_string case shared by edit and multiedit."""
    path = ctx.resolve(file_path)
    ctx.check_writable(path)
    async with ctx.locks.hold([path]):
        if path.exists():
            raise ToolError(
                f"File already exists: {path}. To change it, read it with view and give a non-empty old_string."
            )
        new = new_text_file(content)
        metadata = diff_metadata("", new.text, ctx.display(path))
        await ctx.require_permission(tool, "write", str(path), f"create {ctx.display(path)}", metadata)
        store(ctx.files, path, new.encode())
    metadata.update(file_path=str(path), created=True, match="create", first_changed_line=1)
    text = f"<result>\nFile created: {path}\n</result>"
    return _response(text + await _diagnostics(ctx, path), metadata)


async def _diagnostics(ctx: ToolContext, path: Path) -> str:
    found = await ctx.diagnostics_after_change([path])
    return "\n\n" + found if found else ""


async def edit_file(ctx: ToolContext, tool: str, file_path: str, edits: list[EditRequest]) -> ToolResponse:
    """Apply ``edits`` to an existing file as one atomic change (edit is the one-edit case)."""
    path = ctx.resolve(file_path)
    ctx.check_writable(path)
    display = ctx.display(path)

    def prepare(check: Callable[[], None]) -> tuple[EditOutcome, dict[str, Any]]:
        old = load_for_change(ctx.files, path)
        outcome = apply_edits(old, edits, path=str(path), cancel=check)
        return outcome, diff_metadata(old.text, outcome.file.text, display, cancel=check)

    async with ctx.locks.hold([path]):
        outcome, metadata = await in_thread(prepare, ctx.cancel)
        await ctx.require_permission(tool, "write", str(path), f"edit {display}", {"diff": metadata["diff"]})
        store(ctx.files, path, outcome.file.encode())
    metadata.update(
        file_path=str(path),
        match=outcome.tiers[0] if len(outcome.tiers) == 1 else outcome.tiers,
        replacements=outcome.replaced,
        first_changed_line=outcome.first_changed_line,
    )
    plural = "s" if outcome.replaced != 1 else ""
    text = (
        f"<result>\nEdited {path}: {outcome.replaced} replacement{plural}, first change at line "
        f"{outcome.first_changed_line}.{verify_note(outcome.tiers)}\n</result>"
    )
    return _response(text + await _diagnostics(ctx, path), metadata)


def _response(content: str, metadata: dict[str, Any]) -> ToolResponse:
    return ToolResponse(content, metadata=metadata)
