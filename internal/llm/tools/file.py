"""The change flow shared by the file tools: read a snapshot, plan, ask, commit that snapshot.

A file about to change is read once (:func:`read_for_change`: policy — a regular, writable file
— and the session's read record checked on the bytes and stat just read); the change is planned
on that snapshot off the event loop; after the permission ask the change is committed through
:mod:`...fsutil.commit`, whose final check before the swap compares the file with the snapshot
(:attr:`Change.seen`, :attr:`Change.expect`). :func:`plan_ask_commit` runs the whole flow in
one worker thread (the permission is asked on the event loop while the worker waits);
:func:`commit_changes` commits changes planned elsewhere.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import os
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ...cancel import StopCheck
from ...documents import is_notebook
from ...errors import IsDirectory, ToolCancelled
from ...fsutil.commit import Change, Committed, commit, modifiable_error
from ...fsutil.paths import open_regular_file, read_error
from ...fsutil.textio import TextFile, decode_bytes
from ...logs import logger
from ...permission import PermissionRequest
from .context import FileServices
from .file_gate import gate_change

__all__ = [
    "Loaded", "commit_changes", "diagnostics_text", "gate_change", "guard_notebooks", "link_note", "load_for_change",
    "load_for_edit", "plan_ask_commit", "read_for_change", "with_notes", "write_settled",
]  # fmt: skip

log = logger("toolsmith")
Check = Callable[[], None]


@dataclass(frozen=True)
class Loaded:
    """A file read for a change — the snapshot the change is planned on and committed against:
    its bytes (what the change expects to replace), the stat taken with them, and its text."""

    path: Path
    data: bytes
    text: TextFile
    st: os.stat_result

    def change(self, data: bytes, target: Path | None = None) -> Change:
        """Write ``data`` over this snapshot (at ``target``, the resolved path, if it differs)."""
        return Change("write", target or self.path, data, self.data, seen=self.st)


def read_for_change(
    ctx: FileServices, path: Path, *, writable: bool = True, unchanged: bool = True
) -> tuple[bytes, os.stat_result]:
    """The bytes of an existing file about to change (or be deleted, or moved), and the stat taken
    with them: a regular file this session read and (``unchanged``) that has not changed since —
    and, when its content is to change (``writable``), one that may be written."""
    if path.is_dir():
        raise IsDirectory(f"Path is a directory, not a file: {path}")
    # Non-blocking, checked before any read: a FIFO or a device is refused at once (never a hang).
    fd, st = open_regular_file(path, "only regular files can be changed; nothing was written.")
    try:
        error = modifiable_error(path, st)
        if error is not None and writable:
            raise error
        data = _read_all(fd, path, st.st_size)
    finally:
        os.close(fd)
    if unchanged:
        ctx.files.check_unchanged(path, data, st)
    return data, st


def _read_all(fd: int, path: Path, size: int) -> bytes:
    """The whole file: one read of its stat size (no second copy from joining chunks), then
    whatever it grew by since."""
    try:
        first = os.read(fd, size + 1)
        rest = os.read(fd, 1 << 20) if first else b""
        if not rest:
            return first
        chunks = [first, rest]
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    except OSError as exc:
        raise read_error(exc, path) from None
    return b"".join(chunks)


def load_for_change(ctx: FileServices, path: Path) -> Loaded:
    data, st = read_for_change(ctx, path)
    return Loaded(path, data, decode_bytes(data, path=str(path)), st)


def load_for_edit(ctx: FileServices, path: Path, *, writable: bool = True) -> tuple[Loaded, Loaded | None]:
    """The file now, and — when it changed since this session read it whole — the content as
    read (the base the model planned on), so the edit can be re-anchored. Otherwise as
    :func:`load_for_change` (a file not read, or read only in part and changed, is refused)."""
    data, st = read_for_change(ctx, path, writable=writable, unchanged=False)
    current = Loaded(path, data, decode_bytes(data, path=str(path)), st)
    base = ctx.files.base_for_change(path, data, st)
    if base is None:
        return current, None
    return current, Loaded(path, base, decode_bytes(base, path=str(path)), st)


async def commit_changes(
    ctx: FileServices, changes: Sequence[Change], *, forget: Sequence[Path] = ()
) -> list[str]:
    """Write ``changes`` as one all-or-nothing commit and record the new contents as read;
    returns notes for the result (a hard link that was broken).

    Cancellation is honoured while waiting for another writer's lock; once writing started the
    commit completes (a cancelled call never leaves a half-applied change or a false report).
    """
    check = StopCheck(ctx.cancel)
    work = asyncio.ensure_future(asyncio.to_thread(_commit_and_record, ctx, changes, check))
    try:
        stats = await asyncio.shield(work)
    except asyncio.CancelledError:
        check.stop()
        raise
    return _after_commit(ctx, changes, stats, forget)


Planned = TypeVar("Planned")


async def plan_ask_commit(
    ctx: FileServices,
    plan: Callable[[Check], Planned],
    ask: Callable[[Planned], Awaitable[None]],
    changes_of: Callable[[Planned], Sequence[Change]],
    *,
    forget: Callable[[Planned], Sequence[Path]] = lambda _planned: (),
    settled: Callable[[Planned], bool] = lambda _planned: False,
) -> tuple[Planned, list[str]]:
    """The whole change flow with one thread hop: ``plan(check)`` runs in a worker thread, which
    then waits while ``ask(planned)`` (the permission) runs on the event loop, and commits
    ``changes_of(planned)`` itself. Returns the plan and the commit's notes. When
    ``settled(planned)`` says the permission is given without asking (:func:`write_settled`),
    the worker goes straight on to the commit: no hop to the event loop and back.

    Cancellation (the token, or the awaiting task) before the commit starts answers at once: the
    worker stops at its next check, and a pending permission ask is cancelled. Once the commit
    started, a fired token no longer stops it (the caller hears the result, as with
    :func:`commit_changes`); a cancelled task leaves it to finish or stop at the lock.
    """
    loop = asyncio.get_running_loop()
    check = StopCheck(ctx.cancel)
    committing = threading.Event()
    handover = threading.Lock()  # stopping and starting the commit are decided one after the other
    asking: list[concurrent.futures.Future[None]] = []

    def work() -> tuple[Planned, Committed]:
        planned = plan(check)
        if not settled(planned):
            with handover:  # a cancellation after this point finds the ask to cancel
                check()
                future = asyncio.run_coroutine_threadsafe(_awaited(ask(planned)), loop)
                asking.append(future)
            try:
                future.result()
            except concurrent.futures.CancelledError:
                raise ToolCancelled("Tool call was aborted") from None
        with handover:
            check()
            committing.set()
        changes = changes_of(planned)
        return planned, _commit_and_record(ctx, changes, check)

    def abandon() -> bool:
        """Stop the worker unless it is committing; True when it was stopped."""
        with handover:
            check.stop()
            started = committing.is_set()
        for future in asking:
            future.cancel()
        return not started

    context = contextvars.copy_context()
    work_future = loop.run_in_executor(None, functools.partial(context.run, work))
    # An abandoned worker's ToolCancelled is expected: retrieved here, so it is not logged.
    work_future.add_done_callback(lambda future: future.cancelled() or future.exception())
    cancelled = asyncio.ensure_future(ctx.cancel.wait())
    waiting: set[asyncio.Future[Any]] = {work_future, cancelled}
    try:
        done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        abandon()
        raise
    finally:
        cancelled.cancel()
    if work_future not in done and abandon():
        raise ToolCancelled("Tool call was aborted")
    planned, stats = await asyncio.shield(work_future)
    return planned, _after_commit(ctx, changes_of(planned), stats, forget(planned))


def write_settled(ctx: FileServices, tool: str, target: str) -> Callable[[Any], bool]:
    """For :func:`plan_ask_commit`: whether ``tool`` may write ``target`` without asking (the
    same request as the ask's, whose description and parameters do not change the answer)."""
    request = PermissionRequest(tool, "write", target)
    return lambda _planned: ctx.permissions.allows_without_asking(request)


async def _awaited(awaitable: Awaitable[None]) -> None:
    await awaitable


def _commit_and_record(ctx: FileServices, changes: Sequence[Change], check: Check) -> Committed:
    """The commit (in a worker thread), and the checkpoint record of what it changed."""
    roots, journal_dir = ctx.writable_roots(), ctx.state.directory("journal")
    stats = commit(changes, roots=roots, journal_dir=journal_dir, workspace=ctx.workspace, check=check)
    if ctx.on_commit is not None:
        try:
            ctx.on_commit(changes)
        except Exception:  # the change is made: a failed record costs only its rewind
            log.exception("recording a commit for checkpoints failed")
    return stats


def _after_commit(ctx: FileServices, changes: Sequence[Change], stats: Committed, forget: Sequence[Path]) -> list[str]:
    """Record the new contents as read (our own writes) and say which hard links broke."""
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


async def diagnostics_text(ctx: FileServices, path: Path) -> str:
    """The language servers' errors after a change to ``path``, as a block to append (or "")."""
    found = await ctx.diagnostics_after_change([path])
    return "\n\n" + found if found else ""


