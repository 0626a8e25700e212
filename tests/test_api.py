"""The README's embedding example, run for real."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import agent_toolsmith
from agent_toolsmith import CancelToken, Config, Decision, PermissionRequest, Session


def test_public_surface_exports() -> None:
    for name in agent_toolsmith.__all__:
        assert getattr(agent_toolsmith, name) is not None


def test_readme_example_flow(workspace: Path) -> None:
    (workspace / "README.md").write_text("hello\n")
    asked: list[PermissionRequest] = []
    chunks: list[str] = []

    async def ask(request: PermissionRequest) -> Decision:
        asked.append(request)
        return Decision.ALLOW_ONCE

    async def main() -> tuple[Any, Any]:
        async with Session(workspace, asker=ask, config=Config(lsp_enabled=False)) as session:
            viewed = await session.run("view", {"file_path": "README.md"})
            ran = await session.run(
                "bash",
                {"command": "echo built > out.txt && cat out.txt"},
                cancel=CancelToken(),
                progress=lambda message, data: chunks.append(data.get("text", "")),
            )
            return viewed, ran

    viewed, ran = asyncio.run(main())
    assert not viewed.is_error and "     1|hello" in viewed.content
    assert ran.metadata["exit_code"] == 0 and ran.content == "built"
    assert [r.tool for r in asked] == ["bash"]  # view is read-only; the bash line writes a file
    assert "".join(chunks).strip() == "built"


def test_all_matches_the_lazy_exports() -> None:
    assert sorted(agent_toolsmith.__all__) == sorted(agent_toolsmith._EXPORTS)


def test_a_tool_policy_offers_a_subset_and_refuses_the_rest(workspace: Path) -> None:
    from agent_toolsmith import ToolPolicy

    (workspace / "a.txt").write_text("x\n")
    everything = Session(workspace, config=Config(lsp_enabled=False))
    assert [t.name for t in everything.tools(ToolPolicy(read_only=True))] == [
        "job_output", "view", "read_many", "attach", "glob", "grep", "ls", "lsp", "fetch", "skill", "outline",
        "plan", "question",
    ]  # fmt: skip
    policy = ToolPolicy(allow=["view", "edit", "bash"], deny=["bash"])
    assert [t.name for t in everything.tools(policy)] == ["view", "edit"]  # deny wins over allow

    session = Session(workspace, config=Config(lsp_enabled=False), tool_policy=ToolPolicy(read_only=True))
    assert "write" not in [t.name for t in session.tools()]
    refused = asyncio.run(session.run("write", {"file_path": "a.txt", "content": "y\n"}))
    assert refused.is_error and refused.metadata["error"] == "tool_not_offered"
    assert refused.content.startswith(
        "The write tool is not available: this session is read-only. Available tools: job_output, view,"
    )
    assert (workspace / "a.txt").read_text() == "x\n"
    assert not asyncio.run(session.run("view", {"file_path": "a.txt"})).is_error


def test_a_missing_or_non_directory_workspace_is_refused_naming_it(tmp_path: Path) -> None:
    import pytest as _pytest

    missing = tmp_path / "nonexistent"
    with _pytest.raises(ValueError, match=rf"'{missing}' does not exist"):
        Session(missing)
    (tmp_path / "file").write_text("x")
    with _pytest.raises(ValueError, match="is not a directory"):
        Session(tmp_path / "file")
