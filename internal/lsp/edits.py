"""A server's WorkspaceEdit (a rename's answer) as exact text splices per file.

LSP ranges are (line, column) pairs with columns in the negotiated position encoding (UTF-16
unless the server took UTF-32). Lines end at ``\\r\\n``, ``\\n`` or ``\\r`` (the protocol's
rule), so the raw text of a file is split the same way whether the server saw it with CRLF or
LF line ends: a splice replaces exactly the characters the range covers, and every byte outside
the ranges stays as it was.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..fsutil.uris import is_file_uri, uri_to_path
from .positions import to_char

_LINE_END = re.compile(r"\r\n|\n|\r")


class WorkspaceEditError(Exception):
    """An edit that cannot be applied as given; the message says why, and nothing was written."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class TextEdit:
    """One replacement: start and end as (line, column in server units), and the new text."""

    start: tuple[int, int]
    end: tuple[int, int]
    new_text: str


def uri_path(uri: str) -> Path:
    if not is_file_uri(uri):
        raise WorkspaceEditError(f"the server proposed a change to {uri}, which is not a local file", "rename_not_file")
    return uri_to_path(uri)


def file_edits(edit: Any) -> dict[Path, list[TextEdit]]:
    """The text edits of a WorkspaceEdit per file, from ``documentChanges`` (TextDocumentEdit)
    or ``changes``. File operations (create, rename, delete) are refused: a rename that moves
    files is better done by the model with the file tools, where each step is visible."""
    result: dict[Path, list[TextEdit]] = {}
    document_changes = getattr(edit, "document_changes", None)
    if document_changes:
        for change in document_changes:
            kind = getattr(change, "kind", None)
            if kind is not None or not hasattr(change, "text_document"):
                raise WorkspaceEditError(
                    f"the server's rename also wants to {kind or 'change'} a file "
                    f"({getattr(change, 'uri', None) or getattr(change, 'old_uri', '?')}); file operations "
                    "are not applied by the lsp tool",
                    "rename_file_operation",
                )
            path = uri_path(change.text_document.uri)
            result.setdefault(path, []).extend(_text_edit(e) for e in change.edits)
    else:
        for uri, edits in (getattr(edit, "changes", None) or {}).items():
            result.setdefault(uri_path(uri), []).extend(_text_edit(e) for e in edits)
    return {path: edits for path, edits in result.items() if edits}


def _text_edit(edit: Any) -> TextEdit:
    rng = edit.range
    return TextEdit((rng.start.line, rng.start.character), (rng.end.line, rng.end.character), edit.new_text)


def _line_starts(raw: str) -> list[tuple[int, int]]:
    """(start offset, end offset without the line end) of every line of ``raw``."""
    lines, start = [], 0
    for match in _LINE_END.finditer(raw):
        lines.append((start, match.start()))
        start = match.end()
    lines.append((start, len(raw)))
    return lines


def _offset(raw: str, lines: list[tuple[int, int]], position: tuple[int, int], encoding: str) -> int:
    line, column = position
    if line >= len(lines):  # the protocol allows "the end of the document" this way
        if line == len(lines) and column == 0:
            return len(raw)
        raise WorkspaceEditError(
            f"the server's edit points at line {line + 1}, past the end of the file", "rename_out_of_range"
        )
    start, end = lines[line]
    return start + min(to_char(raw[start:end], column, encoding), end - start)


def apply_text_edits(raw: str, edits: list[TextEdit], encoding: str) -> str:
    """``raw`` with ``edits`` applied (all computed on ``raw``, as the protocol says); overlapping
    edits are refused."""
    lines = _line_starts(raw)
    spans = sorted(
        ((_offset(raw, lines, e.start, encoding), _offset(raw, lines, e.end, encoding), e.new_text) for e in edits),
        key=lambda span: (span[0], span[1]),
    )
    out, cursor = [], 0
    for start, end, text in spans:
        if start < cursor or end < start:
            raise WorkspaceEditError("the server's edits for one file overlap", "rename_overlapping_edits")
        out.append(raw[cursor:start])
        out.append(text)
        cursor = end
    out.append(raw[cursor:])
    return "".join(out)
