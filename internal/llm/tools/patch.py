"""patch: apply a Codex-format patch to several files as one atomic change."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...diff.patch import BEGIN, FUZZ_THRESHOLD, FileOp, PatchError, apply_chunks, parse_patch
from ...diff.unified import looks_unified, parse_unified
from ...fsutil.textio import TextFile, new_text_file
from ..change.pipeline import Applied, ChangeRequest, Planned, Target, change_files
from ..change.snapshot import Snapshot
from ..change.worker import Check
from .context import FileServices
from .contract import Tool, ToolResponse
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
- A file to update needs no earlier view when every chunk has context or removed lines and they
  all match the file exactly (the patch itself shows it was made from the file); otherwise —
  fuzz, chunks that only add lines, deletes, moves without chunks — read it with view first. A
  file read earlier must be unchanged since (or re-anchor, below). Add File refuses to overwrite
  an existing file (use Update for that). Delete and Move act on a symlink itself, not on its
  target.
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


class PatchTool(Tool):
    name = "patch"
    title = "Apply a patch to files"
    description = DESCRIPTION
    Params = PatchParams

    async def run(self, params: PatchParams, ctx: FileServices) -> ToolResponse:
        ops = _parse(params.patch_text, ctx)
        targets = [_target(op, ctx) for op in ops]
        _check_distinct(targets)
        # Each path alone is checked as the pipeline plans it; together, they must not assemble a
        # git directory from files no one of which would be refused (fsutil/paths.py).
        ctx.check_writable_together([p for t in targets for p in (t.path, t.move_to) if p is not None])

        def report(applied: Applied) -> tuple[str, dict[str, Any]]:
            files_meta = [planned.meta for planned in applied.planned]
            additions = sum(meta["additions"] for meta in files_meta)
            removals = sum(meta["removals"] for meta in files_meta)
            text = (
                f"Patch applied: {len(files_meta)} file{'s' if len(files_meta) != 1 else ''} changed, "
                f"{additions} additions, {removals} removals"
            )
            for meta in files_meta:
                fuzz = max(meta["fuzz"], default=0)
                note = f" (fuzz {fuzz}: context matched with {meta['passes']}; check the result)" if fuzz else ""
                if meta.get("reanchored"):
                    note += " (the file had changed since you read it; the changed lines were untouched, so the "
                    note += "patch applied to its current content)"
                text += f"\n  {meta['operation']}: {meta['path']}{note}"
            return text, {"files": files_meta, "additions": additions, "removals": removals}

        request = ChangeRequest(self.name, targets, lambda _planned: "apply a patch")
        return await change_files(ctx, request, report)


def _target(op: FileOp, ctx: FileServices) -> Target:
    """What a file operation of the patch changes, and how it is planned on the file."""
    path = ctx.resolve(op.path)
    facts: dict[str, Any] = {"operation": op.kind if op.move_to is None else "move", "fuzz": [], "passes": "exact"}
    if op.kind == "add":
        content = "".join(line + "\n" for line in op.add_lines)
        new = new_text_file(content if op.add_final_newline else content[:-1])
        exists = f"Add File {path}: the file already exists. Use Update File to change it."
        return Target(path, lambda _s, _c: Planned(new=new, meta=facts), expect="absent", read="none", exists=exists)
    if op.kind == "delete":  # the entry itself: a symlink is removed, not its target
        return Target(path, lambda _s, _c: Planned(delete=True, meta=facts), follow=False)

    def plan(snapshot: Snapshot, _check: Check) -> Planned:
        old = snapshot.text
        replacements, applied = apply_chunks(old.text, op.chunks, str(path))
        new = TextFile(raw=old.splice(replacements), encoding=old.encoding, bom=old.bom, eol=old.eol)
        passes = sorted({a.pass_name for a in applied if a.fuzz})
        meta = {**facts, "fuzz": [a.fuzz for a in applied], "passes": ", ".join(passes) or "exact"}
        # Context and removed lines that all match exactly show the patch was made from the file.
        proves = bool(op.chunks) and all(c.old_lines for c in op.chunks) and not any(a.fuzz for a in applied)
        return Planned(new=new, spans=replacements, proves_read=proves, meta=meta)

    # Only content changes re-anchor; a move acts on the entry itself (a symlink moves as one).
    moving = op.move_to is not None
    move_to = ctx.resolve(op.move_to) if op.move_to is not None else None
    return Target(path, plan, read="evidence", reanchor=not moving, follow=not moving, move_to=move_to)


def _check_distinct(targets: list[Target]) -> None:
    seen: set[Path] = set()
    for target in targets:
        for path in (target.path, target.move_to):
            if path is None:
                continue
            if path in seen:
                raise PatchError(f"{path} appears more than once in the patch; combine its changes.")
            seen.add(path)


def _parse(text: str, ctx: FileServices) -> list[FileOp]:
    """A Codex patch, or a unified diff (git diff, diff -u) read into the same operations."""
    if BEGIN not in text and looks_unified(text):
        return parse_unified(text, lambda raw: os.path.lexists(ctx.resolve(raw)))
    return parse_patch(text)


TOOL = PatchTool()
