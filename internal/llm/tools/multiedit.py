"""multiedit: several edits to one file, applied in order, all or nothing."""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import ToolError
from ...fsutil.textio import new_text_file
from ...textmatch import EditError, EditRequest, apply_edits
from ..change.edits import create_file, edit_file
from .context import FileServices
from .contract import Tool, ToolResponse
from .params import param

DESCRIPTION = """Makes several edits to one file in a single call. Prefer this tool over several edit calls
when you need to make multiple changes to the same file.

- Same rules as edit for each item: read the file with view first; each `old_string` must match
  one place (or set `replace_all`); small whitespace/escape slips are tolerated and reported.
- Edits apply in order, each to the result of the previous ones: plan them so an earlier edit
  does not change the text a later one looks for.
- All or nothing: if any edit fails, no change is written and the error names the edit (numbered
  from 1) and why, with the same help as edit (the closest region of the file).
- To create a new file, use an empty `old_string` and the full file contents as `new_string` in
  the first edit; later edits then apply to that content.
- The syntax gate judges the final result only: changes that are valid only together (a block
  opened in one edit and closed in another) pass here, where separate edit calls are refused.
- One diff and one write for the whole call; encoding, BOM and line endings are preserved. The
  result includes the errors language servers report after the change (this file and up to 5
  others that gained errors). For changes that span several files, prefer patch.
- For Jupyter notebooks (.ipynb) use notebook_edit; edits that would break a notebook are refused.
"""


@dataclass(frozen=True)
class EditItem:
    old_string: str = param("The text to replace")
    new_string: str = param("The text to replace it with")
    replace_all: bool = param("Replace every occurrence of old_string", False)


@dataclass(frozen=True)
class MultiEditParams:
    file_path: str = param("The file to change (absolute or relative to the workspace root)", minLength=1)
    edits: list[EditItem] = param("The edits, applied in order", minItems=1)


class MultiEditTool(Tool):
    name = "multiedit"
    title = "Edit a file in several places"
    description = DESCRIPTION
    Params = MultiEditParams

    async def run(self, params: MultiEditParams, ctx: FileServices) -> ToolResponse:
        items = params.edits
        for index, item in enumerate(items):
            if item.old_string == "" and index > 0:
                raise ToolError(
                    f"Edit {index + 1}: old_string is empty; only the first edit may create the file.",
                    code="invalid_params",
                )
        try:
            if items[0].old_string == "":
                # Create: apply the remaining edits in memory first, so a failing one writes nothing.
                rest = [EditRequest(i.old_string, i.new_string, i.replace_all) for i in items[1:]]
                start = new_text_file(items[0].new_string)
                content = apply_edits(start, rest, path=params.file_path).file.raw if rest else start.raw
                return await create_file(ctx, self.name, params.file_path, content)
            requests = [EditRequest(i.old_string, i.new_string, i.replace_all) for i in items]
            return await edit_file(ctx, self.name, params.file_path, requests)
        except EditError as exc:
            offset = 1 if items[0].old_string == "" else 0
            raise ToolError(_with_index(exc, offset), exc.metadata, code=exc.metadata["error"]) from exc


def _with_index(exc: EditError, offset: int) -> str:
    """Edits are numbered from 1, as the model lists them."""
    index = getattr(exc, "edit_index", None)
    where = f"Edit {index + offset + 1}" if index is not None else "An edit"
    return f"{where} failed, so no changes were made: {exc.message}"


TOOL = MultiEditTool()
