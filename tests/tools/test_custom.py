"""Custom tools: discovery, descriptions, running through the bash machinery, name clashes."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.permission import Decision, PermissionRequest
from agent_toolsmith.session import Session

from tests.conftest import make_session
from tests.tools.test_bash import pid_alive

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "testdata" / "custom_tools"


def add_tool(directory: Path, name: str, script: str, doc: str | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    program = directory / name
    program.write_text("#!/bin/sh\n" + script)
    program.chmod(0o755)
    if doc is not None:
        (directory / f"{program.stem}.md").write_text(doc)
    return program


def tools_dir(workspace: Path) -> Path:
    return workspace / ".toolsmith" / "tools"


def run(session: Session, tool: str, params: object):  # type: ignore[no-untyped-def]
    return asyncio.run(session.run(tool, params))


def test_the_example_is_listed_described_and_runs() -> None:
    listed = subprocess.run(
        [sys.executable, "-m", "cmd.tools", "--cwd", str(EXAMPLE), "--list"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    (greet,) = [line for line in listed.stdout.splitlines() if line.split()[0] == "greet"]
    assert greet.split(None, 1)[1] == "Greets the people named in args."
    schema = subprocess.run(
        [sys.executable, "-m", "cmd.tools", "--cwd", str(EXAMPLE), "--schema"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    (greet,) = [t for t in json.loads(schema.stdout) if t["name"] == "greet"]
    assert "Exits with code 2 when no name is given." in greet["description"]  # the .md body: guidance
    assert greet["parameters"]["properties"]["args"]["type"] == "string"
    ran = subprocess.run(
        [sys.executable, "-m", "cmd.tools", "--cwd", str(EXAMPLE), "greet", '{"args": "Ada \\"the first\\""}'],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert ran.stdout == "Hello, Ada the first!\n"


def test_runs_from_the_workspace_root_with_the_session_environment(workspace: Path) -> None:
    add_tool(tools_dir(workspace), "where.sh", 'echo "$PWD $GREETING $#"\ncd /\n')
    session = make_session(workspace)
    (workspace / "sub").mkdir()
    assert not run(session, "bash", {"command": "cd sub && export GREETING=hi"}).is_error
    response = run(session, "where", {"args": "one 'two three'"})
    assert response.content == f"{workspace} hi 2"
    assert response.metadata["exit_code"] == 0
    # The tool's own cd stays its own: the session's shell is still in sub/.
    assert run(session, "bash", {"command": "pwd"}).content == str(workspace / "sub")


def test_always_asks_permission_naming_the_tool_and_command(workspace: Path) -> None:
    program = add_tool(tools_dir(workspace), "deploy", "echo deploying\n")
    asked: list[PermissionRequest] = []

    async def deny(request: PermissionRequest) -> Decision:
        asked.append(request)
        return Decision.DENY

    session = make_session(workspace, asker=deny)
    response = run(session, "deploy", {"args": "--prod"})
    assert response.is_error and "Permission denied" in response.content
    assert [(r.tool, r.action, r.target) for r in asked] == [("deploy", "execute", f"{program} --prod")]


def test_the_bash_refusals_apply_to_args(workspace: Path) -> None:
    add_tool(tools_dir(workspace), "show", "cat \"$@\"\n")
    response = run(make_session(workspace), "show", {"args": "x; curl http://127.0.0.1/"})
    assert response.is_error and "Command refused" in response.content


def test_timeout_from_the_doc_stops_the_whole_group(workspace: Path) -> None:
    doc = "---\ndescription: Slow.\ntimeout_ms: 300\n---\n"
    add_tool(tools_dir(workspace), "slow", "sleep 30 &\necho $! > pid\nwait\n", doc)
    response = run(make_session(workspace), "slow", {})
    assert response.is_error and "timed out after 300 ms" in response.content
    assert not pid_alive(int((workspace / "pid").read_text()))


def test_a_clash_with_a_built_in_is_refused_unless_configured(
    workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    add_tool(tools_dir(workspace), "grep", "echo custom grep\n")
    (workspace / "a.txt").write_text("needle\n")
    with caplog.at_level(logging.WARNING, logger="toolsmith"):
        refused = make_session(workspace)
    assert "grep" in [t.name for t in refused.tools()]
    assert "Found 1 match" in run(refused, "grep", {"pattern": "needle"}).content  # still the built-in
    assert any("'grep' is a built-in tool" in p for p in refused.ctx.tools.problems)
    assert "[tools] override" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="toolsmith"):
        allowed = make_session(workspace, config=Config(lsp_enabled=False, tools_override=["grep"]))
    assert run(allowed, "grep", {"args": ""}).content == "custom grep"
    assert "replaces the built-in grep tool" in caplog.text


def test_the_project_replaces_a_user_tool_and_bad_names_are_reported(workspace: Path) -> None:
    user = Path(os.environ["XDG_CONFIG_HOME"]) / "toolsmith" / "tools"
    add_tool(user, "hello", "echo from the user\n")
    add_tool(user, "mine", "echo only the user has this\n")
    add_tool(tools_dir(workspace), "hello.py", "echo from the project\n")
    add_tool(tools_dir(workspace), "bad name", "echo\n")
    (tools_dir(workspace) / "notes.txt").write_text("not executable\n")
    session = make_session(workspace)
    names = [t.name for t in session.tools()]
    assert names[-2:] == ["hello", "mine"] and "notes" not in names
    assert run(session, "hello", {}).content == "from the project"
    assert run(session, "mine", {}).content == "only the user has this"
    assert any("'bad name' must be 1-64 characters" in p for p in session.ctx.tools.problems)


def test_custom_tools_can_be_turned_off(workspace: Path) -> None:
    add_tool(tools_dir(workspace), "deploy", "echo\n")
    session = make_session(workspace, config=Config(lsp_enabled=False, custom_tools=False))
    assert "deploy" not in [t.name for t in session.tools()]
    assert run(session, "deploy", {}).metadata["error"] == "unknown_tool"
