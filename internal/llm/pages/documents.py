"""Notebooks and PDFs as view shows them: a notebook's cells, a PDF's text by page."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...cancel import in_thread
from ...documents import MAX_PAGES_PER_VIEW
from ...errors import ToolError
from ...fsutil.paths import open_regular_file, read_opened
from ...fsutil.printable import printable
from ...truncate import cut_utf8
from ..tools.context import PathServices
from ..tools.contract import ImageAttachment, ToolResponse
from .text import MAX_IMAGE_BYTES, Check

#: Notebooks and PDFs larger than this are refused (they are parsed whole).
MAX_DOCUMENT_BYTES = 256 * 1024 * 1024


def _read_document(path: Path, check: Check, allowed: Callable[[Path], bool]) -> tuple[bytes, os.stat_result]:
    fd, st = open_regular_file(path, allowed=allowed)
    try:
        if st.st_size > MAX_DOCUMENT_BYTES:
            raise ToolError(f"{printable(str(path))} is {st.st_size} bytes, more than the {MAX_DOCUMENT_BYTES} "
                            "byte limit for notebooks and PDFs.", code="file_too_large")  # fmt: skip
        return read_opened(fd, path, st.st_size), st
    finally:
        os.close(fd)


async def view_notebook(
    path: Path, offset: int, limit: int, ctx: PathServices, allowed: Callable[[Path], bool]
) -> ToolResponse | None:
    """A notebook's cells; None when the file is not valid notebook JSON (it is shown as text,
    so a broken notebook can still be read and repaired)."""
    from ...documents.notebook import parse_notebook
    from ...documents.notebook_render import describe, render_cells

    def read(check: Check) -> tuple[bytes, os.stat_result, Any]:
        data, st = _read_document(path, check, allowed)
        try:
            notebook = parse_notebook(data, path)
        except ToolError as exc:
            return data, st, exc if exc.metadata.get("error") == "notebook_too_deep" else None
        cells = min(limit, ctx.config.max_output_lines)
        return data, st, (notebook, render_cells(notebook, offset, cells, ctx.config.max_output_bytes,
                                                 MAX_IMAGE_BYTES))  # fmt: skip

    data, st, parsed = await in_thread(read, ctx.cancel)
    if parsed is None:
        return None
    if isinstance(parsed, ToolError):  # too deep: its text (brackets on a line) would not help either
        ctx.files.record_read(path, data, st)  # the model knows what it is: write may replace it
        raise ToolError(
            parsed.message + " It counts as viewed, so write can replace it.", parsed.metadata, code="notebook_too_deep"
        )
    notebook, rendered = parsed
    total = len(notebook.cells)
    if offset > 0 and offset >= total:
        raise ToolError(f"offset {offset} is beyond the last cell ({total} cells). Use an offset below {total}.",
                        code="offset_out_of_range")  # fmt: skip
    ctx.files.record_read(path, data, st)
    end = offset + rendered.shown
    content = f'<notebook path="{printable(str(path))}" {describe(notebook)}>\n'
    content += (rendered.text or "(The notebook has no cells.)") + "\n</notebook>"
    if end < total:
        content += f"\n\n(Showing cells {offset}-{end - 1} of {total} (0-based). Use offset={end} to continue.)"
    metadata: dict[str, Any] = {
        "file_path": str(path), "notebook": True, "offset": offset, "cells_shown": rendered.shown,
        "total_cells": total, "images": len(rendered.images), "truncated": end < total,
    }  # fmt: skip
    images = [ImageAttachment(media_type, encoded) for media_type, encoded in rendered.images]
    return ToolResponse(content, metadata=metadata, images=images)


async def view_pdf(
    path: Path, pages: str | None, ctx: PathServices, allowed: Callable[[Path], bool]
) -> ToolResponse:
    from ...documents.pdf import extract_pages

    def read(check: Check) -> tuple[bytes, os.stat_result, Any]:
        data, st = _read_document(path, check, allowed)
        return data, st, extract_pages(data, path, pages, check)

    data, st, result = await in_thread(read, ctx.cancel)
    ctx.files.record_read(path, data, st)
    budget = ctx.config.max_output_bytes
    blocks: list[str] = []
    shown: list[int] = []
    used = 0
    for number, text, has_images in result.pages:
        body = text if text is not None else _textless_page(number, has_images)
        block = f"--- page {number} of {result.count} ---\n{body}"
        size = len(block.encode("utf-8", "surrogatepass")) + 1
        if used + size > budget and shown:
            break
        if used + size > budget:
            block = cut_utf8(block, budget - used - 80) + f"\n... [page {number} cut: output limit]"
        blocks.append(block)
        shown.append(number)
        used += size
    left = [n for n, _, _ in result.pages if n not in set(shown)] + result.remaining
    title = ' title="{}"'.format(result.title.replace('"', "'")) if result.title else ""
    content = f'<pdf path="{printable(str(path))}" pages={result.count}{title}>\n' + "\n\n".join(blocks) + "\n</pdf>"
    content += _pdf_footer(shown, left, result.count)
    metadata: dict[str, Any] = {
        "file_path": str(path), "pdf": True, "total_pages": result.count, "pages_shown": shown,
        "image_only_pages": [n for n, text, has in result.pages if text is None and has and n in shown],
        "truncated": bool(left),
    }  # fmt: skip
    return ToolResponse(content, metadata=metadata)


#: A "pages to continue with" hint longer than this names only the next call's pages.
MAX_PAGES_HINT_CHARS = 80


def _pdf_footer(shown: list[int], left: list[int], count: int) -> str:
    from ...documents.pdf import describe_ranges

    if not shown:
        return "\n\n(The PDF has no pages.)"
    footer = f"\n\n(Showed page{'s' if len(shown) != 1 else ''} {describe_ranges(shown)} of {count}."
    if not left:
        return footer + ")"
    rest = describe_ranges(left)
    if len(rest) > MAX_PAGES_HINT_CHARS:
        rest = describe_ranges(left[:MAX_PAGES_PER_VIEW])
        return footer + f' Use pages="{rest}" to continue; {len(left)} of the requested pages remain.)'
    return footer + f' Use pages="{rest}" to continue (at most {MAX_PAGES_PER_VIEW} pages per call).)'


def _textless_page(number: int, has_images: bool) -> str:
    if not has_images:
        return f"[page {number} has no text.]"
    return (
        f"[page {number} has no text layer: it is an image (a scan?). Pages are not rendered to images here "
        "(no pure-Python renderer); OCR or a renderer such as pdftoppm is needed to read it.]"
    )


