"""write: create a file or replace its whole content, atomically, keeping its encoding and EOL."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...diff import diff_metadata
from ...errors import IsDirectory, ToolError
from ...fsutil.commit import Change
from ...fsutil.textio import BinaryFileError, TextFile, new_text_file, normalize_eol
from .context import FileServices
from .contract import Tool, ToolResponse
from .file import Loaded, gate_change, guard_notebooks, load_for_change, plan_ask_commit, with_notes, write_settled
from .params import param

DESCRIPTION = """Writes a file to the local filesystem, creating parent directories as needed.

- If the file exists, you must have read it with the view tool first, and it must not have changed
  since; otherwise the write is refused. An existing file keeps its encoding, BOM and line endings.
- ALWAYS prefer editing existing files (edit, multiedit) over rewriting them with write: edits are
  smaller, safer and cheaper.
- NEVER proactively create documentation files (*.md) or README files unless explicitly requested.
- Only use emojis if the user explicitly requests it.
- Writing content identical to the file's current content changes nothing and says so.
- Syntax gate: replacing a file that parsed cleanly with content that does not parse is refused
  (line:column shown); a new file, or one that already had errors, is written with a warning.
- The result includes a diff and the errors language servers report after the change, in this
  file and in up to 5 other files that gained errors with it.
"""


@dataclass(frozen=True)
class WriteParams:
    file_path: str = param("The file to write (absolute or relative to the workspace root)", minLength=1)
    content: str = param("The complete content to write to the file")


class WriteTool(Tool):
    name = "write"
    title = "Write a file"
    description = DESCRIPTION
    Params = WriteParams
    idempotent = True  # the same content again leaves the same file

    async def run(self, params: WriteParams, ctx: FileServices) -> ToolResponse:
        path = ctx.resolve(params.file_path)
        if path.is_dir():
            raise IsDirectory(f"Path is a directory, not a file: {path}")
        target = ctx.check_writable(path)
        display = ctx.display(path)

        def prepare(check: Callable[[], None]) -> tuple[Change, TextFile, str, dict[str, Any]]:
            old: Loaded | None = None
            if os.path.lexists(target):
                try:
                    old = load_for_change(ctx, target)
                except BinaryFileError as exc:
                    raise ToolError(f"{path} is a binary file; write only replaces text files.") from exc
                if old.text.text == normalize_eol(params.content):
                    raise ToolError(f"File {path} already contains the exact content. No changes made.")
            new = new_text_file(params.content, like=old.text if old else None)
            change = old.change(new.encode()) if old else Change("write", target, new.encode())
            guard_notebooks([change])
            warning = gate_change(ctx, path, old.text.text if old else None, new.text, self.name)
            return change, new, warning, diff_metadata(old.text.text if old else "", new.text, display, cancel=check)

        async def ask(planned: tuple[Change, TextFile, str, dict[str, Any]]) -> None:
            action = "create" if planned[0].expect is None else "overwrite"
            await ctx.require_permission(
                self.name, "write", str(path), f"{action} {display}", {"diff": planned[3]["diff"]}
            )

        async with ctx.locks.hold([target]):
            planned, notes = await plan_ask_commit(
                ctx, prepare, ask, lambda planned: [planned[0]], settled=write_settled(ctx, self.name, str(path))
            )
        change, new, warning, metadata = planned
        created = change.expect is None
        metadata.update(file_path=str(path), created=created, encoding=new.encoding)
        verb = "created" if created else "written"
        content = with_notes(f"<result>\nFile successfully {verb}: {path}{warning}\n</result>", notes, metadata)
        diagnostics = await ctx.diagnostics_after_change([path])
        if diagnostics:
            content += "\n\n" + diagnostics
        return ToolResponse(content, metadata=metadata)


TOOL = WriteTool()
