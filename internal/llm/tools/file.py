"""The change flow shared by the file tools: load a file for a change, commit changes, edit.

Reading for a change checks policy (confinement, protected directories, read-only files) and
the session's read record; the change is computed off the event loop; after the permission ask,
:func:`commit_changes` writes through :mod:`...fsutil.commit`, which re-checks under a
cross-process lock that every file still holds what the change was computed from.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...cancel import in_thread
from ...diff import diff_metadata
from ...errors import ToolCancelled, ToolError
from ...fsutil.commit import Change, commit, modifiable_error
from ...fsutil.paths import open_regular_file, read_error
from ...fsutil.textio import TextFile, decode_bytes, new_text_file
from ...textmatch import EditOutcome, EditRequest, apply_edits
from .tools import ToolContext, ToolResponse


@dataclass(frozen=True)
class Loaded:
    """A file read for a change: its bytes (what the change expects to replace) and text."""

    path: Path
    data: bytes
    text: TextFile


def read_for_change(ctx: ToolContext, path: Path, *, writable: bool = True) -> tuple[bytes, os.stat_result]:
    """The bytes of an existing file about to change (or be deleted, or moved): a regular file
    this session read and that has not changed since — and, when its content is to change
    (``writable``), one that may be written."""
    if path.is_dir():
        raise ToolError(f"Path is a directory, not a file: {path}", {"error": "is_directory"})
    # Non-blocking, checked before any read: a FIFO or a device is refused at once (never a hang).
    fd, st = open_regular_file(path, "only regular files can be changed; nothing was written.")
    try:
        error = modifiable_error(path, st)
        if error is not None and writable:
            raise error
        data = _read_all(fd, path)
    finally:
        os.close(fd)
    ctx.files.check_unchanged(path, data)
    return data, st


def _read_all(fd: int, path: Path) -> bytes:
    chunks = []
    try:
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    except OSError as exc:
        raise read_error(exc, path) from None
    return b"".join(chunks)


def load_for_change(ctx: ToolContext, path: Path) -> Loaded:
    data, _ = read_for_change(ctx, path)
    return Loaded(path, data, decode_bytes(data, path=str(path)))


async def commit_changes(
    ctx: ToolContext, changes: Sequence[Change], *, forget: Sequence[Path] = ()
) -> list[str]:
    """Write ``changes`` as one all-or-nothing commit and record the new contents as read;
    returns notes for the result (a hard link that was broken).

    Cancellation is honoured while waiting for another writer's lock; once writing started the
    commit completes (a cancelled call never leaves a half-applied change or a false report).
    """
    stop = threading.Event()

    def check() -> None:
        if stop.is_set() or ctx.cancel.cancelled:
            raise ToolCancelled("Tool call was aborted")

    work = asyncio.ensure_future(
        asyncio.to_thread(
            commit,
            changes,
            roots=ctx.writable_roots(),
            journal_dir=ctx.state.directory("journal"),
            workspace=ctx.workspace,
            check=check,
        )
    )
    try:
        stats = await asyncio.shield(work)
    except asyncio.CancelledError:
        stop.set()
        raise
    for path in forget:
        ctx.files.forget(path)
    for change in changes:
        if change.path in stats:
            data = change.data if change.data is not None else change.expect
            ctx.files.record_read(change.path, data, stats[change.path])
    return [link_note(path, count) for path, count in stats.broken_links.items()]


def link_note(path: Path, others: int) -> str:
    names = "name" if others == 1 else "names"
    return (
        f"Note: {path} had {others} other hard-link {names}; it was replaced, so the link is broken and the "
        f"other {names} keep the old content (writes never go through links to files we cannot see)."
    )


def with_notes(text: str, notes: list[str], metadata: dict[str, Any]) -> str:
    """``text`` (a <result> block or plain) with the commit's notes added, also to metadata."""
    if not notes:
        return text
    metadata["notes"] = notes
    joined = "\n".join(notes)
    if text.endswith("\n</result>"):
        return text[: -len("\n</result>")] + "\n" + joined + "\n</result>"
    return text + "\n" + joined


# --- the change flow shared by edit and multiedit --------------------------------------------


#: Diff lines shown in the result of a non-exact edit (all of them are in metadata["diff"]).
MAX_NOTE_DIFF_LINES = 40


def verify_note(tiers: list[str], diff: str) -> str:
    """For edits not matched exactly: what was tolerated, and the changed lines to check."""
    loose = sorted({t for t in tiers if t != "exact"})
    if not loose:
        return ""
    if loose == ["first_line_indentation"]:
        what = (
            "old_string started after its line's indentation and new_string repeats it, so the whole line "
            "was replaced (the indentation is not doubled)"
        )
    else:
        what = f"old_string did not match exactly; it was matched tolerating {', '.join(loose)} differences"
    body = [line for line in diff.split("\n") if line and not line.startswith(("--- ", "+++ "))]
    shown = body[:MAX_NOTE_DIFF_LINES]
    if len(body) > len(shown):
        shown.append(f"... ({len(body) - len(shown)} more diff lines in the metadata)")
    return f"\nNote: {what}. Check that the change is what you intended:\n" + "\n".join(shown)


async def create_file(ctx: ToolContext, tool: str, file_path: str, content: str) -> ToolResponse:
    """The empty-old_string case shared by edit and multiedit."""
    path = ctx.resolve(file_path)
    target = ctx.check_writable(path)
    async with ctx.locks.hold([target]):
        if os.path.lexists(path):
            raise ToolError(
                f"File already exists: {path}. To change it, read it with view and give a non-empty old_string."
            )
        new = new_text_file(content)
        metadata = diff_metadata("", new.text, ctx.display(path))
        await ctx.require_permission(tool, "write", str(path), f"create {ctx.display(path)}", metadata)
        await commit_changes(ctx, [Change("write", target, new.encode())])
    metadata.update(file_path=str(path), created=True, match="create", first_changed_line=1)
    text = f"<result>\nFile created: {path}\n</result>"
    return _response(text + await _diagnostics(ctx, path), metadata)


async def _diagnostics(ctx: ToolContext, path: Path) -> str:
    found = await ctx.diagnostics_after_change([path])
    return "\n\n" + found if found else ""


async def edit_file(ctx: ToolContext, tool: str, file_path: str, edits: list[EditRequest]) -> ToolResponse:
    """Apply ``edits`` to an existing file as one atomic change (edit is the one-edit case)."""
    path = ctx.resolve(file_path)
    target = ctx.check_writable(path)
    display = ctx.display(path)

    def prepare(check: Callable[[], None]) -> tuple[Loaded, EditOutcome, dict[str, Any]]:
        old = load_for_change(ctx, target)
        outcome = apply_edits(old.text, edits, path=str(path), cancel=check)
        return old, outcome, diff_metadata(old.text.text, outcome.file.text, display, cancel=check)

    async with ctx.locks.hold([target]):
        old, outcome, metadata = await in_thread(prepare, ctx.cancel)
        await ctx.require_permission(tool, "write", str(path), f"edit {display}", {"diff": metadata["diff"]})
        notes = await commit_changes(ctx, [Change("write", target, outcome.file.encode(), old.data)])
    metadata.update(
        file_path=str(path),
        match=outcome.tiers[0] if len(outcome.tiers) == 1 else outcome.tiers,
        replacements=outcome.replaced,
        first_changed_line=outcome.first_changed_line,
    )
    plural = "s" if outcome.replaced != 1 else ""
    text = (
        f"<result>\nEdited {path}: {outcome.replaced} replacement{plural}, first change at line "
        f"{outcome.first_changed_line}.{verify_note(outcome.tiers, str(metadata['diff']))}\n</result>"
    )
    text = with_notes(text, notes, metadata)
    return _response(text + await _diagnostics(ctx, path), metadata)


def _response(content: str, metadata: dict[str, Any]) -> ToolResponse:
    return ToolResponse(content, metadata=metadata)
