"""Every writer through the same matrix: the change pipeline (llm/change) decides each case once,
so write, edit, multiedit, patch, notebook_edit and symbol_edit must answer it alike — same
outcome, same code, nothing written when refused."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.permission import Decision, PermissionRequest
from agent_toolsmith.session import Session

SOURCE = 'def greet():\n    return "hello"\n\n\ndef other():\n    return 1\n'
CELLS = [{"cell_type": "code", "execution_count": None, "id": "c1", "metadata": {}, "outputs": [], "source": "x = 1"}]
NOTEBOOK = json.dumps({"cells": CELLS, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"
#: A refusal of a FIFO must come long before any timeout would.
PROMPT_S = 10.0


@dataclass(frozen=True)
class Writer:
    """A writer, the file it changes, and its call (``broken``: the new text does not parse)."""

    name: str
    file: str
    content: str
    params: Callable[[str, bool], dict[str, Any]]
    #: Whether a change since the read that left its lines alone is re-anchored.
    reanchors: bool


def _patch(path: str, broken: bool) -> dict[str, Any]:
    new = "    return (" if broken else '    return "hi"'
    return {"patch_text": f'*** Begin Patch\n*** Update File: {path}\n@@\n def greet():\n-    return "hello"\n+{new}\n'
                          "*** End Patch"}  # fmt: skip


WRITERS = [
    Writer("write", "m.py", SOURCE, lambda p, b: {"file_path": p, "content": "def greet(:\n" if b else 'x = "hi"\n'},
           reanchors=False),
    Writer("edit", "m.py", SOURCE, lambda p, b: {"file_path": p, "old_string": 'return "hello"',
                                                 "new_string": "return (" if b else 'return "hi"'}, reanchors=True),
    Writer("multiedit", "m.py", SOURCE, lambda p, b: {"file_path": p, "edits": [
        {"old_string": 'return "hello"', "new_string": "return (" if b else 'return "hi"'}]}, reanchors=True),
    Writer("patch", "m.py", SOURCE, _patch, reanchors=True),
    Writer("symbol_edit", "m.py", SOURCE, lambda p, b: {"file_path": p, "symbol": "greet",
           "new_string": "def greet(:\n" if b else 'def greet():\n    return "hi"\n'}, reanchors=False),
    Writer("notebook_edit", "n.ipynb", NOTEBOOK, lambda p, b: {"file_path": p, "cell_id": "c1", "new_source": "x = 2"},
           reanchors=False),
]  # fmt: skip
IDS = [w.name for w in WRITERS]


async def _allow_reads_deny_writes(request: PermissionRequest) -> Decision:
    return Decision.DENY if request.action == "write" else Decision.ALLOW_ONCE


def _session(workspace: Path, **kwargs: Any) -> Session:
    return Session(workspace, config=Config(lsp_enabled=False), **kwargs)


def _call(session: Session, tool: str, params: dict[str, Any]) -> Any:
    return asyncio.run(session.run(tool, params))


def _placed(workspace: Path, writer: Writer) -> Path:
    target = workspace / writer.file
    target.write_text(writer.content)
    return target


def _code(response: Any) -> str | None:
    return response.metadata.get("error") if response.is_error else None


@pytest.mark.parametrize("writer", WRITERS, ids=IDS)
def test_a_file_not_read_is_refused_and_left_alone(workspace: Path, writer: Writer) -> None:
    target = _placed(workspace, writer)
    params = writer.params(writer.file, False)
    if writer.name == "patch":  # exact context is evidence of a read: a fuzzy chunk is not
        params = {"patch_text": params["patch_text"].replace('-    return "hello"', '-    return "hello"  ')}
    response = _call(_session(workspace), writer.name, params)
    assert _code(response) == "not_read", response.content
    assert target.read_text() == writer.content


@pytest.mark.parametrize("writer", WRITERS, ids=IDS)
def test_a_denying_asker_is_obeyed_and_nothing_is_written(workspace: Path, writer: Writer) -> None:
    target = _placed(workspace, writer)
    session = _session(workspace, asker=_allow_reads_deny_writes)
    assert not _call(session, "view", {"file_path": writer.file}).is_error
    response = _call(session, writer.name, writer.params(writer.file, False))
    assert _code(response) == "denied", response.content
    assert target.read_text() == writer.content


@pytest.mark.parametrize("writer", WRITERS, ids=IDS)
def test_a_change_since_the_read_in_the_edited_lines_is_refused(workspace: Path, writer: Writer) -> None:
    target = _placed(workspace, writer)
    session = _session(workspace)
    _call(session, "view", {"file_path": writer.file})
    changed = writer.content.replace('return "hello"', 'return "HELLO"').replace("x = 1", "x = 11")
    target.write_text(changed)
    response = _call(session, writer.name, writer.params(writer.file, False))
    assert _code(response) == "changed_since_read", response.content
    assert target.read_text() == changed


@pytest.mark.parametrize("writer", WRITERS, ids=IDS)
def test_a_change_since_the_read_elsewhere_re_anchors_only_where_the_writer_says(
    workspace: Path, writer: Writer
) -> None:
    target = _placed(workspace, writer)
    session = _session(workspace)
    _call(session, "view", {"file_path": writer.file})
    elsewhere = writer.content + "\n\ndef added():\n    pass\n" if writer.file.endswith(".py") else writer.content + " "
    target.write_text(elsewhere)
    response = _call(session, writer.name, writer.params(writer.file, False))
    if writer.reanchors:
        assert not response.is_error, response.content
        assert response.metadata.get("reanchored") or response.metadata["files"][0].get("reanchored")
        assert target.read_text() == elsewhere.replace('return "hello"', 'return "hi"')
    else:
        assert _code(response) == "changed_since_read", response.content
        assert target.read_text() == elsewhere


@pytest.mark.parametrize("writer", WRITERS, ids=IDS)
def test_a_path_outside_the_workspace_is_refused(workspace: Path, writer: Writer) -> None:
    outside = workspace.parent / "elsewhere"
    outside.mkdir()
    target = outside / writer.file
    target.write_text(writer.content)
    session = _session(workspace)
    _call(session, "view", {"file_path": str(target)})
    response = _call(session, writer.name, writer.params(str(target), False))
    assert _code(response) == "outside_workspace", response.content
    assert target.read_text() == writer.content


@pytest.mark.parametrize("writer", WRITERS, ids=IDS)
def test_a_protected_directory_is_refused(workspace: Path, writer: Writer) -> None:
    (workspace / ".git").mkdir()
    target = workspace / ".git" / writer.file
    target.write_text(writer.content)
    session = _session(workspace)
    _call(session, "view", {"file_path": f".git/{writer.file}"})
    response = _call(session, writer.name, writer.params(f".git/{writer.file}", False))
    assert _code(response) == "protected_path", response.content
    assert target.read_text() == writer.content


@pytest.mark.parametrize("writer", WRITERS, ids=IDS)
def test_a_fifo_is_refused_at_once(workspace: Path, writer: Writer) -> None:
    fifo = workspace / writer.file
    os.mkfifo(fifo)
    started = time.monotonic()
    response = _call(_session(workspace), writer.name, writer.params(writer.file, False))
    assert _code(response) == "not_regular_file", response.content
    assert time.monotonic() - started < PROMPT_S  # answered, not blocked on the FIFO's open or read
    assert fifo.is_fifo()


@pytest.mark.parametrize("writer", WRITERS, ids=IDS)
def test_a_hard_linked_file_is_replaced_and_the_other_name_keeps_its_content(
    workspace: Path, writer: Writer
) -> None:
    target = _placed(workspace, writer)
    other = workspace.parent / f"other-name-{writer.file}"
    os.link(target, other)
    session = _session(workspace)
    _call(session, "view", {"file_path": writer.file})
    response = _call(session, writer.name, writer.params(writer.file, False))
    assert not response.is_error, response.content
    assert "hard-link" in response.content and response.metadata["notes"]
    assert other.read_text() == writer.content and target.read_text() != writer.content
    assert os.stat(target).st_nlink == 1


@pytest.mark.parametrize("writer", [w for w in WRITERS if w.name != "notebook_edit"], ids=IDS[:-1])
def test_a_change_that_breaks_a_clean_file_is_refused_by_the_syntax_gate(workspace: Path, writer: Writer) -> None:
    target = _placed(workspace, writer)
    session = _session(workspace)
    _call(session, "view", {"file_path": writer.file})
    response = _call(session, writer.name, writer.params(writer.file, True))
    assert _code(response) == "syntax_error", response.content
    assert target.read_text() == writer.content


def test_the_matrix_names_every_writer_the_pipeline_serves() -> None:
    """A new writer joins the matrix (lsp rename runs it in tests/integration; rewind in
    tests/test_checkpoints.py)."""
    from agent_toolsmith.llm.tools.builtins import all_tools

    writers = {t.name for t in all_tools() if not t.info().read_only and t.name not in {"bash", "lsp"}}
    writers -= {"job_input", "job_kill"}  # they drive processes, not files
    assert writers == set(IDS)
