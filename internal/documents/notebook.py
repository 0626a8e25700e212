"""Jupyter notebooks (.ipynb): shown as cells, edited by cell, written back in the file's own style.

A notebook is JSON. Reading parses it with :mod:`json` (fast, no validation: a view never
writes). Editing changes one cell of the parsed document and serialises it again with the
indentation, key order, ASCII escaping, line endings and final newline the file already used, so
a notebook written by Jupyter (indent 1, keys sorted) comes back byte-identical outside the
edited cell. Before anything is written the result is checked with ``nbformat.validate``; the
same check guards text edits (edit, multiedit, patch, write) of a notebook, so no tool leaves a
notebook that Jupyter cannot open.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import ToolError
from ..truncate import cut_utf8
from . import MAX_IMAGES_PER_VIEW, is_notebook

#: One text output (a stream, a text/plain result) is cut to this many characters, head and tail kept.
MAX_OUTPUT_CHARS = 4000
#: An error output keeps the last this-many traceback lines (the frames nearest the error).
MAX_TRACEBACK_LINES = 20
#: Source lines longer than this are cut with "...".
MAX_SOURCE_LINE_CHARS = 2000
#: Image output types attached to a view.
IMAGE_OUTPUT_TYPES = ("image/png", "image/jpeg")

CellType = Literal["code", "markdown", "raw"]
EditMode = Literal["replace", "insert", "delete"]

# CSI sequences (colours, cursor moves) and OSC sequences (titles, links) as IPython emits them.
# A string, compiled on first use (re caches it): importing this module stays cheap for the CLI.
_ANSI = r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]"


def notebook_error(message: str, code: str) -> ToolError:
    return ToolError(message, {"error": code})


# --- the file's JSON style ---------------------------------------------------------------------


@dataclass(frozen=True)
class JsonStyle:
    """How a notebook file was serialised, so a rewrite looks like the original."""

    indent: int | str | None = 1
    ensure_ascii: bool = False
    separators: tuple[str, str] = (",", ": ")
    final_newline: bool = True
    crlf: bool = False
    bom: bool = False


def detect_style(text: str, bom: bool = False) -> JsonStyle:
    crlf = "\r\n" in text[:4096]
    final_newline = text.endswith("\n")
    indent: int | str | None = None
    match = re.search(r"\n([ \t]+)\S", text[:4096])
    if match:
        whitespace = match.group(1)
        indent = whitespace if "\t" in whitespace else len(whitespace)
    if indent is None:  # one line: compact or minified
        head = text[:4096]
        separators = (",", ":") if re.search(r'"\s*:\s*', head) and not re.search(r'":\s', head) else (", ", ": ")
    else:
        separators = (",", ": ")
    return JsonStyle(indent, _escapes_non_ascii(text), separators, final_newline, crlf, bom)


def _escapes_non_ascii(text: str) -> bool:
    """Did the writer escape non-ASCII characters (a backslash-u escape for é)? Only when the file is ASCII and
    holds such an escape; otherwise raw UTF-8, as Jupyter writes."""
    return text.isascii() and re.search(r"\\u(?!00[0-7])[0-9a-fA-F]{4}", text) is not None


# --- a parsed notebook -------------------------------------------------------------------------


@dataclass
class Notebook:
    data: dict[str, Any]
    style: JsonStyle
    #: The file's text (as decoded), for the "does a rewrite reproduce it" check.
    text: str = field(repr=False, default="")

    @property
    def cells(self) -> list[dict[str, Any]]:
        cells: list[dict[str, Any]] = self.data["cells"]
        return cells

    @property
    def version(self) -> tuple[int, int]:
        return int(self.data.get("nbformat", 0)), int(self.data.get("nbformat_minor", 0))

    @property
    def has_ids(self) -> bool:
        return self.version >= (4, 5)

    @property
    def language(self) -> str:
        meta = self.data.get("metadata") or {}
        info = meta.get("language_info") or {}
        kernel = meta.get("kernelspec") or {}
        return str(info.get("name") or kernel.get("language") or "")


def parse_notebook(raw: bytes, path: Path) -> Notebook:
    """The notebook in ``raw``; a :class:`ToolError` (``not_a_notebook``) when it is not one."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise notebook_error(f"{path} is not a notebook: not UTF-8 ({exc.reason} at byte {exc.start}).",
                             "not_a_notebook") from None  # fmt: skip
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise notebook_error(f"{path} is not a valid notebook: its JSON does not parse ({exc}).",
                             "not_a_notebook") from None  # fmt: skip
    if not isinstance(data, dict) or not isinstance(data.get("nbformat"), int):
        raise notebook_error(f"{path} is not a notebook: no top-level nbformat field.", "not_a_notebook")
    if data["nbformat"] < 4:
        data = _upgraded(text, path)
    elif not isinstance(data.get("cells"), list) or not all(isinstance(c, dict) for c in data["cells"]):
        raise notebook_error(f"{path} is not a valid notebook: 'cells' is not a list of cells.", "not_a_notebook")
    return Notebook(data, detect_style(text, bom=raw.startswith(b"\xef\xbb\xbf")), text)


def _upgraded(text: str, path: Path) -> dict[str, Any]:
    """An nbformat 3 notebook, converted to version 4 for display (never written back)."""
    import nbformat

    try:
        converted = nbformat.reads(text, as_version=4)  # type: ignore[no-untyped-call]
    except Exception as exc:  # nbformat raises several types for a malformed old notebook
        raise notebook_error(f"{path} is an old (nbformat 3) notebook that could not be read: {exc}",
                             "not_a_notebook") from None  # fmt: skip
    data: dict[str, Any] = json.loads(nbformat.writes(converted))  # type: ignore[no-untyped-call]
    data["_converted_from"] = 3
    return data


def dump_notebook(notebook: Notebook) -> bytes:
    style = notebook.style
    text = json.dumps(
        notebook.data, indent=style.indent, ensure_ascii=style.ensure_ascii, separators=style.separators
    )
    if style.final_newline:
        text += "\n"
    if style.crlf:
        text = text.replace("\n", "\r\n")
    return text.encode("utf-8-sig" if style.bom else "utf-8")


_WHITESPACE = r"[ \t\r\n]*"


def cell_spans(text: str) -> list[tuple[int, int]] | None:
    """Where each cell's JSON object starts and ends in ``text`` (a notebook's JSON, parsed with
    the standard decoder value by value); None when the layout is not the expected object."""
    decoder = json.JSONDecoder()
    space = re.compile(_WHITESPACE)

    def skip(at: int) -> int:
        match = space.match(text, at)
        assert match is not None  # the pattern matches the empty string
        return match.end()

    try:
        at = skip(0)
        if text[at] != "{":
            return None
        at += 1
        while True:
            at = skip(at)
            key, at = decoder.raw_decode(text, at)
            at = skip(at)
            if text[at] != ":":
                return None
            at = skip(at + 1)
            if key == "cells":
                return _array_spans(text, at, decoder, skip)
            _, at = decoder.raw_decode(text, at)
            at = skip(at)
            if text[at] != ",":
                return None
            at += 1
    except (ValueError, IndexError):
        return None


def _array_spans(
    text: str, at: int, decoder: json.JSONDecoder, skip: Callable[[int], int]
) -> list[tuple[int, int]] | None:
    if text[at] != "[":
        return None
    spans: list[tuple[int, int]] = []
    at = skip(at + 1)
    if text[at] == "]":
        return spans
    while True:
        _, end = decoder.raw_decode(text, at)
        spans.append((at, end))
        at = skip(end)
        if text[at] == "]":
            return spans
        if text[at] != ",":
            return None
        at = skip(at + 1)


def _cell_text(cell: dict[str, Any], style: JsonStyle, prefix: str) -> str:
    """One cell serialised as the file does, its continuation lines indented by ``prefix``."""
    text = json.dumps(cell, indent=style.indent, ensure_ascii=style.ensure_ascii, separators=style.separators)
    if style.indent is not None:
        text = text.replace("\n", "\n" + prefix)
    return text.replace("\n", "\r\n") if style.crlf else text


def spliced(notebook: Notebook, edit: CellEdit, before: int) -> bytes | None:
    """The original text with only the edited cell's JSON changed, for a file whose layout a
    whole rewrite would not reproduce; None when the cells cannot be located. ``before`` is the
    cell count before the edit."""
    text = notebook.text
    spans = cell_spans(text)
    if spans is None or len(spans) != before or not spans:
        return None
    style = notebook.style
    start0 = spans[0][0]
    prefix = text[text.rfind("\n", 0, start0) + 1 : start0]
    if prefix.strip(" \t"):  # the cells do not start their own lines
        prefix = ""
    index = edit.index
    if edit.mode == "replace":
        start, end = spans[index]
        result = text[:start] + _cell_text(notebook.cells[index], style, prefix) + text[end:]
    elif edit.mode == "delete":
        if len(spans) < 2:
            return None
        cut = (spans[index - 1][1], spans[index][1]) if index > 0 else (spans[0][0], spans[1][0])
        result = text[: cut[0]] + text[cut[1] :]
    else:
        if len(spans) > 1:
            between = text[spans[0][1] : spans[1][0]]
        elif style.indent is not None:
            between = "," + ("\r\n" if style.crlf else "\n") + prefix
        else:
            between = style.separators[0]
        cell = _cell_text(notebook.cells[index], style, prefix)
        if index > 0:
            at = spans[index - 1][1]
            result = text[:at] + between + cell + text[at:]
        else:
            result = text[:start0] + cell + between + text[start0:]
    return result.encode("utf-8-sig" if style.bom else "utf-8")


def write_notebook(notebook: Notebook, edit: CellEdit, before: int, reproduced: bool) -> tuple[bytes, bool]:
    """The new file content, and whether everything outside the edited cell is byte-identical:
    a whole rewrite when that reproduced the original file (``reproduced``), else a splice of the
    one cell into the original text, else (cells not locatable) a whole rewrite in the file's style."""
    if reproduced:
        return dump_notebook(notebook), True
    candidate = spliced(notebook, edit, before)
    if candidate is not None:
        try:
            if json.loads(candidate.decode("utf-8-sig")) == notebook.data:
                return candidate, True
        except ValueError:
            pass
    return dump_notebook(notebook), False


def cell_source(cell: dict[str, Any]) -> str:
    return _text(cell.get("source", ""))


def _text(value: Any) -> str:
    """A notebook string field: one string, or a list of strings (tolerating stray types)."""
    return "".join(v if isinstance(v, str) else str(v) for v in value) if isinstance(value, list) else str(value)


# --- rendering for view ------------------------------------------------------------------------


@dataclass
class RenderedCells:
    text: str
    #: Cells shown (from the offset).
    shown: int
    images: list[tuple[str, str]] = field(default_factory=list)


def strip_ansi(text: str) -> str:
    return re.sub(_ANSI, "", text)


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
        encoded = re.sub(r"\s+", "", _text(value))
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
        return [f"[{output.get('name', 'stream')}]", _bounded(strip_ansi(_text(output.get("text", "")))).rstrip("\n")]
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
            out += [label, _bounded(strip_ansi(_text(data["text/plain"]))).rstrip("\n")]
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


# --- editing -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CellEdit:
    mode: EditMode
    index: int
    old_source: str
    new_source: str
    cell_type: str
    cell_id: str | None


def find_cell(notebook: Notebook, path: Path, cell_id: str | None, cell_index: int | None) -> int:
    count = len(notebook.cells)
    if cell_id is not None:
        for index, cell in enumerate(notebook.cells):
            if cell.get("id") == cell_id:
                return index
        ids = [str(c["id"]) for c in notebook.cells if isinstance(c.get("id"), str)]
        if not ids:
            raise notebook_error(
                f"{path} has no cell ids (nbformat {'.'.join(map(str, notebook.version))}); "
                f"use cell_index (0 to {count - 1}) instead.", "cell_not_found")  # fmt: skip
        listed = ", ".join(ids[:50]) + (f", ... ({len(ids) - 50} more)" if len(ids) > 50 else "")
        raise notebook_error(f"No cell with id {cell_id!r} in {path}. Cell ids, in order: {listed}.", "cell_not_found")
    assert cell_index is not None
    if not 0 <= cell_index < count:
        raise notebook_error(
            f"cell_index {cell_index} is out of range: {path} has {count} cells (indexes 0 to {count - 1}).",
            "cell_not_found",
        )
    return cell_index


def _source_value(source: str, like: Any) -> str | list[str]:
    """The source as Jupyter stores it: a list of lines (keeping their newlines) unless the
    cell it replaces stored one string."""
    if isinstance(like, str):
        return source
    return source.splitlines(keepends=True)


def _new_cell_id(notebook: Notebook) -> str:
    taken = {c.get("id") for c in notebook.cells}
    while True:
        candidate = os.urandom(4).hex()
        if candidate not in taken:
            return candidate


def _set_type(cell: dict[str, Any], cell_type: str) -> None:
    """Change a cell's type, adding and removing the fields the schema requires of each type."""
    cell["cell_type"] = cell_type
    if cell_type == "code":
        cell.pop("attachments", None)
        cell.setdefault("execution_count", None)
        cell.setdefault("outputs", [])
    else:
        cell.pop("execution_count", None)
        cell.pop("outputs", None)


def _new_cell(notebook: Notebook, cell_type: str, source: str, like: Any) -> dict[str, Any]:
    cell: dict[str, Any] = {"cell_type": cell_type}
    if cell_type == "code":
        cell["execution_count"] = None
    if notebook.has_ids:
        cell["id"] = _new_cell_id(notebook)
    cell["metadata"] = {}
    if cell_type == "code":
        cell["outputs"] = []
    cell["source"] = _source_value(source, like)
    return cell


def apply_cell_edit(
    notebook: Notebook,
    path: Path,
    mode: EditMode,
    cell_id: str | None,
    cell_index: int | None,
    new_source: str,
    cell_type: str | None,
) -> CellEdit:
    """Change ``notebook`` in place; what changed, for the diff and the report."""
    if notebook.data.get("_converted_from"):
        raise notebook_error(
            f"{path} is an nbformat 3 notebook; notebook_edit writes only nbformat 4. Convert it first "
            "(jupyter nbconvert --to notebook --nbformat 4).", "unsupported_notebook")  # fmt: skip
    cells = notebook.cells
    # Jupyter's own files are consistent: copy the list-or-string style of the neighbours.
    like: Any = cells[0].get("source") if cells else []
    if mode == "insert":
        if cell_id is None and cell_index is None:
            position = len(cells)
        elif cell_id is not None:
            position = find_cell(notebook, path, cell_id, None) + 1
        else:
            assert cell_index is not None
            if not 0 <= cell_index <= len(cells):
                raise notebook_error(
                    f"cell_index {cell_index} is out of range for insert: {path} has {len(cells)} cells "
                    f"(insert at 0 to {len(cells)}; {len(cells)} appends).", "cell_not_found")  # fmt: skip
            position = cell_index
        kind = cell_type or "code"
        cell = _new_cell(notebook, kind, new_source, like)
        cells.insert(position, cell)
        return CellEdit("insert", position, "", new_source, kind, cell.get("id"))
    if cell_id is None and cell_index is None:
        raise notebook_error(f"{mode} needs cell_id or cell_index (view the notebook to see both).", "invalid_params")
    index = find_cell(notebook, path, cell_id, cell_index)
    cell = cells[index]
    old_source = cell_source(cell)
    if mode == "delete":
        del cells[index]
        return CellEdit("delete", index, old_source, "", str(cell.get("cell_type")), cell.get("id"))
    kind = cell_type or str(cell.get("cell_type", "code"))
    if kind != cell.get("cell_type"):
        _set_type(cell, kind)
    cell["source"] = _source_value(new_source, cell.get("source", like))
    if kind == "code":  # its outputs came from the old source
        cell["outputs"] = []
        cell["execution_count"] = None
    return CellEdit("replace", index, old_source, new_source, kind, cell.get("id"))


def validate(data: dict[str, Any], path: Path, original: bytes) -> None:
    """``nbformat.validate`` of the changed notebook, as a :class:`ToolError` (``notebook_invalid``)
    naming the problem — and saying so when the file was invalid before the change."""
    import nbformat

    try:
        nbformat.validate(data)
    except nbformat.ValidationError as exc:
        first = str(exc).strip().split("\n")[0]
        before = _notebook_problem(original)
        if before is not None:
            raise notebook_error(
                f"{path} is not a valid notebook even before this change ({before}); nothing was written. "
                "Repair it first (view shows the raw JSON of a notebook that does not parse; edit can fix it).",
                "notebook_invalid",
            ) from None
        raise notebook_error(
            f"The change would leave {path} an invalid notebook ({first}); nothing was written.",
            "notebook_invalid",
        ) from None


# --- guarding text edits -----------------------------------------------------------------------


def check_text_change(path: Path, old: bytes | None, new: bytes) -> None:
    """Refuse a text edit (edit, multiedit, patch, write) that would leave ``path`` a broken
    notebook: the new content must parse and validate — unless the old content did not
    either (then the edit may be the repair)."""
    if not is_notebook(path):
        return
    problem = _notebook_problem(new)
    if problem is None or (old is not None and _notebook_problem(old) is not None):
        return
    raise notebook_error(
        f"This change would leave {path} a broken notebook ({problem}); nothing was written. Edit notebooks "
        "by cell with notebook_edit (view shows each cell's index and id), which keeps the JSON valid.",
        "notebook_invalid",
    )


def _notebook_problem(raw: bytes) -> str | None:
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as exc:
        return f"its JSON does not parse: {exc}"
    if not isinstance(data, dict):
        return "its JSON is not an object"
    import nbformat

    try:
        nbformat.validate(data)
    except nbformat.ValidationError as exc:
        return "nbformat validation failed: " + str(exc).strip().split("\n")[0]
    return None
