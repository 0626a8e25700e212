"""view: read a file with line numbers, a page at a time, streaming so any size can be paged."""

from __future__ import annotations

import base64
import codecs
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import ToolError
from ...fsutil.paths import is_within, not_found_error
from ...fsutil.textio import BINARY_SNIFF_BYTES, decode_bytes, detect_bom, looks_binary
from ...truncate import cut_utf8
from .params import param
from .tools import ImageAttachment, Tool, ToolContext, ToolResponse

#: Default page size in lines.
DEFAULT_LIMIT = 2000
#: Longer lines are cut here and marked with "...".
MAX_LINE_CHARS = 2000
#: Files up to this size are decoded whole (exact encoding detection, exact line count);
#: larger ones are streamed and their total line count is estimated.
FULL_READ_MAX_BYTES = 8 * 1024 * 1024
#: How much of a large file the streaming decoder samples to choose an encoding.
ENCODING_SAMPLE_BYTES = 64 * 1024
#: Images larger than this are not attached.
MAX_IMAGE_BYTES = 5 * 1024 * 1024
IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}

DESCRIPTION = f"""Reads a file from the local filesystem and returns its lines numbered from 1 (`     1|text`).

- `file_path`: absolute, or relative to the workspace root.
- `offset` is the 0-based line to start from; `limit` is how many lines to return (default {DEFAULT_LIMIT}).
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
    file_path: str = param("The path of the file to read", minLength=1)
    offset: int = param("0-based line number to start reading from", 0, minimum=0)
    limit: int = param("Number of lines to read", DEFAULT_LIMIT, minimum=1)


@dataclass
class Page:
    lines: list[str]
    total: int
    total_exact: bool
    encoding: str
    #: The whole file's bytes, when the page was cut from a full read (they record the read).
    data: bytes | None = None


class ViewTool(Tool):
    name = "view"
    description = DESCRIPTION
    Params = ViewParams
    read_only = True

    async def run(self, params: ViewParams, ctx: ToolContext) -> ToolResponse:
        path = ctx.resolve(params.file_path)
        if not is_within(path, ctx.workspace):
            await ctx.require_permission(self.name, "read", str(path), f"read {path} (outside the workspace)")
        if path.is_dir():
            raise ToolError(f"Path is a directory, not a file: {path}. Use the ls tool to list a directory.")
        if not path.exists():
            raise not_found_error(path)
        media_type = IMAGE_TYPES.get(path.suffix.lower())
        if media_type:
            return _image(path, media_type, ctx)
        page = _read_page(path, params.offset, min(params.limit, ctx.config.max_output_lines))
        if params.offset > 0 and params.offset >= page.total and page.total_exact:
            raise ToolError(
                f"offset {params.offset} is beyond the end of the file ({page.total} lines). "
                f"Use an offset below {page.total}."
            )
        ctx.files.record_read(path, page.data)
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


def _read_page(path: Path, offset: int, limit: int) -> Page:
    size = path.stat().st_size
    if size <= FULL_READ_MAX_BYTES:
        data = path.read_bytes()
        text_file = decode_bytes(data, path=str(path))
        lines = text_file.text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return Page(lines[offset : offset + limit], len(lines), True, text_file.encoding, data)
    return _stream_page(path, size, offset, limit)


def _stream_page(path: Path, size: int, offset: int, limit: int) -> Page:
    """Read only lines ``offset`` .. ``offset+limit`` of a large file, plus an estimated total."""
    with open(path, "rb") as raw:
        head = raw.read(ENCODING_SAMPLE_BYTES)
        bom, encoding = detect_bom(head)
        if encoding is None:
            if looks_binary(head[:BINARY_SNIFF_BYTES]):
                raise ToolError(f"File appears to be binary: {path}. Use the appropriate tool for this file type.")
            encoding = _sample_encoding(head)
        raw.seek(len(bom))
        # errors="replace": a stray byte deep in a huge file should not make it unreadable;
        # view never writes, so nothing is corrupted.
        reader = io.TextIOWrapper(raw, encoding=encoding, errors="replace", newline=None)
        lines: list[str] = []
        consumed = len(bom)
        count = 0
        for line in _bounded_lines(reader):
            count += 1
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


def _image(path: Path, media_type: str, ctx: ToolContext) -> ToolResponse:
    size = path.stat().st_size
    if size > MAX_IMAGE_BYTES:
        raise ToolError(f"Image {path} is {size} bytes, more than the {MAX_IMAGE_BYTES} byte limit for attachments.")
    data = path.read_bytes()
    ctx.files.record_read(path, data)
    return ToolResponse(
        f"Image file {path} ({media_type}, {size} bytes) attached.",
        metadata={"file_path": str(path), "media_type": media_type, "size": size, "image": True},
        images=[ImageAttachment(media_type, base64.b64encode(data).decode("ascii"))],
    )


TOOL = ViewTool()
