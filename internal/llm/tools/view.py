"""view: read a file with line numbers, a page at a time, streaming so any size can be paged."""

from __future__ import annotations

from dataclasses import dataclass

from ...documents import MAX_IMAGES_PER_VIEW, MAX_PAGES_PER_VIEW
from ..pages import DEFAULT_LIMIT, MAX_LINE_CHARS, show_file
from .context import PathServices
from .contract import Tool, ToolResponse
from .params import param

DESCRIPTION = f"""Reads a file from the local filesystem and returns its lines numbered from 1 (`     1|text`).

- `file_path`: absolute, or relative to the workspace root.
- `offset` is the 0-based line to start from; `limit` is how many lines to return (default {DEFAULT_LIMIT}).
- Jupyter notebooks (.ipynb) are shown as cells: index, id, type, numbered source, then outputs
  (text, errors with the end of the traceback; png/jpeg outputs attached as images, at most
  {MAX_IMAGES_PER_VIEW} per call). For a notebook `offset` and `limit` count cells. Change notebooks
  with notebook_edit (by cell id or index), not edit.
- PDFs are shown as text by page: `pages` picks them ("3", "1-5", "2,4"), at most {MAX_PAGES_PER_VIEW}
  pages per call; the footer gives the page count. A page without a text layer (a scan) is reported as
  an image; it is not rendered.
- Output is capped at {DEFAULT_LIMIT} lines and 50 KiB; lines longer than {MAX_LINE_CHARS} characters are cut with
  "...". When more remains, the last line says which offset to use to continue.
- Prefer reading a large window in one call over many small slices: avoid tiny repeated slices such as
  30-line chunks. If you need more context, read a larger window in a single call.
- Images (png, jpg, gif, webp) are returned as image attachments. Binary files are refused.
- Directories are refused: use the ls tool to list them (or glob to find files).
- A missing file gets an error with up to 3 similar names.
- Reading a file is required before editing it with edit, multiedit, write or patch.
"""


@dataclass(frozen=True)
class ViewParams:
    file_path: str = param("The file to read (absolute or relative to the workspace root)", minLength=1)
    offset: int = param("0-based line number to start reading from (for a notebook: the first cell)", 0, minimum=0)
    limit: int = param("Number of lines to read (for a notebook: cells)", DEFAULT_LIMIT, minimum=1)
    pages: str | None = param('PDF only: the pages to read, e.g. "3", "1-5" or "2,4" (default: from page 1)', None)


class ViewTool(Tool):
    name = "view"
    title = "Read a file"
    description = DESCRIPTION
    Params = ViewParams
    read_only = True
    needs_event_loop = False

    async def run(self, params: ViewParams, ctx: PathServices) -> ToolResponse:
        return await show_file(ctx, params.file_path, params.offset, params.limit, params.pages)


TOOL = ViewTool()
