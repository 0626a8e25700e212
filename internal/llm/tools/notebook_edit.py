"""notebook_edit: replace, insert or delete one cell of a Jupyter notebook, keeping it valid."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ...diff import diff_metadata
from ...documents import is_notebook
from ...errors import InvalidParams, ToolError
from ...vocabulary import tool_name
from ..change.pipeline import Applied, ChangeRequest, Planned, Target, change_files
from ..change.snapshot import Snapshot
from ..change.worker import Check
from .context import FileServices
from .contract import Tool, ToolResponse
from .params import param

if TYPE_CHECKING:
    from ...documents.notebook_edit import CellEdit

DESCRIPTION = """Edits a Jupyter notebook (.ipynb) by cell: replace a cell's source, insert a new cell, or
delete a cell. Use this for notebooks instead of edit, multiedit, write or patch.

- Read the notebook with view first: it shows each cell's index and id. The edit is refused if the
  file changed since you read it.
- Pick the cell with `cell_id` (preferred: ids do not shift) or `cell_index` (0-based), not both.
- `edit_mode`: `replace` (default) sets the cell's source to `new_source` (and its type, if
  `cell_type` is given); `insert` adds a new cell with `new_source` right after the cell `cell_id`,
  or at position `cell_index` (0 = first; the cell count appends), or at the end when neither is
  given (`cell_type` defaults to code); `delete` removes the cell (`new_source` is ignored).
- `new_source` is the cell's whole source as plain text (no JSON escaping, no line numbers);
  required for replace and insert.
- A replaced code cell's outputs and execution count are cleared (they came from the old source);
  every other cell, the notebook metadata and the file's formatting are kept. The result is
  validated (nbformat) before it is written, and the diff shows the cell's source.
"""


@dataclass(frozen=True)
class NotebookEditParams:
    file_path: str = param("The notebook to change (absolute or relative to the workspace root)", minLength=1)
    new_source: str | None = param("The cell's new source, as plain text (required for replace and insert)", None)
    cell_id: str | None = param("The id of the cell to change (as view shows it)", None, minLength=1)
    cell_index: int | None = param("The 0-based index of the cell (for insert: the new cell's position)", None,
                                   minimum=0)  # fmt: skip
    cell_type: Literal["code", "markdown", "raw"] | None = param(
        "The cell's type (insert: default code; replace: default unchanged)", None
    )
    edit_mode: Literal["replace", "insert", "delete"] = param("What to do with the cell", "replace")


class NotebookEditTool(Tool):
    name = "notebook_edit"
    title = "Edit a notebook cell"
    description = DESCRIPTION
    Params = NotebookEditParams

    async def run(self, params: NotebookEditParams, ctx: FileServices) -> ToolResponse:
        from ...documents.notebook import dump_notebook, parse_notebook
        from ...documents.notebook_edit import apply_cell_edit, validate, write_notebook

        path = ctx.resolve(params.file_path)
        if not is_notebook(path):
            raise ToolError(f"{path} is not a notebook (.ipynb); use {tool_name('edit')} for other files.",
                            code="not_a_notebook")  # fmt: skip
        if params.new_source is None and params.edit_mode != "delete":
            raise InvalidParams(f"new_source is required for {params.edit_mode} (use \"\" for an empty cell).")
        new_source = params.new_source or ""
        try:
            new_source.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ToolError(f"new_source holds a character that cannot be stored in a notebook (UTF-8): "
                            f"{exc.object[exc.start:exc.end]!r} at index {exc.start}; nothing was written.",
                            code="invalid_source") from None  # fmt: skip
        if params.cell_id is not None and params.cell_index is not None:
            raise InvalidParams("Give cell_id or cell_index, not both.")
        display = ctx.display(path)

        def plan(snapshot: Snapshot, check: Check) -> Planned:
            data = snapshot.data
            assert data is not None
            notebook = parse_notebook(data, path)
            reproduced = dump_notebook(notebook) == data
            before = len(notebook.cells)
            edit = apply_cell_edit(
                notebook, path, params.edit_mode, params.cell_id, params.cell_index, new_source, params.cell_type
            )
            validate(notebook.data, path, data)
            label = f"{display} (cell {edit.index}{f' id={edit.cell_id}' if edit.cell_id else ''})"
            diff = diff_metadata(edit.old_source, edit.new_source, label, cancel=check)
            new_data, kept_format = write_notebook(notebook, edit, before, reproduced)
            # The syntax gate reads source files; the notebook was validated above (nbformat).
            return Planned(data=new_data, diff=diff, gate=False, value=(edit, kept_format))

        def describe(planned: list[Planned]) -> str:
            edit = planned[0].value[0]
            return f"{edit.mode} cell {edit.index} of {display}"

        def report(applied: Applied) -> tuple[str, dict[str, Any]]:
            planned = applied.planned[0]
            edit, kept_format = planned.value
            metadata = {key: planned.meta[key] for key in ("diff", "additions", "removals")}
            metadata.update(
                file_path=str(path), edit_mode=edit.mode, cell_index=edit.index, cell_id=edit.cell_id,
                cell_type=edit.cell_type, formatting_kept=kept_format,
            )  # fmt: skip
            return _report(edit, str(path), kept_format), metadata

        request = ChangeRequest(self.name, [Target(path, plan)], describe)
        return await change_files(ctx, request, report)


def _report(edit: CellEdit, path: str, kept_format: bool) -> str:
    cell = f"cell {edit.index}" + (f" (id {edit.cell_id})" if edit.cell_id else "")
    if edit.mode == "insert":
        text = f"Inserted {edit.cell_type} {cell} in {path}."
    elif edit.mode == "delete":
        text = f"Deleted {edit.cell_type} {cell} from {path}; later cells moved up one index."
    else:
        cleared = " Its outputs and execution count were cleared." if edit.cell_type == "code" else ""
        text = f"Replaced the source of {edit.cell_type} {cell} in {path}.{cleared}"
    if not kept_format:
        text += (
            "\nNote: the file's JSON layout could not be reproduced exactly (unusual spacing or number "
            "formats), so it was rewritten in a uniform layout; the content is unchanged apart from this cell."
        )
    return f"<result>\n{text}\n</result>"


TOOL = NotebookEditTool()
