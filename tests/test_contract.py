"""The tool contract: schemas, validation, permission service, file tracker."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from agent_toolsmith.errors import ToolError
from agent_toolsmith.file_tracker import FileTracker
from agent_toolsmith.llm.tools.builtins import all_tools
from agent_toolsmith.llm.tools.runner import run_tool
from agent_toolsmith.permission import Decision, PermissionRequest, PermissionService
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import make_session

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=10,
)


def test_every_schema_is_a_strict_object() -> None:
    tools = all_tools()
    assert tools
    for tool in tools:
        schema = tool.info().parameters
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert all(name == name.lower() for name in schema["properties"])
        assert tool.description.strip()


ALL_FIELDS = sorted({name for tool in all_tools() for name in tool.info().parameters["properties"]} | {"x"})
FIELD_NAMES = st.sampled_from(ALL_FIELDS)
EDIT_ITEMS = st.lists(st.dictionaries(st.sampled_from(["old_string", "new_string", "replace_all", "y"]), json_values))


@given(
    st.sampled_from([t.name for t in all_tools()]),
    json_values | st.dictionaries(FIELD_NAMES, json_values | EDIT_ITEMS),
)
def test_arbitrary_json_to_every_tool_never_raises(tool: str, params: Any) -> None:
    """Any JSON to any tool gives a response, never an exception or a traceback.

    The read-only policy keeps the fuzz from running or writing anything it generates.
    """
    import tempfile

    from agent_toolsmith.permission import read_only_policy

    ws = Path(tempfile.mkdtemp())
    session = make_session(ws, asker=read_only_policy)
    response = asyncio.run(asyncio.wait_for(session.run(tool, params), 60))
    assert isinstance(response.content, str) and response.content
    assert "Traceback" not in response.content
    assert not response.content.startswith("Internal error"), response.content
    json.dumps(response.to_json())


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({}, "'file_path' is required (a string)"),
        ({"file_path": 1}, "'file_path' must be a string, got the number 1"),
        ({"file_path": "x", "offset": "2"}, "'offset' must be an integer, got a string"),
        ({"file_path": "x", "offset": -1}, "'offset' must be at least 0"),
        ({"file_path": "x", "bogus": 1}, "unknown field 'bogus'"),
        ([], "must be a JSON object, got an array"),
        ("{not json", "not valid JSON"),
    ],
)
def test_validation_messages_name_the_field(workspace: Path, params: Any, expected: str) -> None:
    r = asyncio.run(make_session(workspace).run("view", params))
    assert r.is_error and expected in r.content and r.metadata["error"] == "invalid_params"


def test_unknown_tool(workspace: Path) -> None:
    r = asyncio.run(make_session(workspace).run("nope", {}))
    assert r.is_error and "Unknown tool 'nope'" in r.content


def test_unexpected_exception_becomes_short_error(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_toolsmith.llm.tools import view

    async def boom(params: Any, ctx: Any) -> Any:
        raise RuntimeError("kaboom")

    monkeypatch.setattr(view.TOOL, "run", boom)
    r = asyncio.run(run_tool("view", {"file_path": "x"}, make_session(workspace).ctx))
    assert r.is_error and r.content == "Internal error in view: RuntimeError: kaboom"


def test_permission_session_grant_is_remembered() -> None:
    asked: list[PermissionRequest] = []

    async def asker(request: PermissionRequest) -> Decision:
        asked.append(request)
        return Decision.ALLOW_SESSION

    service = PermissionService(asker)
    req = PermissionRequest("bash", "execute", "make")
    assert asyncio.run(service.ask(req)) is Decision.ALLOW_SESSION
    assert asyncio.run(service.ask(req)) is Decision.ALLOW_SESSION
    assert len(asked) == 1
    asyncio.run(service.ask(PermissionRequest("bash", "execute", "other")))
    assert len(asked) == 2


def test_tracker_sees_same_second_changes(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_text("a")
    tracker = FileTracker()
    tracker.record_read(f)
    tracker.check_unchanged(f)
    st_ = f.stat()
    os.utime(f, ns=(st_.st_atime_ns, st_.st_mtime_ns + 1))  # one nanosecond later
    with pytest.raises(ToolError, match="modified since it was last read"):
        tracker.check_unchanged(f)
    restored = FileTracker.from_json(json.loads(json.dumps(tracker.to_json())))
    with pytest.raises(ToolError, match="modified since"):
        restored.check_unchanged(f)


def test_descriptions_point_to_the_right_tool_and_word_parameters_alike() -> None:
    described = {tool.name: tool.info() for tool in all_tools()}
    guidance = {
        "view": ["edit, multiedit, write or patch", "with notebook_edit", "`pages`"],
        "notebook_edit": ["Read the notebook with view first", "instead of edit, multiedit, write or patch"],
        "bash": ["with view (not cat", "with glob (not find", "search with grep", "edit with edit"],
        "edit": ["prefer multiedit", "prefer patch", "Read the file with view first", "use notebook_edit"],
        "multiedit": ["prefer patch", "read the file with view first"],
        "write": ["prefer editing existing files (edit, multiedit)"],
        "glob": ["Use grep to search file contents"],
        "grep": ["Use glob to find files by name", "use output_mode `count` (not `rg -c` through bash)", "read_many"],
        "read_many": ["edit, multiedit, write or patch may follow directly", "use view for one file"],
        "ls": ["prefer the glob and grep tools"],
        "patch": ["changes that span several files", "read it with view first"],
    }
    for name, phrases in guidance.items():
        for phrase in phrases:
            assert phrase in described[name].description, (name, phrase)
    for info in described.values():
        file_path = info.parameters["properties"].get("file_path")
        if file_path is not None:
            assert "(absolute or relative to the workspace root)" in file_path["description"], info.name
        path = info.parameters["properties"].get("path")
        if path is not None:
            assert path["description"].endswith("(default: the workspace root)"), info.name


def test_tracker_decides_by_content_after_dropping_a_kept_snapshot(tmp_path: Path) -> None:
    # Files read whole are compared by their kept bytes; once more files push a snapshot out of the
    # byte budget (or the records are saved), the digest of those bytes decides instead.
    from agent_toolsmith.file_tracker import ReadState

    tracker = FileTracker(snapshot_budget=16)
    first = tmp_path / "first"
    first.write_bytes(b"as read")
    st_ = first.stat()
    tracker.record_read(first, b"as read", st_)
    saved = json.loads(json.dumps(tracker.to_json()))
    assert all(record["digest"] for record in saved.values())
    for i in range(16):
        other = tmp_path / f"other{i}"
        other.write_bytes(b"x")
        tracker.record_read(other, b"x", other.stat())
    assert tracker.snapshot_bytes == 16
    assert tracker.read_state(first, b"as read", st_).kind == "unchanged"
    # Same size and stat, only the content differs; the bytes as read were dropped: no base.
    assert tracker.read_state(first, b"as REad", st_) == ReadState("changed", None)
    restored = FileTracker.from_json(saved)
    assert restored.read_state(first, b"as read", st_).kind == "unchanged"
    assert restored.read_state(first, b"as REad", st_) == ReadState("changed", None)


def test_permission_known_without_asking_only_for_allow_all_or_a_session_grant() -> None:
    async def grant(request: PermissionRequest) -> Decision:
        return Decision.ALLOW_SESSION

    request = PermissionRequest("edit", "write", "/w/f")
    assert PermissionService().allows_without_asking(request)  # allow_all: nobody to ask
    service = PermissionService(grant)
    assert not service.allows_without_asking(request)
    asyncio.run(service.require(request))
    assert service.allows_without_asking(request)
    assert not service.allows_without_asking(PermissionRequest("edit", "write", "/w/g"))
    assert not service.allows_without_asking(PermissionRequest("write", "write", "/w/f"))
