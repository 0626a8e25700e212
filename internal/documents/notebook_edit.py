"""Notebook edits by cell, written back so that everything outside the edited cell keeps its
bytes, and the ``nbformat.validate`` check that guards every change of a notebook — by cell
(notebook_edit) or as text (edit, multiedit, patch, write) — so no tool leaves a notebook that
Jupyter cannot open.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..errors import ToolError
from . import is_notebook
from .notebook import (
    MAX_NOTEBOOK_DEPTH,
    JsonStyle,
    Notebook,
    cell_source,
    dump_notebook,
    load_notebook_json,
    notebook_error,
)

EditMode = Literal["replace", "insert", "delete"]


@dataclass(frozen=True)
class CellEdit:
    mode: EditMode
    index: int
    old_source: str
    new_source: str
    cell_type: str
    cell_id: str | None


# --- writing back ------------------------------------------------------------------------------


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


# --- editing -----------------------------------------------------------------------------------


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
        before = _notebook_problem(original, path)
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
    problem = _notebook_problem(new, path)
    if problem is None or (old is not None and _notebook_problem(old, path) is not None):
        return
    raise notebook_error(
        f"This change would leave {path} a broken notebook ({problem}); nothing was written. Edit notebooks "
        "by cell with notebook_edit (view shows each cell's index and id), which keeps the JSON valid.",
        "notebook_invalid",
    )


def _notebook_problem(raw: bytes, path: Path) -> str | None:
    try:
        data = load_notebook_json(raw.decode("utf-8-sig"), raw, path)
    except (UnicodeDecodeError, ValueError) as exc:
        return f"its JSON does not parse: {exc}"
    except ToolError:  # too deep
        return f"its JSON nests deeper than {MAX_NOTEBOOK_DEPTH} levels"
    if not isinstance(data, dict):
        return "its JSON is not an object"
    import nbformat

    try:
        nbformat.validate(data)
    except nbformat.ValidationError as exc:
        return "nbformat validation failed: " + str(exc).strip().split("\n")[0]
    return None
