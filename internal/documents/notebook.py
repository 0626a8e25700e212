"""Jupyter notebooks (.ipynb): the parsed document and the file's own JSON style.

A notebook is JSON. Reading parses it with :mod:`json` (fast, no validation: a view never
writes). A rewrite serialises it again with the indentation, key order, ASCII escaping, line
endings and final newline the file already used (:class:`JsonStyle`), so a notebook written by
Jupyter (indent 1, keys sorted) comes back byte-identical outside an edited cell. Showing cells
is ``notebook_render``'s job; changing them, and checking the result with ``nbformat.validate``,
is ``notebook_edit``'s.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import ToolError
from ..nesting import brackets_nest_deeper, json_deeper

CellType = Literal["code", "markdown", "raw"]


#: A notebook whose JSON nests arrays and objects deeper than this is refused
#: (``notebook_too_deep``): a real one needs a few levels (cells, outputs, their data), and the
#: parsers and validators that read it recurse (json itself gives up near a thousand).
MAX_NOTEBOOK_DEPTH = 256


def notebook_error(message: str, code: str) -> ToolError:
    return ToolError(message, code=code)


def too_deep_error(path: Path) -> ToolError:
    return notebook_error(
        f"{path} nests its JSON arrays and objects deeper than {MAX_NOTEBOOK_DEPTH} levels; no notebook does (cells, "
        "outputs and their data take a few), so it is not read as one and nothing was changed. Search its text "
        "with grep; if it should be a notebook, restore it (version control) or export it again from Jupyter.",
        "notebook_too_deep",
    )


def load_notebook_json(text: str, raw: bytes, path: Path) -> Any:
    """``json.loads(text)`` (``raw``: its bytes) with the nesting bounded: :func:`too_deep_error`
    past MAX_NOTEBOOK_DEPTH; ValueError for text that is not JSON. The bracket count over the
    bytes rules out almost every file; only one that might be too deep is measured loaded."""
    suspect = brackets_nest_deeper(raw, MAX_NOTEBOOK_DEPTH)
    try:
        data = json.loads(text)
    except RecursionError:
        raise too_deep_error(path) from None
    if suspect and json_deeper(data, MAX_NOTEBOOK_DEPTH):
        raise too_deep_error(path)
    return data


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
        data = load_notebook_json(text, raw, path)
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



def cell_source(cell: dict[str, Any]) -> str:
    return text_field(cell.get("source", ""))


def text_field(value: Any) -> str:
    """A notebook string field: one string, or a list of strings (tolerating stray types)."""
    return "".join(v if isinstance(v, str) else str(v) for v in value) if isinstance(value, list) else str(value)
