"""patch: apply a Codex-format patch to several files as one atomic change."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...diff import span_diff_metadata
from ...diff.patch import BEGIN, FUZZ_THRESHOLD, FileOp, apply_chunks, parse_patch
from ...diff.unified import looks_unified, parse_unified
from ...errors import ToolError
from ...fsutil.commit import Change, modifiable_error
from ...fsutil.textio import TextFile, new_text_file, normalize_eol
from ...textmatch.rebase import commutes
from .context import FileServices
from .contract import Tool, ToolResponse
from .file import Loaded, gate_change, guard_notebooks, load_for_edit, plan_ask_commit, with_notes, write_settled
from .params import param

DESCRIPTION = f"""Applies a patch to one or more files, all or nothing: the apply_patch format below, or a
unified diff as `git diff` or `diff -u` print it. Prefer it for changes that span several files.

Format:
*** Begin Patch
*** Update File: src/app.py
@@ def handler(request):
     context line (starts with a space)
-    removed line
+    added line
*** Add File: src/new.py
+every line of a new file starts with +
*** Delete File: src/old.py
*** End Patch

- `@@ <line>` positions the chunk after that whole line of the file (a def, a class, a heading);
  a bare `@@` just starts the next chunk. Give about 3 lines of unchanged context around each change.
- Chunks must appear in file order. Add `*** End of File` after a chunk that ends at the end of the file.
- Context is matched exactly, then ignoring trailing whitespace, then ignoring indentation, then
  folding typographic quotes/dashes; each relaxation adds fuzz (0-3) and is reported. A chunk whose
  context is only found out of order (or not at the end for `*** End of File`) has fuzz above
  {FUZZ_THRESHOLD} and is rejected with the chunk shown: re-read the file and regenerate the chunk.
- Moving/renaming a file: put `*** Move to: new/path` right after its Update line, e.g.
  *** Update File: lib/old_name.py
  *** Move to: lib/new_name.py
  @@ def keep():
  -    return 1
  +    return 2
  (a Move with no chunks just renames the file).
- A unified diff works too: `--- a/path` / `+++ b/path` headers (a/ b/ prefixes optional),
  `@@ -12,4 +12,5 @@` hunks, new files from `/dev/null`, deletions, git renames and
  `\\ No newline at end of file`. Hunks are placed near their line numbers with the same fuzz.
  Hunks without numbers (`@@ ... @@` or `@@ @@`, also inside ```diff fences) are placed by their
  context alone: it must match exactly one place in the file (else the candidate lines are listed).
- Files to update, delete or move must have been read with view and unchanged since. Add File
  refuses to overwrite an existing file (use Update for that). Delete and Move act on a symlink
  itself, not on its target.
- Every file is checked before anything is written; if any part fails, no file changes. That
  includes the syntax gate: a file that parsed cleanly and would not after the patch is refused.
- A file changed since you read it still takes its chunks when their lines were left untouched
  (the result says so); otherwise it is refused.
"""


@dataclass(frozen=True)
class PatchParams:
    patch_text: str = param(
        "The whole patch: from '*** Begin Patch' to '*** End Patch', or a unified diff", minLength=1
    )


@dataclass
class _Planned:
    op: FileOp
    path: Path
    target: Path  # where the new content goes (the move destination, if any)
    old: TextFile | None
    new: TextFile | None
    fuzz: list[int]
    #: The relaxed matching passes any chunk needed.
    passes: list[str]
    changes: list[Change]
    #: The syntax gate's warning for this file ("" when it has none).
    warning: str = ""
    #: The file had changed since the read; the chunks were re-anchored on its current content.
    reanchored: bool = False
    #: The chunks' replacements in ``old``'s LF text (the diff is built from them).
    spans: list[tuple[int, int, str]] | None = None


class PatchTool(Tool):
    name = "patch"
    title = "Apply a patch to files"
    description = DESCRIPTION
    Params = PatchParams

    async def run(self, params: PatchParams, ctx: FileServices) -> ToolResponse:
        ops = _parse(params.patch_text, ctx)
        paths = self._paths(ops, ctx)

        def prepare(check: Callable[[], None]) -> tuple[list[_Planned], list[dict[str, Any]]]:
            planned = []
            for op in ops:
                check()
                planned.append(self._plan(op, ctx))
            guard_notebooks([c for p in planned for c in p.changes])
            for plan in planned:  # the gate judges each file's final state, before anything is written
                if plan.new is not None and (plan.old is None or plan.new.text != plan.old.text):
                    before = plan.old.text if plan.old is not None else None
                    plan.warning = gate_change(ctx, plan.target, before, plan.new.text, self.name)
            return planned, self._describe(planned, ctx, check)

        async def ask(prepared: tuple[list[_Planned], list[dict[str, Any]]]) -> None:
            await ctx.require_permission(
                self.name, "write", ", ".join(ctx.display(p) for p in paths), "apply a patch",
                {"files": prepared[1]},
            )  # fmt: skip

        def changes(prepared: tuple[list[_Planned], list[dict[str, Any]]]) -> list[Change]:
            return [c for p in prepared[0] for c in p.changes]

        def gone(prepared: tuple[list[_Planned], list[dict[str, Any]]]) -> list[Path]:
            return [p.path for p in prepared[0] if p.op.kind == "delete" or p.target != p.path]

        async with ctx.locks.hold(paths):
            settled = write_settled(ctx, self.name, ", ".join(ctx.display(p) for p in paths))
            (planned, files_meta), notes = await plan_ask_commit(
                ctx, prepare, ask, changes, forget=gone, settled=settled
            )
        additions = sum(m["additions"] for m in files_meta)
        removals = sum(m["removals"] for m in files_meta)
        text = (
            f"Patch applied: {len(files_meta)} file{'s' if len(files_meta) != 1 else ''} changed, "
            f"{additions} additions, {removals} removals"
        )
        for meta in files_meta:
            fuzz = max(meta["fuzz"], default=0)
            note = f" (fuzz {fuzz}: context matched with {meta['passes']}; check the result)" if fuzz else ""
            if meta.get("reanchored"):
                note += " (the file had changed since you read it; the changed lines were untouched, so the patch "
                note += "applied to its current content)"
            text += f"\n  {meta['operation']}: {meta['path']}{note}"
        for plan in planned:
            if plan.warning:
                text += f"\n{ctx.display(plan.target)}: {plan.warning.lstrip()}"
        metadata: dict[str, Any] = {"files": files_meta, "additions": additions, "removals": removals}
        text = with_notes(text, notes, metadata)
        diagnostics = await ctx.diagnostics_after_change([p.target for p in planned if p.new is not None])
        if diagnostics:
            text += "\n\n" + diagnostics
        return ToolResponse(text, metadata=metadata)

    @staticmethod
    def _paths(ops: list[FileOp], ctx: FileServices) -> list[Path]:
        seen: list[Path] = []
        for op in ops:
            for raw in (op.path, op.move_to):
                if raw is None:
                    continue
                path = ctx.resolve(raw)
                if path in seen:
                    raise ToolError(f"{path} appears more than once in the patch; combine its changes.")
                seen.append(path)
        return seen

    @staticmethod
    def _plan(op: FileOp, ctx: FileServices) -> _Planned:
        path = ctx.resolve(op.path)
        if op.kind == "add":
            target = ctx.check_writable(path)
            if os.path.lexists(path):
                raise ToolError(f"Add File {path}: the file already exists. Use Update File to change it.")
            content = "".join(line + "\n" for line in op.add_lines)
            new = new_text_file(content if op.add_final_newline else content[:-1])
            return _Planned(op, path, path, None, new, [], [], [Change("write", target, new.encode())])
        # Delete and Move act on the entry itself: a symlink is removed or renamed, not its target.
        entry = ctx.check_writable(path, follow=op.kind == "update" and op.move_to is None)
        current, base = load_for_edit(ctx, path, writable=False)
        data, old = current.data, current.text
        if base is not None and (op.kind == "delete" or op.move_to is not None):
            raise ctx.files.changed_error(path, current.st)  # only content changes re-anchor
        if op.kind == "delete":
            return _Planned(op, path, path, old, None, [], [], [Change("delete", entry, expect=data)])
        try:
            replacements, applied = apply_chunks(old.text, op.chunks, str(path))
        except ToolError:
            if base is not None:  # the context is gone: the change since the read is why
                raise ctx.files.changed_error(path, current.st) from None
            raise
        new = TextFile(raw=old.splice(replacements), encoding=old.encoding, bom=old.bom, eol=old.eol)
        if base is not None:
            _check_reanchored(ctx, op, path, base, current, new)
        passes = sorted({a.pass_name for a in applied if a.fuzz})
        fuzz = [a.fuzz for a in applied]
        new_data = new.encode()
        if new_data != data and (error := modifiable_error(path, current.st)) is not None:
            raise error
        if op.move_to is None:
            changes = [current.change(new_data, entry)]
            return _Planned(
                op, path, path, old, new, fuzz, passes, changes, reanchored=base is not None, spans=replacements
            )
        target = ctx.resolve(op.move_to)
        destination = ctx.check_writable(target, follow=False)
        if os.path.lexists(target):
            raise ToolError(f"Move to {target}: the file already exists.")
        changed = new_data != data
        if path.is_symlink():  # the link moves; its target's content changes in place
            changes = [current.change(new_data, ctx.check_writable(path))] if changed else []
            changes.append(Change("move", destination, expect=data, source=entry))
        else:
            changes = [Change("move", destination, new_data if changed else None, data, source=entry)]
        return _Planned(op, path, target, old, new, fuzz, passes, changes)

    @staticmethod
    def _describe(planned: list[_Planned], ctx: FileServices, check: Callable[[], None]) -> list[dict[str, Any]]:
        meta: list[dict[str, Any]] = []
        for plan in planned:
            display = ctx.display(plan.target)
            entry: dict[str, Any] = {
                "path": display,
                "operation": plan.op.kind if plan.target == plan.path else "move",
                "fuzz": plan.fuzz,
                "passes": ", ".join(plan.passes) or "exact",
            }
            if plan.target != plan.path:
                entry["moved_from"] = ctx.display(plan.path)
            if plan.reanchored:
                entry["reanchored"] = True
            old_text, new_text = plan.old.text if plan.old else "", plan.new.text if plan.new else ""
            entry.update(span_diff_metadata(old_text, new_text, plan.spans, display, cancel=check))
            meta.append(entry)
        return meta


def _check_reanchored(ctx: FileServices, op: FileOp, path: Path, base: Loaded, current: Loaded, new: TextFile) -> None:
    """A file changed since the read takes the chunks only if, planned on the content as read,
    they change the same lines the same way and the outside change left those lines alone."""
    try:
        planned, _ = apply_chunks(base.text.text, op.chunks, str(path))
        planned_text = base.text.splice(planned)
    except (ToolError, ValueError):
        planned_text = None
    if planned_text is None or not commutes(base.text.text, normalize_eol(planned_text), current.text.text, new.text):
        raise ctx.files.changed_error(path, current.st)


def _parse(text: str, ctx: FileServices) -> list[FileOp]:
    """A Codex patch, or a unified diff (git diff, diff -u) read into the same operations."""
    if BEGIN not in text and looks_unified(text):
        return parse_unified(text, lambda raw: os.path.lexists(ctx.resolve(raw)))
    return parse_patch(text)


TOOL = PatchTool()
