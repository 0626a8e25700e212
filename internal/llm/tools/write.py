"""write: create a file or replace its whole content, atomically, keeping its encoding and EOL."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...cancel import in_thread
from ...diff import diff_metadata
from ...errors import ToolError
from ...fsutil.commit import Change
from ...fsutil.textio import BinaryFileError, TextFile, new_text_file, normalize_eol
from .context import ToolContext
from .contract import Tool, ToolResponse
from .file import Loaded, commit_changes, gate_change, guard_notebooks, load_for_change, with_notes
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

    async def run(self, params: WriteParams, ctx: ToolContext) -> ToolResponse:
        path = ctx.resolve(params.file_path)
        if path.is_dir():
            raise ToolError(f"Path is a directory, not a file: {path}")
        target = ctx.check_writable(path)
        display = ctx.display(path)

        def prepare(check: Callable[[], None]) -> tuple[Loaded | None, TextFile, str, dict[str, Any]]:
            old: Loaded | None = None
            if os.path.lexists(target):
                try:
                    old = load_for_change(ctx, target)
                except BinaryFileError as exc:
                    raise ToolError(f"{path} is a binary file; write only replaces text files.") from exc
                if old.text.text == normalize_eol(params.content):
                    raise ToolError(f"File {path} already contains the exact content. No changes made.")
            new = new_text_file(params.content, like=old.text if old else None)
            guard_notebooks([Change("write", target, new.encode(), old.data if old else None)])
            warning = gate_change(ctx, path, old.text.text if old else None, new.text, self.name)
            return old, new, warning, diff_metadata(old.text.text if old else "", new.text, display, cancel=check)

        async with ctx.locks.hold([target]):
            old, new, warning, metadata = await in_thread(prepare, ctx.cancel)
            action = "overwrite" if old else "create"
            await ctx.require_permission(
                self.name, "write", str(path), f"{action} {display}", {"diff": metadata["diff"]}
            )
            notes = await commit_changes(ctx, [Change("write", target, new.encode(), old.data if old else None)])
        metadata.update(file_path=str(path), created=old is None, encoding=new.encoding)
        verb = "created" if old is None else "written"
        content = with_notes(f"<result>\nFile successfully {verb}: {path}{warning}\n</result>", notes, metadata)
        diagnostics = await ctx.diagnostics_after_change([path])
        if diagnostics:
            content += "\n\n" + diagnostics
        return ToolResponse(content, metadata=metadata)


TOOL = WriteTool()
