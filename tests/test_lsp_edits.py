"""WorkspaceEdit → exact splices (internal/lsp/edits.py): server columns, line ends, refusals."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.lsp.edits import TextEdit, WorkspaceEditError, apply_text_edits, file_edits
from agent_toolsmith.permission import Decision, PermissionRequest, ToolPolicy, read_only_policy
from agent_toolsmith.session import Session
from hypothesis import given
from hypothesis import strategies as st
from lsprotocol import types


def edit(line: int, start: int, end: int, text: str) -> TextEdit:
    return TextEdit((line, start), (line, end), text)


def test_utf16_columns_count_astral_characters_as_two_units() -> None:
    raw = "s = '😀é' + name\n"  # 😀 is two UTF-16 units, é one
    column = len("s = '😀é' + ".encode("utf-16-le")) // 2
    assert apply_text_edits(raw, [edit(0, column, column + 4, "other")], "utf-16") == "s = '😀é' + other\n"
    index = len("s = '😀é' + ")
    assert apply_text_edits(raw, [edit(0, index, index + 4, "other")], "utf-32") == "s = '😀é' + other\n"


def test_crlf_and_cr_line_ends_are_kept_and_count_as_one_break() -> None:
    raw = "a = 1\r\nb = a\rc = a\n"
    edits = [edit(0, 0, 1, "x"), edit(1, 4, 5, "x"), edit(2, 4, 5, "x")]
    assert apply_text_edits(raw, edits, "utf-16") == "x = 1\r\nb = x\rc = x\n"


def test_edits_apply_to_the_original_text_in_any_order() -> None:
    raw = "f(f)\n"
    assert apply_text_edits(raw, [edit(0, 2, 3, "gg"), edit(0, 0, 1, "gg")], "utf-16") == "gg(gg)\n"


def test_overlapping_edits_and_positions_past_the_end_are_refused() -> None:
    with pytest.raises(WorkspaceEditError) as overlap:
        apply_text_edits("abcdef\n", [edit(0, 0, 3, "x"), edit(0, 2, 4, "y")], "utf-16")
    assert overlap.value.code == "rename_overlapping_edits"
    with pytest.raises(WorkspaceEditError) as past:
        apply_text_edits("one\n", [edit(5, 0, 1, "x")], "utf-16")
    assert past.value.code == "rename_out_of_range"
    # The line after the last one, column 0, is the end of the document.
    assert apply_text_edits("one\n", [TextEdit((1, 0), (1, 0), "two\n")], "utf-16") == "one\ntwo\n"


@given(st.text(alphabet="ab😀é\r\n ", max_size=30), st.data())
def test_a_splice_changes_exactly_the_characters_of_its_range(raw: str, data: st.DataObject) -> None:
    """Any range given in UTF-16 units on any line (the line ends as the protocol splits them)
    replaces just that slice: the rest of the text is kept, byte for byte."""
    import re

    lines = re.split(r"\r\n|\n|\r", raw)
    line = data.draw(st.integers(0, len(lines) - 1))
    text = lines[line]
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    units = [len(text[:i].encode("utf-16-le")) // 2 for i in (start, end)]
    offset = sum(len(m) for m in re.findall(r"[^\r\n]*(?:\r\n|\n|\r)", raw)[:line])
    new = apply_text_edits(raw, [edit(line, units[0], units[1], "Z")], "utf-16")
    assert new == raw[: offset + start] + "Z" + raw[offset + end :]


def test_document_changes_and_changes_give_the_same_edits() -> None:
    rng = types.Range(types.Position(0, 4), types.Position(0, 9))
    as_changes = types.WorkspaceEdit(changes={"file:///w/a.py": [types.TextEdit(rng, "yell")]})
    as_documents = types.WorkspaceEdit(
        document_changes=[
            types.TextDocumentEdit(
                types.OptionalVersionedTextDocumentIdentifier("file:///w/a.py", 3), [types.TextEdit(rng, "yell")]
            )
        ]
    )
    expected = {Path("/w/a.py"): [TextEdit((0, 4), (0, 9), "yell")]}
    assert file_edits(as_changes) == expected == file_edits(as_documents)


def test_file_operations_and_non_file_documents_are_refused() -> None:
    moving = types.WorkspaceEdit(document_changes=[types.RenameFile("file:///w/a.py", "file:///w/b.py")])
    with pytest.raises(WorkspaceEditError) as refused:
        file_edits(moving)
    assert refused.value.code == "rename_file_operation" and "rename a file" in str(refused.value)
    remote = types.WorkspaceEdit(
        changes={"untitled:Untitled-1": [types.TextEdit(types.Range(types.Position(0, 0), types.Position(0, 0)), "x")]}
    )
    with pytest.raises(WorkspaceEditError) as not_file:
        file_edits(remote)
    assert not_file.value.code == "rename_not_file"


def test_read_only_sessions_offer_lsp_and_refuse_its_writes(tmp_path: Path) -> None:
    session = Session(tmp_path, config=Config(lsp_enabled=False), tool_policy=ToolPolicy(read_only=True))
    (lsp,) = [t for t in session.tools() if t.name == "lsp"]
    assert lsp.read_only is False  # MCP's readOnlyHint: a host must not run a rename unasked
    refused = asyncio.run(session.ctx.permissions.ask(PermissionRequest("lsp", "write", "a.py")))
    assert refused is Decision.DENY
    assert asyncio.run(session.ctx.permissions.ask(PermissionRequest("lsp", "read", "/x"))) is Decision.ALLOW_ONCE


def test_read_only_policy_refuses_the_lsp_tools_writes_only() -> None:
    assert asyncio.run(read_only_policy(PermissionRequest("lsp", "write", "a.py"))).value == "deny"
    assert asyncio.run(read_only_policy(PermissionRequest("lsp", "read", "/elsewhere/a.py"))).value == "allow_once"
