"""The change flow shared by the file tools: load a file for a change, commit changes, edit.

Reading for a change checks policy (confinement, protected directories, read-only files) and
the session's read record; the change is computed off the event loop; after the permission ask,
:func:`commit_changes` writes through :mod:`...fsutil.commit`, which re-checks under a
cross-process lock that every file still holds what the change was computed from.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...cancel import in_thread
from ...diff import diff_metadata
from ...documents import is_notebook
from ...errors import ToolCancelled, ToolError
from ...file_tracker import content_digest
from ...fsutil.commit import Change, Committed, commit, modifiable_error
from ...fsutil.paths import open_regular_file, read_error
from ...fsutil.textio import TextFile, decode_bytes, new_text_file, normalize_eol
from ...syntax import Verdict, inside_literal, judge, parse, would_be_lines
from ...textmatch import EditError, EditOutcome, EditRequest, apply_edits
from ...textmatch.rebase import commutes
from .context import ToolContext
from .contract import ToolResponse

log = logging.getLogger("toolsmith")


@dataclass(frozen=True)
class Loaded:
    """A file read for a change: its bytes (what the change expects to replace) and text."""

    path: Path
    data: bytes
    text: TextFile


def read_for_change(
    ctx: ToolContext, path: Path, *, writable: bool = True, unchanged: bool = True
) -> tuple[bytes, os.stat_result]:
    """The bytes of an existing file about to change (or be deleted, or moved): a regular file
    this session read and (``unchanged``) that has not changed since — and, when its content is
    to change (``writable``), one that may be written."""
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
    if unchanged:
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


def load_for_edit(ctx: ToolContext, path: Path, *, writable: bool = True) -> tuple[Loaded, Loaded | None]:
    """The file now, and — when it changed since this session read it whole — the content as
    read (the base the model planned on), so the edit can be re-anchored. Otherwise as
    :func:`load_for_change` (a file not read, or read only in part and changed, is refused)."""
    data, _ = read_for_change(ctx, path, writable=writable, unchanged=False)
    current = Loaded(path, data, decode_bytes(data, path=str(path)))
    record = ctx.files.last_read(path)
    snapshot = ctx.files.snapshot(path)
    if record is None or snapshot is None or snapshot == data or record.digest != content_digest(snapshot):
        ctx.files.check_unchanged(path, data)
        return current, None
    return current, Loaded(path, snapshot, decode_bytes(snapshot, path=str(path)))


#: Said when an edit was applied to content that changed since the read.
REANCHORED_NOTE = (
    " Note: the file had changed since you read it (another program or session); the text you replaced was "
    "unchanged and matched one place, so the edit was applied to the current content. View the file to see "
    "the other changes."
)


def check_reanchor(
    ctx: ToolContext, current: Loaded, base: Loaded, edits: list[EditRequest], outcome: EditOutcome,
    check: Callable[[], None],
) -> None:  # fmt: skip
    """Refuse (as a change since the read) unless the edit planned on ``base`` lands the same
    way on the current content, in lines the outside change left alone."""
    try:
        planned = apply_edits(base.text, edits, path=str(current.path), cancel=check)
    except EditError:
        planned = None
    if planned is None or not commutes(base.text.text, planned.file.text, current.text.text, outcome.file.text):
        ctx.files.check_unchanged(current.path, current.data)
        raise ToolError(f"File {current.path} has been modified since it was last read. Read it again before editing.")


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

    roots, journal_dir = ctx.writable_roots(), ctx.state.directory("journal")

    def commit_and_record() -> Committed:
        stats = commit(changes, roots=roots, journal_dir=journal_dir, workspace=ctx.workspace, check=check)
        if ctx.on_commit is not None:
            try:
                ctx.on_commit(changes)
            except Exception:  # the change is made: a failed record costs only its rewind
                log.exception("recording a commit for checkpoints failed")
        return stats

    work = asyncio.ensure_future(asyncio.to_thread(commit_and_record))
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


# --- the syntax gate (see internal/syntax/gate.py and docs/structure.md) ----------------------


def syntax_verdict(ctx: ToolContext, path: Path, before: str | None, after: str) -> Verdict | None:
    """The gate's verdict on changing ``path`` from ``before`` (None: a new file) to ``after``;
    None when the gate is off or has nothing to say."""
    if ctx.config.syntax_gate == "off":
        return None
    return judge(before, after, str(path), cache=ctx.syntax_trees)


def gate_refuses(ctx: ToolContext, verdict: Verdict | None) -> bool:
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


def gate_change(ctx: ToolContext, path: Path, before: str | None, after: str, tool: str) -> str:
    """Run the gate on one file: raise the refusal, or return the warning (or "")."""
    verdict = syntax_verdict(ctx, path, before, after)
    if gate_refuses(ctx, verdict):
        assert verdict is not None
        raise syntax_refusal(verdict, ctx.display(path), after, tool)
    return syntax_warning(verdict, new_file=before is None)


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
        change = Change("write", target, new.encode())
        guard_notebooks([change])
        warning = gate_change(ctx, path, None, new.text, tool)
        metadata = diff_metadata("", new.text, ctx.display(path))
        await ctx.require_permission(tool, "write", str(path), f"create {ctx.display(path)}", metadata)
        await commit_changes(ctx, [change])
    metadata.update(file_path=str(path), created=True, match="create", first_changed_line=1)
    text = f"<result>\nFile created: {path}{warning}\n</result>"
    return _response(text + await _diagnostics(ctx, path), metadata)


async def diagnostics_text(ctx: ToolContext, path: Path) -> str:
    """The language servers' errors after a change to ``path``, as a block to append (or "")."""
    return await _diagnostics(ctx, path)


async def _diagnostics(ctx: ToolContext, path: Path) -> str:
    found = await ctx.diagnostics_after_change([path])
    return "\n\n" + found if found else ""


async def edit_file(ctx: ToolContext, tool: str, file_path: str, edits: list[EditRequest]) -> ToolResponse:
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
                ctx.files.check_unchanged(target, old.data)
            raise
        changed = ""
        if base is not None:
            check_reanchor(ctx, old, base, edits, outcome, check)
            changed = REANCHORED_NOTE
        outcome, note = _gate_edit(ctx, path, tool, old, edits, outcome, check)
        change = Change("write", target, outcome.file.encode(), old.data)
        guard_notebooks([change])
        metadata = diff_metadata(old.text.text, outcome.file.text, display, cancel=check)
        if base is not None:
            metadata["reanchored"] = True
        if note == REINDENTED_NOTE:
            metadata["reindented"] = True
        return change, outcome, changed + note, metadata

    async with ctx.locks.hold([target]):
        change, outcome, note, metadata = await in_thread(prepare, ctx.cancel)
        await ctx.require_permission(tool, "write", str(path), f"edit {display}", {"diff": metadata["diff"]})
        notes = await commit_changes(ctx, [change])
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
    return _response(text + await _diagnostics(ctx, path), metadata)


def _gate_edit(
    ctx: ToolContext,
    path: Path,
    tool: str,
    old: Loaded,
    edits: list[EditRequest],
    outcome: EditOutcome,
    check: Callable[[], None],
) -> tuple[EditOutcome, str]:
    """The syntax gate for edits, with its one repair: a multi-line new_string written as if at
    column 0, for a match that starts inside an indented line (the continuation lines then land
    at column 0). If giving its continuation lines the matched line's indentation makes the file
    parse — and puts no indentation inside a string literal — that is applied and said."""
    verdict = syntax_verdict(ctx, path, old.text.text, outcome.file.text)
    if ctx.config.syntax_gate == "off":
        return outcome, ""
    breaks = verdict is not None and verdict.kind == "breaks"
    if breaks or _written_from_match_column(edits):
        retry = apply_edits(old.text, edits, path=str(path), cancel=check, reindent=True, at_indent_only=not breaks)
        if (
            retry.inserted_indents
            and retry.file.text != outcome.file.text
            and syntax_verdict(ctx, path, old.text.text, retry.file.text) is None
            and not _indents_in_literals(ctx, path, retry.file.text, retry.inserted_indents)
        ):
            return retry, REINDENTED_NOTE
    if gate_refuses(ctx, verdict):
        assert verdict is not None
        raise syntax_refusal(verdict, ctx.display(path), outcome.file.text, tool)
    return outcome, syntax_warning(verdict)


#: Said when new_string's continuation lines were given the matched line's indentation.
REINDENTED_NOTE = (
    " Note: old_string started after its line's indentation and new_string's further lines were written "
    "from that column, so they were given the line's indentation (applied literally, they would have "
    "left the block). Check the diff."
)


def _written_from_match_column(edits: list[EditRequest]) -> bool:
    """A one-line old_string replaced by several lines: the model may have written the new lines
    relative to where old_string starts (the marshmallow case)."""
    return any("\n" not in normalize_eol(e.old_string) and "\n" in normalize_eol(e.new_string) for e in edits)


def _indents_in_literals(ctx: ToolContext, path: Path, text: str, offsets: list[int]) -> bool:
    parsed = parse(text, str(path), cache=ctx.syntax_trees)
    if parsed is None:
        return True  # cannot tell: do not repair
    encoded = [len(text[:o].encode("utf-8", "surrogatepass")) for o in offsets]
    return inside_literal(parsed, encoded)


def _response(content: str, metadata: dict[str, Any]) -> ToolResponse:
    return ToolResponse(content, metadata=metadata)
