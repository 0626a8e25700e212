"""Read tracking and the change flow shared by the file tools.

A file may be changed only after it was read and only if unchanged since.

Reads are recorded with nanosecond timestamps and the file's ``mtime_ns`` and size at that
moment; the check compares the file now against that record, so two writes within one second
are still told apart.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from internal.diff import diff_metadata
from internal.errors import ToolError
from internal.fsutil.atomic import atomic_write
from internal.fsutil.paths import not_found_error
from internal.fsutil.textio import TextFile, new_text_file, read_text_file
from internal.textmatch import EditRequest, apply_edits

if TYPE_CHECKING:  # tools.py imports this module; the context type is needed only for checking
    from internal.llm.tools.tools import ToolContext, ToolResponse

MUST_READ = "You must read the file before editing it. Use the view tool first."


@dataclass(frozen=True)
class ReadRecord:
    read_ns: int
    mtime_ns: int
    size: int


def _iso(ns: int) -> str:
    return dt.datetime.fromtimestamp(ns / 1e9, tz=dt.UTC).isoformat(timespec="microseconds")


class FileTracker:
    """Per-session record of which files were read (or written by us) and in what state."""

    def __init__(self) -> None:
        self._records: dict[str, ReadRecord] = {}

    @staticmethod
    def _key(path: Path) -> str:
        return os.path.realpath(path)

    def record_read(self, path: Path) -> None:
        """Remember ``path`` as seen now. Called after view and after our own writes."""
        st = os.stat(path)
        self._records[self._key(path)] = ReadRecord(time.time_ns(), st.st_mtime_ns, st.st_size)

    def forget(self, path: Path) -> None:
        self._records.pop(self._key(path), None)

    def last_read(self, path: Path) -> ReadRecord | None:
        return self._records.get(self._key(path))

    def check_unchanged(self, path: Path) -> None:
        """Raise unless ``path`` was read in this session and has not changed since."""
        record = self.last_read(path)
        if record is None:
            raise ToolError(f"{MUST_READ} ({path})")
        st = os.stat(path)
        if st.st_mtime_ns != record.mtime_ns or st.st_size != record.size:
            raise ToolError(
                f"File {path} has been modified since it was last read "
                f"(mod time {_iso(st.st_mtime_ns)}, last read {_iso(record.read_ns)}). "
                "Read it again before editing."
            )

    def to_json(self) -> dict[str, Any]:
        return {path: asdict(record) for path, record in self._records.items()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FileTracker:
        tracker = cls()
        for path, record in data.items():
            try:
                tracker._records[path] = ReadRecord(
                    int(record["read_ns"]), int(record["mtime_ns"]), int(record["size"])
                )
            except (KeyError, TypeError, ValueError):
                continue  # a damaged entry only means that file must be read again
        return tracker


def load_for_change(tracker: FileTracker, path: Path) -> TextFile:
    """An existing text file about to be changed: must be a file, read before, unchanged since."""
    if path.is_dir():
        raise ToolError(f"Path is a directory, not a file: {path}")
    if not path.exists():
        raise not_found_error(path)
    tracker.check_unchanged(path)
    return read_text_file(path)


def store(tracker: FileTracker, path: Path, data: bytes) -> None:
    """Write atomically and record the new state as read, so the next edit needs no re-read."""
    atomic_write(path, data)
    tracker.record_read(path)


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
    async with ctx.locks.hold([path]):
        old = load_for_change(ctx.files, path)
        outcome = apply_edits(old, edits, path=str(path))
        display = ctx.display(path)
        metadata = diff_metadata(old.text, outcome.file.text, display)
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
    from internal.llm.tools.tools import ToolResponse

    return ToolResponse(content, metadata=metadata)
