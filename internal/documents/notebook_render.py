"""Notebook cells as view shows them: numbered source, bounded outputs, attached images."""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field
from typing import Any

from ..truncate import cut_utf8, strip_ansi
from . import MAX_IMAGES_PER_VIEW
from .notebook import Notebook, cell_source, text_field

#: One text output (a stream, a text/plain result) is cut to this many characters, head and tail kept.
MAX_OUTPUT_CHARS = 4000
#: An error output keeps the last this-many traceback lines (the frames nearest the error).
MAX_TRACEBACK_LINES = 20
#: Source lines longer than this are cut with "...".
MAX_SOURCE_LINE_CHARS = 2000
#: Image output types attached to a view.
IMAGE_OUTPUT_TYPES = ("image/png", "image/jpeg")

@dataclass
class RenderedCells:
    text: str
    #: Cells shown (from the offset).
    shown: int
    images: list[tuple[str, str]] = field(default_factory=list)


def _bounded(text: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n... [{len(text) - 2 * half} characters of output omitted] ...\n{text[-half:]}"


def _numbered(source: str) -> list[str]:
    lines = source.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    out = []
    for number, line in enumerate(lines, 1):
        if len(line) > MAX_SOURCE_LINE_CHARS:
            line = line[:MAX_SOURCE_LINE_CHARS] + "..."
        out.append(f"{number:6d}|{line}")
    return out


def _cell_header(index: int, cell: dict[str, Any]) -> str:
    parts = [f"[cell {index}]"]
    if isinstance(cell.get("id"), str):
        parts.append(f"id={cell['id']}")
    parts.append(str(cell.get("cell_type", "?")))
    if cell.get("cell_type") == "code":
        count = cell.get("execution_count")
        parts.append(f"execution_count={count if count is not None else '-'}")
    return " ".join(parts)


class _Images:
    """Image outputs attached so far (bounded in number and size)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.attached: list[tuple[str, str]] = []

    def add(self, media_type: str, value: Any) -> str:
        encoded = re.sub(r"\s+", "", text_field(value))
        try:
            size = len(base64.b64decode(encoded, validate=True))
        except (binascii.Error, ValueError):
            return f"[{media_type} output: not valid base64, not attached]"
        if size > self.max_bytes:
            return f"[{media_type} output, {size} bytes: larger than the {self.max_bytes} byte limit, not attached]"
        if len(self.attached) >= MAX_IMAGES_PER_VIEW:
            return (f"[{media_type} output, {size} bytes: not attached, this view already has "
                    f"{MAX_IMAGES_PER_VIEW} images; view from this cell's offset to see it]")  # fmt: skip
        self.attached.append((media_type, encoded))
        return f"[{media_type} output, {size} bytes: attached as image {len(self.attached)}]"


def _render_output(output: dict[str, Any], images: _Images) -> list[str]:
    kind = output.get("output_type")
    if kind == "stream":
        stream = text_field(output.get("text", ""))
        return [f"[{output.get('name', 'stream')}]", _bounded(strip_ansi(stream)).rstrip("\n")]
    if kind == "error":
        traceback = [strip_ansi(line) for line in output.get("traceback", [])]
        lines = "\n".join(traceback).split("\n")
        shown = lines[-MAX_TRACEBACK_LINES:]
        head = [f"[error] {output.get('ename', '')}: {strip_ansi(str(output.get('evalue', '')))}"]
        if len(lines) > len(shown):
            head.append(f"... [{len(lines) - len(shown)} traceback lines omitted] ...")
        return [*head, _bounded("\n".join(shown))] if traceback else head
    if kind in ("execute_result", "display_data"):
        data = output.get("data") or {}
        out = []
        for media_type in IMAGE_OUTPUT_TYPES:
            if media_type in data:
                out.append(images.add(media_type, data[media_type]))
        if "text/plain" in data:
            label = "[result]" if kind == "execute_result" else "[display]"
            out += [label, _bounded(strip_ansi(text_field(data["text/plain"]))).rstrip("\n")]
        others = sorted(k for k in data if k != "text/plain" and k not in IMAGE_OUTPUT_TYPES)
        if others:
            out.append(f"[also in {', '.join(others)}: not shown]")
        return out
    return [f"[{kind} output]"]


def _render_cell(index: int, cell: dict[str, Any], images: _Images) -> str:
    lines = [_cell_header(index, cell)]
    source = cell_source(cell)
    lines += _numbered(source) if source else ["(empty)"]
    outputs = cell.get("outputs") or []
    if outputs:
        lines.append("Outputs:")
        for output in outputs if isinstance(outputs, list) else []:
            if not isinstance(output, dict):
                continue
            try:
                lines += _render_output(output, images)
            except (TypeError, AttributeError, ValueError):  # a hand-edited or foreign notebook
                lines.append(f"[{output.get('output_type', 'unknown')} output: malformed, not shown]")
    return "\n".join(lines)


def render_cells(notebook: Notebook, offset: int, limit: int, max_bytes: int, max_image_bytes: int) -> RenderedCells:
    """Cells ``offset``.. (at most ``limit``), in at most ``max_bytes`` of text."""
    images = _Images(max_image_bytes)
    blocks: list[str] = []
    used = 0
    for index in range(offset, min(len(notebook.cells), offset + limit)):
        before = len(images.attached)
        block = _render_cell(index, notebook.cells[index], images)
        size = len(block.encode("utf-8", "surrogatepass")) + 2
        if used + size > max_bytes:
            if not blocks:  # one huge cell: show what fits rather than nothing
                blocks.append(cut_utf8(block, max(max_bytes - used - 64, 0)) + "\n... [cell cut: output limit]")
            else:
                del images.attached[before:]
            break
        blocks.append(block)
        used += size
    return RenderedCells("\n\n".join(blocks), len(blocks), images.attached)


def describe(notebook: Notebook) -> str:
    major, minor = notebook.version
    parts = [f"{len(notebook.cells)} cells", f"nbformat {major}.{minor}"]
    if notebook.language:
        parts.append(f"language {notebook.language}")
    if notebook.data.get("_converted_from"):
        parts.append("shown converted from nbformat 3")
    return ", ".join(parts)

