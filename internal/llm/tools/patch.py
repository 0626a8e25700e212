"""patch: apply a Codex-format patch to several files as one atomic change."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...cancel import in_thread
from ...diff import diff_metadata
from ...diff.patch import FUZZ_THRESHOLD, FileOp, apply_chunks, parse_patch
from ...errors import ToolError
from ...fsutil.atomic import FileChange, commit_file_set
from ...fsutil.paths import not_found_error
from ...fsutil.textio import TextFile, decode_bytes, new_text_file
from .params import param
from .tools import Tool, ToolContext, ToolResponse

DESCRIPTION = f"""Applies a patch in the apply_patch format to one or more files, all or nothing.

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
- Files to update, delete or move must have been read with view and unchanged since. Add File
  refuses to overwrite an existing file (use Update for that).
- Every file is checked before anything is written; if any part fails, no file changes.
"""


@dataclass(frozen=True)
class PatchParams:
    patch_text: str = param("The full patch text, from '*** Begin Patch' to '*** End Patch'", minLength=1)


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


class PatchTool(Tool):
    name = "patch"
    description = DESCRIPTION
    Params = PatchParams

    async def run(self, params: PatchParams, ctx: ToolContext) -> ToolResponse:
        ops = parse_patch(params.patch_text)
        paths = self._paths(ops, ctx)

        def prepare(check: Callable[[], None]) -> tuple[list[_Planned], list[FileChange], list[dict[str, Any]]]:
            planned = []
            for op in ops:
                check()
                planned.append(self._plan(op, ctx))
            changes, files_meta = self._changes(planned, ctx, check)
            return planned, changes, files_meta

        async with ctx.locks.hold(paths):
            planned, changes, files_meta = await in_thread(prepare, ctx.cancel)
            await ctx.require_permission(
                self.name, "write", ", ".join(ctx.display(p) for p in paths), "apply a patch",
                {"files": files_meta},
            )  # fmt: skip
            commit_file_set(changes)
            for plan in planned:
                if plan.op.kind == "delete" or plan.target != plan.path:
                    ctx.files.forget(plan.path)
                if plan.new is not None:
                    ctx.files.record_read(plan.target, plan.new.encode())
        additions = sum(m["additions"] for m in files_meta)
        removals = sum(m["removals"] for m in files_meta)
        text = (
            f"Patch applied: {len(files_meta)} file{'s' if len(files_meta) != 1 else ''} changed, "
            f"{additions} additions, {removals} removals"
        )
        for meta in files_meta:
            fuzz = max(meta["fuzz"], default=0)
            note = f" (fuzz {fuzz}: context matched with {meta['passes']}; check the result)" if fuzz else ""
            text += f"\n  {meta['operation']}: {meta['path']}{note}"
        diagnostics = await ctx.diagnostics_after_change([p.target for p in planned if p.new is not None])
        if diagnostics:
            text += "\n\n" + diagnostics
        return ToolResponse(text, metadata={"files": files_meta, "additions": additions, "removals": removals})

    @staticmethod
    def _paths(ops: list[FileOp], ctx: ToolContext) -> list[Path]:
        seen: list[Path] = []
        for op in ops:
            for raw in (op.path, op.move_to):
                if raw is None:
                    continue
                path = ctx.resolve(raw)
                if path in seen:
                    raise ToolError(f"{path} appears more than once in the patch; combine its changes.")
                ctx.check_writable(path)
                seen.append(path)
        return seen

    @staticmethod
    def _plan(op: FileOp, ctx: ToolContext) -> _Planned:
        path = ctx.resolve(op.path)
        if op.kind == "add":
            if path.exists():
                raise ToolError(f"Add File {path}: the file already exists. Use Update File to change it.")
            content = "".join(line + "\n" for line in op.add_lines)
            return _Planned(op, path, path, None, new_text_file(content), [], [])
        if path.is_dir():
            raise ToolError(f"{path} is a directory, not a file.")
        if not path.exists():
            raise not_found_error(path)
        data = path.read_bytes()
        ctx.files.check_unchanged(path, data)
        old = decode_bytes(data, path=str(path))
        if op.kind == "delete":
            return _Planned(op, path, path, old, None, [], [])
        target = ctx.resolve(op.move_to) if op.move_to else path
        if target != path and target.exists():
            raise ToolError(f"Move to {target}: the file already exists.")
        replacements, applied = apply_chunks(old.text, op.chunks, str(path))
        new = TextFile(raw=old.splice(replacements), encoding=old.encoding, bom=old.bom, eol=old.eol)
        passes = sorted({a.pass_name for a in applied if a.fuzz})
        return _Planned(op, path, target, old, new, [a.fuzz for a in applied], passes)

    @staticmethod
    def _changes(
        planned: list[_Planned], ctx: ToolContext, check: Callable[[], None]
    ) -> tuple[list[FileChange], list[dict[str, Any]]]:
        changes: list[FileChange] = []
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
            old_text, new_text = plan.old.text if plan.old else "", plan.new.text if plan.new else ""
            entry.update(diff_metadata(old_text, new_text, display, cancel=check))
            meta.append(entry)
            if plan.new is not None:
                changes.append(FileChange(plan.target, plan.new.encode()))
            if plan.new is None or plan.target != plan.path:
                changes.append(FileChange(plan.path, None))
        return changes, meta


TOOL = PatchTool()
