"""A text file as view shows it: a page of numbered lines, read so any size can be paged.

Files up to :data:`FULL_READ_MAX_BYTES` are decoded whole (exact encoding detection, exact line
count); larger ones are paged by byte scanning through the session's line index (ASCII-compatible
encodings) or decoded as a stream (UTF-16/32, lone CR), and their total is estimated.
"""

from __future__ import annotations

import codecs
import io
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ...errors import ToolError
from ...fsutil.paths import read_opened
from ...fsutil.printable import printable
from ...fsutil.textio import BINARY_SNIFF_BYTES, decode_bytes, detect_bom, looks_binary
from ...truncate import cut_utf8
from ..tools.context import PathServices
from ..tools.contract import ImageAttachment

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



@dataclass
class Page:
    lines: list[str]
    total: int
    total_exact: bool
    encoding: str
    #: The whole file's bytes, when the page was cut from a full read (they record the read).
    data: bytes | None = None
    #: For an image: the file's bytes as an attachment (``data`` holds them too).
    image: ImageAttachment | None = None


def render(page: Page, offset: int, max_bytes: int) -> tuple[str, int]:
    lines = page.lines
    # At least a character a byte, and 8 for the number, the bar and the newline: a page that
    # cannot fit is cut line by line below without numbering the lines past the cut.
    if lines and sum(map(len, lines)) + 8 * len(lines) + len("<file>\n</file>") <= max_bytes:
        numbers = range(offset + 1, offset + 1 + len(lines))
        if max(map(len, lines)) <= MAX_LINE_CHARS:  # no line to cut: numbered by one C-level format
            body = "\n".join(map("%6d|%s".__mod__, zip(numbers, lines, strict=True)))
        else:
            body = "\n".join(map(_numbered, numbers, lines))
        size = len(body) if body.isascii() else len(body.encode("utf-8", "surrogatepass"))
        if len("<file>\n\n</file>") + size <= max_bytes:  # the whole page fits: the usual case
            return f"<file>\n{body}\n</file>", len(lines)
    out = ["<file>"]
    used = len("<file>\n</file>")
    shown = 0
    for number, line in enumerate(lines, offset + 1):
        rendered = _numbered(number, line)
        size = (len(rendered) if rendered.isascii() else len(rendered.encode("utf-8", "surrogatepass"))) + 1
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


def _numbered(number: int, line: str) -> str:
    """A line as view shows it: its number, a bar, the line (cut past MAX_LINE_CHARS)."""
    return f"{number:6d}|{line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + '...'}"


def read_page(
    fd: int, st: os.stat_result, path: Path, offset: int, limit: int, ctx: PathServices, check: Check
) -> Page:
    if st.st_size <= FULL_READ_MAX_BYTES:
        data = read_opened(fd, path, st.st_size)
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
                f"File appears to be binary: {printable(str(path))}. Use the appropriate tool for this file type.",
                code="binary_file")
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


def read_image(fd: int, st: os.stat_result, path: Path, media_type: str) -> Page:
    import base64  # images only: a text view does not load it

    size = st.st_size
    if size > MAX_IMAGE_BYTES:
        raise ToolError(f"Image {printable(str(path))} is {size} bytes, more than the {MAX_IMAGE_BYTES} byte limit "
                        "for attachments.", code="file_too_large")  # fmt: skip
    data = read_opened(fd, path, size)
    return Page([], 0, True, "", data, ImageAttachment(media_type, base64.b64encode(data).decode("ascii")))
