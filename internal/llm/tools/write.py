"""write: create a file or replace its whole content, atomically, keeping its encoding and EOL."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...errors import NoChange, ToolError
from ...fsutil.textio import BinaryFileError, new_text_file, normalize_eol
from ..change.pipeline import Applied, ChangeRequest, Planned, Target, change_files
from ..change.snapshot import Snapshot
from ..change.worker import Check
from .context import FileServices
from .contract import Tool, ToolResponse
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
- The result lists the errors language servers report after the change, in this file and in up to
  5 other files that gained errors with it; the diff is in its metadata.
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

        def plan(snapshot: Snapshot, _check: Check) -> Planned:
            if not snapshot.exists:
                return Planned(new=new_text_file(params.content))
            try:
                old = snapshot.text
            except BinaryFileError as exc:
                raise ToolError(f"{path} is a binary file; write only replaces text files.",
                                code="binary_file") from exc  # fmt: skip
            if old.text == normalize_eol(params.content):
                raise NoChange(f"File {path} already contains the exact content. No changes made.")
            return Planned(new=new_text_file(params.content, like=old))

        def describe(planned: list[Planned]) -> str:
            action = "overwrite" if planned[0].snapshot and planned[0].snapshot.exists else "create"
            return f"{action} {ctx.display(path)}"

        def report(applied: Applied) -> tuple[str, dict[str, Any]]:
            planned = applied.planned[0]
            created = not (planned.snapshot and planned.snapshot.exists)
            assert planned.new is not None
            metadata = {key: planned.meta[key] for key in ("diff", "additions", "removals")}
            metadata.update(file_path=str(path), created=created, encoding=planned.new.encoding)
            verb = "created" if created else "written"
            return f"<result>\nFile successfully {verb}: {path}\n</result>", metadata

        request = ChangeRequest(self.name, [Target(path, plan, expect="any")], describe)
        return await change_files(ctx, request, report)


TOOL = WriteTool()
