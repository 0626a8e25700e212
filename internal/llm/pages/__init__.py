"""A file shown as pages: what view returns, and what read_many shows of each file.

:func:`show_file` is the whole read of one file — the read permission, text pages (text.py),
notebooks and PDFs (documents.py), images as attachments — recording the read (so the file may
be edited next) and adding the language servers' diagnostics after it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ...cancel import in_thread
from ...documents import is_notebook, is_pdf
from ...errors import InvalidParams, IsDirectory, OffsetOutOfRange
from ...fsutil.paths import open_regular_file, read_error
from ...fsutil.printable import printable
from ...vocabulary import line_number, param_name, tool_name
from ..tools.context import PathServices
from ..tools.contract import ToolResponse
from .documents import view_notebook, view_pdf
from .text import DEFAULT_LIMIT, IMAGE_TYPES, MAX_IMAGE_BYTES, MAX_LINE_CHARS, Page, read_image, read_page, render

__all__ = ["DEFAULT_LIMIT", "IMAGE_TYPES", "MAX_IMAGE_BYTES", "MAX_LINE_CHARS", "show_file"]

#: Files up to this size are read on the calling thread: reading and decoding them takes less
#: than handing the work to a worker thread and back (~0.1 ms on an idle machine, more on a busy
#: one). Larger files are read in a worker thread, so the event loop keeps running.
INLINE_READ_MAX_BYTES = 64 * 1024


async def show_file(
    ctx: PathServices, file_path: str, offset: int = 0, limit: int = DEFAULT_LIMIT, pages: str | None = None,
    *, tool: str = "view",
) -> ToolResponse:  # fmt: skip
    """``file_path`` as view shows it, from line (notebook: cell) ``offset``, ``limit`` of them;
    a PDF's ``pages``. ``tool`` names the caller in a read permission prompt."""
    path = ctx.resolve(file_path)
    approved = await ctx.require_read_permission(tool, path)
    if path.is_dir():
        listing = tool_name("ls")
        raise IsDirectory(
            f"Path is a directory, not a file: {printable(str(path))}. Use the {listing} tool to list a directory."
        )
    if pages is not None and not is_pdf(path):
        raise InvalidParams(
            f"pages applies to PDF files only; {printable(str(path))} is not a .pdf. Use {_offset()} and limit."
        )
    allowed = ctx.read_guard(approved)
    if is_notebook(path):
        response = await view_notebook(path, offset, limit, ctx, allowed)
        if response is not None:
            return response
    if is_pdf(path):
        return await view_pdf(path, pages, ctx, allowed)
    media_type = IMAGE_TYPES.get(path.suffix.lower())
    limit = min(limit, ctx.config.max_output_lines)

    fd, st = open_regular_file(path, allowed=allowed)  # non-blocking: refuses a FIFO or device at once

    def read(check: Callable[[], None]) -> Page:
        try:
            if media_type:
                return read_image(fd, st, path, media_type)
            return read_page(fd, st, path, offset, limit, ctx, check)
        except OSError as exc:  # /proc/self/mem and the like: "regular", but unreadable
            raise read_error(exc, path) from None
        finally:
            os.close(fd)

    if st.st_size <= INLINE_READ_MAX_BYTES:
        page = read(ctx.cancel.raise_if_cancelled)  # less than a thread hop costs
    else:
        page = await in_thread(read, ctx.cancel)
    if page.image is not None:
        ctx.files.record_read(path, page.data, st)
        size = len(page.data or b"")
        return ToolResponse(
            f"Image file {printable(str(path))} ({page.image.media_type}, {size} bytes) attached.",
            metadata={"file_path": str(path), "media_type": page.image.media_type, "size": size, "image": True},
            images=[page.image],
        )
    if offset > 0 and offset >= page.total and page.total_exact:
        raise OffsetOutOfRange(
            f"{_offset()} {_line(offset)} is beyond the end of the file ({page.total} lines). Use {_offset()} below "
            f"{_line(page.total)}."
        )
    ctx.files.record_read(path, page.data, st)
    content, shown = render(page, offset, ctx.config.max_output_bytes)
    end = offset + shown
    metadata: dict[str, Any] = {
        "file_path": str(path),
        "offset": offset,
        "lines_shown": shown,
        "total_lines": page.total,
        "total_lines_exact": page.total_exact,
        "encoding": page.encoding,
        "truncated": end < page.total or not page.total_exact,
    }
    more = end < page.total if page.total_exact else True
    if more:
        about = "" if page.total_exact else "about "
        content += (
            f"\n\n(Showing lines {offset + 1}-{end} of {about}{page.total} total. "
            f"Use {_offset()}={_line(end)} to continue reading.)"
        )
    diagnostics = await ctx.diagnostics_after_view(path)
    if diagnostics:
        content += "\n\n" + diagnostics
    return ToolResponse(content, metadata=metadata)


def _offset() -> str:
    """view's ``offset`` as the model's tool calls it (a profile's ``start_line``, say)."""
    return param_name("view", "offset")


def _line(offset: int) -> int:
    """A 0-based line offset as the model's tool counts it (1-based for the profiles that do)."""
    return line_number("view", "offset", offset)
