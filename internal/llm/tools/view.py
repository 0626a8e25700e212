"""view: read a file with line numbers, a page at a time, streaming so any size can be paged."""

from __future__ import annotations

import codecs
import io
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...cancel import in_thread
from ...documents import MAX_IMAGES_PER_VIEW, MAX_PAGES_PER_VIEW, is_notebook, is_pdf
from ...errors import ToolError
from ...fsutil.paths import open_regular_file, read_error
from ...fsutil.printable import printable
from ...fsutil.textio import BINARY_SNIFF_BYTES, decode_bytes, detect_bom, looks_binary
from ...truncate import cut_utf8
from .context import PathServices
from .contract import ImageAttachment, Tool, ToolResponse
from .params import param

#: Default page size in lines.
DEFAULT_LIMIT = 2000
#: Longer lines are cut here and marked with "...".
MAX_LINE_CHARS = 2000
#: Files up to this size are decoded whole (exact encoding detection, exact line count);
#: larger ones are streamed and their total line count is estimated.
FULL_READ_MAX_BYTES = 8 * 1024 * 1024
#: How much of a large file the streaming decoder samples to choose an encoding.
ENCODING_SAMPLE_BYTES = 64 * 1024
Check = Callable[[], None]

#: Images larger than this are not attached.
MAX_IMAGE_BYTES = 5 * 1024 * 1024
IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}

#: Notebooks and PDFs larger than this are refused (they are parsed whole).
MAX_DOCUMENT_BYTES = 256 * 1024 * 1024

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


@dataclass
class Page:
    lines: list[str]
    total: int
    total_exact: bool
    encoding: str
    #: The whole file's bytes, when the page was cut from a full read (they record the read).
    data: bytes | None = None
    #: For an image: the whole response.
    image: ToolResponse | None = None


class ViewTool(Tool):
    name = "view"
    title = "Read a file"
    description = DESCRIPTION
    Params = ViewParams
    read_only = True
    needs_event_loop = False

    async def run(self, params: ViewParams, ctx: PathServices) -> ToolResponse:
        path = ctx.resolve(params.file_path)
        approved = await ctx.require_read_permission(self.name, path)
        if path.is_dir():
            raise ToolError(
                f"Path is a directory, not a file: {printable(str(path))}. Use the ls tool to list a directory."
            )
        if params.pages is not None and not is_pdf(path):
            raise ToolError(f"pages applies to PDF files only; {printable(str(path))} is not a .pdf. Use offset "
                            "and limit.", {"error": "invalid_params"})  # fmt: skip
        allowed = ctx.read_guard(approved)
        if is_notebook(path):
            response = await _view_notebook(path, params, ctx, allowed)
            if response is not None:
                return response
        if is_pdf(path):
            return await _view_pdf(path, params, ctx, allowed)
        media_type = IMAGE_TYPES.get(path.suffix.lower())
        limit = min(params.limit, ctx.config.max_output_lines)

        def read(check: Callable[[], None]) -> tuple[Page, os.stat_result]:
            fd, st = open_regular_file(path, allowed=allowed)
            try:
                if media_type:
                    return _read_image(fd, st, path, media_type), st
                return _read_page(fd, st, path, params.offset, limit, ctx, check), st
            except OSError as exc:  # /proc/self/mem and the like: "regular", but unreadable
                raise read_error(exc, path) from None
            finally:
                os.close(fd)

        page, st = await in_thread(read, ctx.cancel)
        if page.image is not None:
            ctx.files.record_read(path, page.data, st)
            return page.image
        if params.offset > 0 and params.offset >= page.total and page.total_exact:
            raise ToolError(
                f"offset {params.offset} is beyond the end of the file ({page.total} lines). "
                f"Use an offset below {page.total}."
            )
        ctx.files.record_read(path, page.data, st)
        content, shown = _render(page, params.offset, ctx.config.max_output_bytes)
        end = params.offset + shown
        metadata: dict[str, Any] = {
            "file_path": str(path),
            "offset": params.offset,
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
                f"\n\n(Showing lines {params.offset + 1}-{end} of {about}{page.total} total. "
                f"Use offset={end} to continue reading.)"
            )
        diagnostics = await ctx.diagnostics_after_view(path)
        if diagnostics:
            content += "\n\n" + diagnostics
        return ToolResponse(content, metadata=metadata)


def _read_document(path: Path, check: Check, allowed: Callable[[Path], bool]) -> tuple[bytes, os.stat_result]:
    fd, st = open_regular_file(path, allowed=allowed)
    try:
        if st.st_size > MAX_DOCUMENT_BYTES:
            raise ToolError(f"{printable(str(path))} is {st.st_size} bytes, more than the {MAX_DOCUMENT_BYTES} "
                            "byte limit for notebooks and PDFs.", {"error": "file_too_large"})  # fmt: skip
        return _read_all(fd, st.st_size), st
    finally:
        os.close(fd)


async def _view_notebook(
    path: Path, params: ViewParams, ctx: PathServices, allowed: Callable[[Path], bool]
) -> ToolResponse | None:
    """A notebook's cells; None when the file is not valid notebook JSON (it is shown as text,
    so a broken notebook can still be read and repaired)."""
    from ...documents.notebook import parse_notebook
    from ...documents.notebook_render import describe, render_cells

    def read(check: Check) -> tuple[bytes, os.stat_result, Any]:
        data, st = _read_document(path, check, allowed)
        try:
            notebook = parse_notebook(data, path)
        except ToolError:
            return data, st, None
        limit = min(params.limit, ctx.config.max_output_lines)
        return data, st, (notebook, render_cells(notebook, params.offset, limit, ctx.config.max_output_bytes,
                                                 MAX_IMAGE_BYTES))  # fmt: skip

    data, st, parsed = await in_thread(read, ctx.cancel)
    if parsed is None:
        return None
    notebook, rendered = parsed
    total = len(notebook.cells)
    if params.offset > 0 and params.offset >= total:
        raise ToolError(f"offset {params.offset} is beyond the last cell ({total} cells). Use an offset below {total}.",
                        {"error": "offset_out_of_range"})  # fmt: skip
    ctx.files.record_read(path, data, st)
    end = params.offset + rendered.shown
    content = f'<notebook path="{printable(str(path))}" {describe(notebook)}>\n'
    content += (rendered.text or "(The notebook has no cells.)") + "\n</notebook>"
    if end < total:
        content += f"\n\n(Showing cells {params.offset}-{end - 1} of {total} (0-based). Use offset={end} to continue.)"
    metadata: dict[str, Any] = {
        "file_path": str(path), "notebook": True, "offset": params.offset, "cells_shown": rendered.shown,
        "total_cells": total, "images": len(rendered.images), "truncated": end < total,
    }  # fmt: skip
    images = [ImageAttachment(media_type, encoded) for media_type, encoded in rendered.images]
    return ToolResponse(content, metadata=metadata, images=images)


async def _view_pdf(
    path: Path, params: ViewParams, ctx: PathServices, allowed: Callable[[Path], bool]
) -> ToolResponse:
    from ...documents.pdf import extract_pages

    def read(check: Check) -> tuple[bytes, os.stat_result, Any]:
        data, st = _read_document(path, check, allowed)
        return data, st, extract_pages(data, path, params.pages, check)

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


def _render(page: Page, offset: int, max_bytes: int) -> tuple[str, int]:
    out = ["<file>"]
    used = len("<file>\n</file>")
    shown = 0
    for i, line in enumerate(page.lines):
        if len(line) > MAX_LINE_CHARS:
            line = line[:MAX_LINE_CHARS] + "..."
        rendered = f"{offset + i + 1:6d}|{line}"
        size = len(rendered.encode("utf-8", "surrogatepass")) + 1
        if used + size > max_bytes:
            if shown == 0:  # one huge line: show what fits rather than nothing
                out.append(cut_utf8(rendered, max_bytes - used) + "...")
                shown = 1
            break
        out.append(rendered)
        used += size
        shown += 1
    if not page.lines:
        out.append("(File is empty.)" if page.total == 0 else "")
    out.append("</file>")
    return "\n".join(out), shown


def _read_all(fd: int, size: int) -> bytes:
    """The whole file, read to its end (it may have grown since the stat)."""
    chunks = []
    while chunk := os.read(fd, max(size, 64 * 1024)):
        chunks.append(chunk)
    return b"".join(chunks)


def _read_page(
    fd: int, st: os.stat_result, path: Path, offset: int, limit: int, ctx: PathServices, check: Check
) -> Page:
    if st.st_size <= FULL_READ_MAX_BYTES:
        data = _read_all(fd, st.st_size)
        text_file = decode_bytes(data, path=str(path))
        lines = text_file.text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return Page(lines[offset : offset + limit], len(lines), True, text_file.encoding, data)
    head = os.pread(fd, ENCODING_SAMPLE_BYTES, 0)
    bom, encoding = detect_bom(head)
    if encoding is None:
        if looks_binary(head[:BINARY_SNIFF_BYTES]):
            raise ToolError(
                f"File appears to be binary: {printable(str(path))}. Use the appropriate tool for this file type."
            )
        encoding = _sample_encoding(head)
    if "\n".encode(encoding) != b"\n" or (b"\r" in head and b"\n" not in head):
        return _stream_page(fd, st.st_size, len(bom), encoding, offset, limit, check)
    return _indexed_page(fd, st, len(bom), encoding, offset, limit, ctx, check)


def _indexed_page(
    fd: int, st: os.stat_result, base: int, encoding: str, offset: int, limit: int, ctx: PathServices, check: Check
) -> Page:
    """Lines of a large ASCII-compatible file, found by byte scanning through the session's index."""
    from ...fsutil.line_index import read_lines  # large files only: a small view does not load it

    index = ctx.line_indexes.get(f"{st.st_dev}:{st.st_ino}", st, base)
    start = index.line_start(fd, offset, check)
    if start is None:
        assert index.total is not None
        return Page([], index.total, True, encoding)
    # Twice the output budget is more than any page can show; the rest is never read.
    page = read_lines(fd, start, limit, 2 * ctx.config.max_output_bytes, 4 * MAX_LINE_CHARS + 4)
    lines = [line.decode(encoding, "replace") for line in page.lines]
    if page.at_eof:
        index.total = offset + len(lines)
    if index.total is not None:
        return Page(lines, index.total, True, encoding)
    average = max((page.end - base) / max(offset + len(lines), 1), 1.0)
    return Page(lines, max(offset + len(lines) + 1, round((st.st_size - base) / average)), False, encoding)


def _stream_page(fd: int, size: int, base: int, encoding: str, offset: int, limit: int, check: Check) -> Page:
    """Lines of a large file whose newlines are not single bytes (UTF-16/32, lone CR): decoded
    as a stream from the start, at most MAX_LINE_CHARS+1 characters of a line held at once."""
    with os.fdopen(os.dup(fd), "rb") as raw:
        raw.seek(base)
        # errors="replace": a stray byte deep in a huge file should not make it unreadable;
        # view never writes, so nothing is corrupted.
        reader = io.TextIOWrapper(raw, encoding=encoding, errors="replace", newline=None)
        lines: list[str] = []
        count = 0
        for line in _bounded_lines(reader):
            count += 1
            if count % 65536 == 0:
                check()
            if count > offset:
                lines.append(line)
                if len(lines) >= limit:
                    break
        consumed = raw.tell()
    average = max(consumed / max(count, 1), 1.0)
    estimate = max(count, round(size / average))
    exact = consumed >= size and len(lines) < limit
    return Page(lines, count if exact else estimate, exact, encoding)


def _sample_encoding(sample: bytes) -> str:
    try:
        codecs.getincrementaldecoder("utf-8")().decode(sample, final=False)
        return "utf-8"
    except UnicodeDecodeError:
        return decode_bytes(sample[: sample.rfind(b"\n") + 1] or sample).encoding


def _bounded_lines(reader: io.TextIOWrapper) -> Iterator[str]:
    """Lines without their ending, each at most MAX_LINE_CHARS+1 characters in memory."""
    while True:
        line = reader.readline(MAX_LINE_CHARS + 1)
        if not line:
            return
        if line.endswith("\n"):
            yield line[:-1]
            continue
        if len(line) <= MAX_LINE_CHARS:  # last line, no newline
            yield line
            return
        rest = line
        while rest and not rest.endswith("\n"):  # skip the remainder of an overlong line
            rest = reader.readline(64 * 1024)
        yield line


def _read_image(fd: int, st: os.stat_result, path: Path, media_type: str) -> Page:
    import base64  # images only: a text view does not load it

    size = st.st_size
    if size > MAX_IMAGE_BYTES:
        raise ToolError(
            f"Image {printable(str(path))} is {size} bytes, more than the {MAX_IMAGE_BYTES} byte limit for attachments."
        )
    data = _read_all(fd, size)
    image = ToolResponse(
        f"Image file {printable(str(path))} ({media_type}, {len(data)} bytes) attached.",
        metadata={"file_path": str(path), "media_type": media_type, "size": len(data), "image": True},
        images=[ImageAttachment(media_type, base64.b64encode(data).decode("ascii"))],
    )
    return Page([], 0, True, "", data, image)


TOOL = ViewTool()
