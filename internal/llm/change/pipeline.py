"""The one way a file changes: every writer hands its plan here.

A writer (write, edit, multiedit, patch, notebook_edit, symbol_edit, the lsp tool's rename,
a checkpoint rewind) names the files it changes (:class:`Target`) and, for each, how to plan the
change on the file as found (``plan(snapshot, check) -> Planned``). Everything else is here, the
same for every writer:

1. where: each path checked for writing (outside the workspace, protected, a git directory) and
   locked;
2. snapshot: each file read once, non-blocking, regular files only (snapshot.py);
3. the read check: a file this session has not read is refused (``not_read``) unless the writer's
   rule allows it — a patch whose every chunk matched its context exactly is itself evidence of a
   read; a file changed since the read is refused (``changed_since_read``) unless the writer
   re-anchors and the plan, made again on the content as read, lands the same way on the current
   content (:func:`...textmatch.rebase.commutes`);
4. the notebook guard, the syntax gate (gate.py), the diff;
5. the permission ask (one request for the whole change), on the event loop while the worker waits;
6. the commit (:func:`...fsutil.commit.commit`: all or nothing, compared with the snapshots), the
   checkpoint record, the new contents recorded as read;
7. the report: the writer's text, the commit's notes, the gate's warnings and the language
   servers' diagnostics.

Steps 2-6 run in one worker thread (:mod:`.worker`); cancellation answers at once until the
commit starts, and never interrupts it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ...diff import span_diff_metadata
from ...errors import FileExists, IsDirectory, NoChange, NotRead, ToolError
from ...fsutil.commit import Change, Committed, modifiable_error
from ...fsutil.paths import not_found_error
from ...fsutil.textio import TextFile
from ...permission import PermissionRequest
from ...syntax import Verdict
from ...textmatch.rebase import commutes
from ...vocabulary import edits_need_read
from ..tools.context import FileServices
from ..tools.contract import ToolResponse
from .gate import gate_refuses, guard_notebooks, syntax_refusal, syntax_verdict, syntax_warning
from .snapshot import Snapshot, take_snapshot
from .worker import Check, commit_and_record, run_in_worker

#: Whether the file must exist (``file``), must not (``absent``: a new file), or either.
Expect = Literal["file", "absent", "any"]
#: What this session must have done before changing an existing file: ``required`` — read it;
#: ``evidence`` — read it, or plan a change that proves it knows the file (``Planned.proves_read``);
#: ``optional`` — nothing, but a file it read must not have changed since; ``none`` — nothing.
ReadRule = Literal["required", "evidence", "optional", "none"]


@dataclass
class Planned:
    """A writer's plan for one file, and what the pipeline learned doing it.

    The writer sets: ``new`` (the new text; None to delete), ``data`` (the new bytes, when they
    are not ``new.encode()``: a notebook's JSON), ``spans`` (the replacements in the old LF text,
    for a diff of a large file), ``diff`` (diff metadata the writer made itself), ``gate`` (False:
    the syntax gate does not judge this file), ``proves_read``, ``meta`` (the writer's facts for the permission
    prompt and metadata) and ``value`` (anything else its report needs).
    """

    new: TextFile | None = None
    data: bytes | None = None
    delete: bool = False
    spans: list[tuple[int, int, str]] | None = None
    diff: dict[str, Any] | None = None
    gate: bool = True
    proves_read: bool = False
    meta: dict[str, Any] = field(default_factory=dict)
    value: Any = None
    # --- set by the pipeline ---
    target: Target | None = None
    #: The real path the change writes (the entry itself, for a delete or move).
    entry: Path = Path()
    snapshot: Snapshot | None = None
    #: The file had changed since the read; the plan was re-anchored on its current content.
    reanchored: bool = False
    #: The syntax gate's warning ("" when it has none).
    warning: str = ""
    #: The path shown for the file (the destination of a move).
    display: str = ""
    #: The commit's operations for this file.
    changes: list[Change] = field(default_factory=list)

    @property
    def written_path(self) -> Path:
        """Where the new content is: the file, or a move's destination."""
        assert self.target is not None
        return self.target.move_to or self.target.path

    @property
    def bytes_out(self) -> bytes | None:
        if self.delete:
            return None
        return self.data if self.data is not None or self.new is None else self.new.encode()

    @property
    def old_text(self) -> str:
        snapshot = self.snapshot
        return snapshot.text.text if snapshot is not None and snapshot.exists else ""


@dataclass(frozen=True)
class Target:
    """A file the change touches: ``path`` as the call named it (resolved), and ``plan``, which
    makes the change from the file as found (None: the file stays as it is)."""

    path: Path
    plan: Callable[[Snapshot, Check], Planned | None]
    expect: Expect = "file"
    read: ReadRule = "required"
    #: A file changed since the read takes the change when it lands the same way (edit, patch).
    reanchor: bool = False
    #: False: a delete or move acts on a symlink itself, not on its target.
    follow: bool = True
    #: A move's destination (resolved; must not exist).
    move_to: Path | None = None
    #: The refusal when ``expect`` is ``absent`` and the file exists (a writer-specific hint).
    exists: str = ""


@dataclass
class ChangeRequest:
    """One call's change: the tool asking (for the permission prompt and its messages), the
    files, and the words of the prompt (``describe(planned)``)."""

    tool: str
    targets: list[Target]
    describe: Callable[[list[Planned]], str]
    #: False for the host's own actions (a checkpoint rewind): no permission prompt.
    ask: bool = True
    #: The word the syntax gate's refusal uses for the change ("rename"); default the tool's name.
    gate_name: str = ""
    #: The refusal when every file would stay as it is (nothing is asked or written then).
    unchanged: ToolError | None = None


@dataclass
class Applied:
    """A committed change: each file's plan (in the targets' order, unchanged files left out) and
    the commit's notes (hard links broken)."""

    planned: list[Planned]
    notes: list[str]


async def apply_change(ctx: FileServices, request: ChangeRequest) -> Applied:
    """Plan, check, ask and commit ``request``; raises the typed outcome of the first refusal
    (nothing is written then)."""
    targets = request.targets
    entries = [_entry(ctx, target) for target in targets]
    destinations = {t.move_to: ctx.check_writable(t.move_to, follow=False) for t in targets if t.move_to is not None}
    prompt = _prompt_target(ctx, targets)
    gate_name = request.gate_name or request.tool

    def plan(check: Check) -> list[Planned]:
        planned = []
        for target, entry in zip(targets, entries, strict=True):
            check()
            one = _plan_one(ctx, target, entry, destinations, check)
            if one is not None:
                planned.append(one)
        if not planned:
            raise request.unchanged or NoChange("The change leaves every file as it is; nothing was written.")
        for one in planned:  # each file's final state, before anything is written
            _gate(ctx, one, gate_name)
            one.changes = _changes(ctx, one, destinations)
        guard_notebooks([change for one in planned if one.gate for change in one.changes])
        for one in planned:
            _describe(ctx, one, check)
        return planned

    async def ask(planned: list[Planned]) -> None:
        if request.ask:
            params = _prompt_params(planned, targets)
            await ctx.require_permission(request.tool, "write", prompt, request.describe(planned), params)

    known = PermissionRequest(request.tool, "write", prompt)  # the ask's description and params do not matter

    def settled(_planned: list[Planned]) -> bool:
        return not request.ask or ctx.permissions.allows_without_asking(known)

    def commit(planned: list[Planned], check: Check) -> Committed:
        return commit_and_record(ctx, [change for p in planned for change in p.changes], check)

    async with ctx.locks.hold([*entries, *destinations.values()]):
        planned, stats = await run_in_worker(ctx, plan, ask, settled, commit)
    return Applied(planned, _record(ctx, planned, stats))


async def change_files(
    ctx: FileServices, request: ChangeRequest, report: Callable[[Applied], tuple[str, dict[str, Any]]]
) -> ToolResponse:
    """:func:`apply_change`, then the response: ``report(applied)`` (the writer's text and
    metadata) with the gate's warnings and the commit's notes inside its ``<result>`` block, and
    the language servers' diagnostics for the files written."""
    applied = await apply_change(ctx, request)
    text, metadata = report(applied)
    several = len(applied.planned) > 1
    warnings = [f"{p.display}: {p.warning}" if several else p.warning for p in applied.planned if p.warning]
    if applied.notes:
        metadata["notes"] = applied.notes
    text = _inside_result(text, [*warnings, *applied.notes])
    written = [p.written_path for p in applied.planned if not p.delete]
    found = await ctx.diagnostics_after_change(written) if written else ""
    return ToolResponse(text + ("\n\n" + found if found else ""), metadata=metadata)


def _entry(ctx: FileServices, target: Target) -> Path:
    """The real path a target's change writes (checked: inside the workspace, not protected)."""
    if target.expect != "absent" and target.path.is_dir():
        raise IsDirectory(f"Path is a directory, not a file: {target.path}")
    return ctx.check_writable(target.path, follow=target.follow)


def _plan_one(
    ctx: FileServices, target: Target, entry: Path, destinations: dict[Path, Path], check: Check
) -> Planned | None:
    """One file: snapshot, the read check, the writer's plan (re-anchored when the file changed
    since the read), and the commit's changes for it."""
    snapshot = take_snapshot(ctx, entry if target.follow else target.path)
    path = target.path
    if target.expect == "absent" and (snapshot.exists or os.path.lexists(path)):
        raise FileExists(target.exists or f"File already exists: {path}.", str(path))
    if target.expect == "file" and not snapshot.exists:
        raise not_found_error(path)
    if target.move_to is not None and os.path.lexists(target.move_to):
        raise FileExists(f"Move to {target.move_to}: the file already exists.", str(target.move_to))
    # A profile whose product never asks for a read first (vocabulary.py) makes the read optional;
    # a file read and changed since is still refused.
    rule = target.read if edits_need_read() or target.read == "none" else "optional"
    state = snapshot.read.kind if rule != "none" else "unchanged"
    if state == "unread" and rule == "required":
        raise NotRead(str(path))
    changed = state == "changed"
    if changed and not (target.reanchor and snapshot.read.base is not None):
        raise ctx.files.changed_error(path, snapshot.st)
    try:
        planned = target.plan(snapshot, check)
    except ToolError:
        if changed:  # what the plan needs is gone from the file: the change since the read is why
            raise ctx.files.changed_error(path, snapshot.st) from None
        if state == "unread" and rule == "evidence":  # a plan that does not fit shows no read
            raise NotRead(str(path)) from None
        raise
    if planned is None:
        return None
    planned.target, planned.entry, planned.snapshot = target, entry, snapshot
    if changed:
        _reanchor(ctx, planned, check)
    if state == "unread" and rule == "evidence" and not planned.proves_read:
        raise NotRead(str(path))
    out = planned.bytes_out
    if snapshot.exists and out is not None and out != snapshot.data:
        assert snapshot.st is not None
        error = modifiable_error(path, snapshot.st)
        if error is not None:
            raise error
    return planned


def _reanchor(ctx: FileServices, planned: Planned, check: Check) -> None:
    """Accept a plan made on a file changed since the read only when, made on the content as
    read, it changes the same lines the same way and the outside change left those lines alone."""
    target, snapshot = planned.target, planned.snapshot
    assert target is not None and snapshot is not None
    try:
        on_read = target.plan(snapshot.as_read(), check)
    except ToolError:
        on_read = None
    if (
        on_read is None or on_read.new is None or planned.new is None
        or not commutes(snapshot.as_read().text.text, on_read.new.text, snapshot.text.text, planned.new.text)
    ):  # fmt: skip
        raise ctx.files.changed_error(target.path, snapshot.st)
    planned.reanchored = True


def _changes(ctx: FileServices, planned: Planned, destinations: dict[Path, Path]) -> list[Change]:
    """The commit's operations for one file's plan."""
    target, snapshot, entry = planned.target, planned.snapshot, planned.entry
    assert target is not None and snapshot is not None
    out = planned.bytes_out
    if planned.delete:
        return [Change("delete", entry, expect=snapshot.data)]
    if target.move_to is None:
        return [Change("write", entry, out, snapshot.data, seen=snapshot.st)]
    destination = destinations[target.move_to]
    content = out if out != snapshot.data else None
    if target.path.is_symlink():  # the link moves; its target's content changes in place
        changes = [Change("write", ctx.check_writable(target.path), out, snapshot.data, seen=snapshot.st)]
        return [*(changes if content is not None else []), Change("move", destination, expect=snapshot.data,
                                                                   source=entry)]  # fmt: skip
    return [Change("move", destination, content, snapshot.data, source=entry)]


def _gate(ctx: FileServices, planned: Planned, gate_name: str) -> None:
    """The syntax gate on one file's new text: the refusal, or (a change let through with errors)
    the gate's warning kept for the report."""
    snapshot = planned.snapshot
    assert snapshot is not None
    if not planned.gate or planned.new is None or ctx.config.syntax_gate == "off":
        return
    before = snapshot.text.text if snapshot.exists else None
    after = planned.new.text
    if before == after:
        return
    verdict = syntax_verdict(ctx, planned.written_path, before, after)
    if gate_refuses(ctx, verdict):
        assert isinstance(verdict, Verdict)
        raise syntax_refusal(verdict, ctx.display(planned.written_path), after, gate_name)
    planned.warning = syntax_warning(verdict, new_file=before is None).lstrip()


def _describe(ctx: FileServices, planned: Planned, check: Check) -> None:
    """The file's entry in the prompt and the metadata: its path, the writer's facts, the diff."""
    target = planned.target
    assert target is not None
    planned.display = ctx.display(planned.written_path)
    meta: dict[str, Any] = {"path": planned.display, **planned.meta}
    if target.move_to is not None:
        meta["moved_from"] = ctx.display(target.path)
    if planned.reanchored:
        meta["reanchored"] = True
    new = planned.new.text if planned.new is not None and not planned.delete else ""
    diff = planned.diff
    if diff is None:
        diff = span_diff_metadata(planned.old_text, new, planned.spans, planned.display, cancel=check)
    planned.meta = {**meta, **diff}


def _record(ctx: FileServices, planned: list[Planned], stats: Committed) -> list[str]:
    """After the commit: what the session now knows of each file (our own writes count as read;
    a deleted or moved-away path is forgotten), and the notes of hard links broken."""
    for one in planned:
        assert one.target is not None
        if one.delete or one.target.move_to is not None:
            ctx.files.forget(one.target.path)
        for change in one.changes:
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


def _inside_result(text: str, lines: list[str]) -> str:
    """``text`` (a <result> block, or plain) with ``lines`` added at its end."""
    if not lines:
        return text
    joined = "\n".join(lines)
    if text.endswith("\n</result>"):
        return text[: -len("\n</result>")] + "\n" + joined + "\n</result>"
    return text + "\n" + joined


def _prompt_target(ctx: FileServices, targets: Sequence[Target]) -> str:
    """What the permission prompt names: the file, or the files of a change to several."""
    if len(targets) == 1 and targets[0].move_to is None:
        return str(targets[0].path)
    names = []
    for target in targets:
        names.append(ctx.display(target.path))
        if target.move_to is not None:
            names.append(ctx.display(target.move_to))
    return ", ".join(names)


def _prompt_params(planned: list[Planned], targets: Sequence[Target]) -> dict[str, Any]:
    """A one-file change shows its diff; a change to several files lists each file's facts."""
    if len(targets) == 1 and targets[0].move_to is None and len(planned) == 1:
        return {"diff": planned[0].meta.get("diff", "")}
    return {"files": [p.meta for p in planned]}
