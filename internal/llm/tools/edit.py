"""edit: replace one exact (or safely-forgiven) occurrence of text in a file."""

from __future__ import annotations

from dataclasses import dataclass

from ...textmatch import EditRequest
from ..change.edits import create_file, edit_file
from .context import FileServices
from .contract import Tool, ToolResponse
from .params import param

DESCRIPTION = """Edits a file by replacing `old_string` with `new_string`.

- Read the file with view first. If the file changed since you read it (a formatter, a hook),
  the edit still applies when the text it replaces is unchanged and matches one place (the
  result says so); otherwise it is refused and you must read the file again.
- `old_string` must identify exactly one place in the file: include enough surrounding lines to
  make it unique, or set `replace_all` to true to change every occurrence. If it appears several
  times you get the line numbers of each.
- Copy `old_string` from the file as it is, without the line-number prefix view adds (if lines
  carry it, it is stripped and the numbers must name the matched lines). Small
  slips are tolerated and reported: trailing spaces, a shifted or tab/space-converted indentation
  (new_string is re-indented the same way), extra spaces inside lines, literal `\\n`/`\\t`
  escapes, typographic quotes, blank lines at either end. Anything else must match exactly;
  when it does not, the error shows the closest region of the file.
- `new_string` replaces the match exactly; an empty `new_string` deletes the matched text.
  Write it with the file's indentation. When `old_string` starts at a line's first non-blank
  character (without its indentation) and new_string's further lines are written from that
  column, they are given the line's indentation, their relative indentation kept (the result
  says so).
- Syntax gate: a change that leaves a file that parsed cleanly unparseable is refused with the
  line:column and the would-be lines. If changes are only valid together (opening and closing a
  block), make them in one multiedit call. To change a whole function or class by name, use
  symbol_edit; to find symbols, outline.
- An empty `old_string` creates a new file with `new_string` as its content (the file must not exist).
- For several changes to one file, prefer multiedit (one call, all or nothing); for changes that
  span several files, prefer patch.
- For Jupyter notebooks (.ipynb) use notebook_edit (by cell); an edit that would leave a notebook
  that no longer parses or validates is refused.
- The file's encoding, BOM and line endings are preserved. The result lists the errors
  language servers report after the change, in this file and in up to 5 other files that gained
  errors with it; the diff is in its metadata (and in the text when the match was not exact).
"""


@dataclass(frozen=True)
class EditParams:
    file_path: str = param("The file to change (absolute or relative to the workspace root)", minLength=1)
    old_string: str = param("The text to replace (empty to create a new file)")
    new_string: str = param("The text to replace it with (empty to delete)")
    replace_all: bool = param("Replace every occurrence of old_string", False)


class EditTool(Tool):
    name = "edit"
    title = "Edit a file"
    description = DESCRIPTION
    Params = EditParams

    async def run(self, params: EditParams, ctx: FileServices) -> ToolResponse:
        if params.old_string == "":
            return await create_file(ctx, self.name, params.file_path, params.new_string)
        edit = EditRequest(params.old_string, params.new_string, params.replace_all)
        return await edit_file(ctx, self.name, params.file_path, [edit])


TOOL = EditTool()
