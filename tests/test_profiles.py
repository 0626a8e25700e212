"""Profiles: the claude, codex and gemini tool shapes over the same engine."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.diff.patch import parse_patch
from agent_toolsmith.llm.profiles import PROFILES, profile_tools
from agent_toolsmith.llm.profiles.base import ProfileTool
from agent_toolsmith.llm.profiles.codex import PATCH_GRAMMAR
from agent_toolsmith.llm.providers import (
    PROVIDERS,
    DeclarationError,
    check_declaration,
    declarations,
    parse_tool_call,
    tool_result_for,
)  # fmt: skip
from agent_toolsmith.llm.tools.builtins import get_tool
from agent_toolsmith.llm.tools.params import parse_params
from agent_toolsmith.session import Session
from hypothesis import given
from hypothesis import strategies as st

from tests.property.test_providers import _as_strict_mode_sends, _values
from tests.tools.test_patch import make_patch, texts

ROOT = Path(__file__).resolve().parents[1]
CLAUDE = ["Read", "Write", "Edit", "Glob", "Grep", "NotebookEdit", "Bash", "TaskStop", "WebFetch", "TodoWrite",
          "AskUserQuestion"]  # fmt: skip
CODEX = ["apply_patch", "exec_command", "write_stdin", "shell", "shell_command", "read_file", "list_dir", "grep_files",
         "update_plan", "request_user_input"]  # fmt: skip
GEMINI = ["read_file", "write_file", "replace", "glob", "grep_search", "list_directory", "read_many_files",
          "run_shell_command", "web_fetch", "write_todos", "ask_user"]  # fmt: skip
ADAPTERS = [tool for name in ("claude", "codex", "gemini") for tool in profile_tools(name).values()]


def session(workspace: Path, profile: str) -> Session:
    return Session(workspace, config=Config(lsp_enabled=False), profile=profile)


def cli(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "cmd.tools", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_claude_profile_exports_its_tools_with_their_parameter_names() -> None:
    exported = json.loads(cli("--profile", "claude", "--schema", "--format", "anthropic"))
    by_name = {tool["name"]: tool for tool in exported}
    assert list(by_name) == CLAUDE
    grep = by_name["Grep"]["input_schema"]["properties"]
    wanted = {"output_mode", "-i", "-n", "-o", "-A", "-B", "-C", "context", "glob", "type", "multiline", "head_limit",
              "offset"}  # fmt: skip
    assert wanted <= set(grep)
    assert grep["output_mode"]["enum"] == ["content", "files_with_matches", "count"]
    assert "run_in_background" in by_name["Bash"]["input_schema"]["properties"]
    assert by_name["Read"]["input_schema"]["properties"]["offset"]["minimum"] == 1
    assert by_name["Grep"]["input_schema"]["properties"]["head_limit"]["minimum"] == 0  # 0: unlimited


def test_the_codex_profile_exports_apply_patch_as_a_grammar_tool_for_openai() -> None:
    exported = json.loads(cli("--profile", "codex", "--schema", "--format", "openai"))
    assert [tool["name"] for tool in exported] == CODEX
    patch = exported[0]
    assert patch["type"] == "custom" and patch["format"]["syntax"] == "lark"
    assert patch["format"]["definition"] == PATCH_GRAMMAR
    for provider in ("anthropic", "openai-chat", "gemini"):  # elsewhere: a function with one string
        (declared,) = [d for d in declarations(provider, [ADAPTERS[CLAUDE.__len__()].info()])]
        assert "input" in json.dumps(declared)


@pytest.mark.parametrize("profile", PROFILES)
def test_every_profile_exports_valid_declarations_for_every_provider(tmp_path: Path, profile: str) -> None:
    infos = session(tmp_path, profile).tools()
    for provider in PROVIDERS:
        if (profile, provider) == ("claude", "gemini"):
            # Gemini's parameter names must be identifiers (Grep's -i, -A, ...) and its objects
            # need properties (AskUserQuestion's answers map): no declaration is printed, the
            # export says why (test_an_export_its_own_check_rejects_is_an_error).
            with pytest.raises(DeclarationError, match="property name '-i'"):
                declarations(provider, infos)
            continue
        for declared in declarations(provider, infos):
            assert check_declaration(provider, declared) == [], (profile, provider, declared)
    strict = declarations("anthropic", infos, strict=True)
    assert all(check_declaration("anthropic", declared) == [] for declared in strict)
    assert any(declared.get("strict") for declared in strict)


def test_an_export_its_own_check_rejects_is_an_error() -> None:
    done = subprocess.run([sys.executable, "-m", "cmd.tools", "--profile", "claude", "--schema", "--format", "gemini"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode != 0 and done.stdout == ""
    assert "Grep" in done.stderr and "'-i'" in done.stderr and "gemini" in done.stderr


def test_claude_read_offsets_are_one_based(workspace: Path) -> None:
    (workspace / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    s = session(workspace, "claude")
    r = asyncio.run(s.run("Read", {"file_path": str(workspace / "f.txt"), "offset": 3, "limit": 2}))
    assert not r.is_error, r.content
    assert "     3|line 3\n     4|line 4" in r.content and "line 2" not in r.content
    assert "Use offset=5 to continue reading" in r.content  # the next line to read, 1-based
    assert asyncio.run(s.run("Read", {"file_path": "f.txt", "offset": 0})).is_error


def test_a_profile_offers_only_its_own_tools(workspace: Path) -> None:
    r = asyncio.run(session(workspace, "claude").run("view", {"file_path": "x"}))
    assert r.is_error and r.metadata["error"] == "unknown_tool" and "Read" in r.content
    with pytest.raises(ValueError, match="unknown profile 'gpt'"):
        Session(workspace, profile="gpt")


def test_a_custom_tool_call_parses_runs_and_answers_in_kind(workspace: Path) -> None:
    (workspace / "app.py").write_text("def main():\n    print('hi')\n")
    s = session(workspace, "codex")
    assert not asyncio.run(s.run("read_file", {"file_path": "app.py"})).is_error
    patch = make_patch("def main():\n    print('hi')\n", "def main():\n    print('hello')\n", "app.py")
    item = {"type": "custom_tool_call", "call_id": "call_1", "name": "apply_patch", "input": patch}
    call = parse_tool_call("openai", item)
    assert call.freeform and call.arguments == {"input": patch}
    response = asyncio.run(s.run(call.name, call.arguments))
    assert not response.is_error, response.content
    assert (workspace / "app.py").read_text() == "def main():\n    print('hello')\n"
    answer = tool_result_for("openai", response, call)
    assert answer["type"] == "custom_tool_call_output" and answer["call_id"] == "call_1"
    assert "Patch applied" in answer["output"]


def _lark() -> Any:
    from lark import Lark

    return Lark(PATCH_GRAMMAR, start="start")


PATHS = st.text("abcdefghij/._-", min_size=1, max_size=12).filter(lambda p: p.strip() == p and p.strip("/"))


@given(texts, texts, PATHS, st.sampled_from(["", "\n"]))
def test_the_patch_grammar_accepts_what_the_parser_reads(a: str, b: str, path: str, end: str) -> None:
    grammar = _lark()
    if a != b:
        patch = make_patch(a, b, path) + end
        parse_patch(patch)
        grammar.parse(patch + ("" if patch.endswith("\n") else "\n"))
    lines = "".join("+" + line + "\n" for line in b.splitlines())
    for patch in (
        f"*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch\n",
        f"*** Begin Patch\n*** Delete File: {path}\n*** End Patch\n",
        f"*** Begin Patch\n*** Update File: {path}\n*** Move to: moved/{path}\n*** End Patch\n",
    ):
        assert parse_patch(patch)
        grammar.parse(patch)


def test_the_patch_grammar_refuses_what_is_not_a_patch() -> None:
    from lark.exceptions import LarkError

    grammar = _lark()
    bad_line = "*** Begin Patch\n*** Update File: a\n?x\n*** End Patch\n"
    for text in ("*** Begin Patch\n*** End Patch\n", "hello\n", bad_line):
        with pytest.raises(LarkError):
            grammar.parse(text)


@given(st.data())
def test_profile_parameters_map_onto_valid_engine_parameters(data: st.DataObject) -> None:
    """Whatever valid arguments a model sends a profile tool (strict-mode nulls included), the
    engine tool accepts what the adapter makes of them."""
    tool = data.draw(st.sampled_from([t for t in ADAPTERS if type(t).to_engine is not ProfileTool.to_engine]))
    schema = tool.info().parameters
    arguments = data.draw(_values(schema))
    for sent in (arguments, _as_strict_mode_sends(arguments, schema)):
        params = parse_params(tool.Params, sent)
        engine = get_tool(tool.engine)  # type: ignore[attr-defined]
        parse_params(engine.Params, tool.to_engine(params))  # type: ignore[attr-defined]


def test_adapters_declare_what_their_engine_tools_do() -> None:
    for tool in ADAPTERS:
        engine = get_tool(tool.engine)  # type: ignore[attr-defined]
        assert (tool.read_only, tool.open_world) == (engine.read_only, engine.open_world), tool.name
        assert dataclasses.is_dataclass(tool.Params)


EDIT_CASES = st.tuples(
    st.lists(st.sampled_from(["a = 1", "  b = 2", "c", "", "\td"]), min_size=1, max_size=8),
    st.sampled_from(["a = 1", "b = 2", "c", "x", "  b = 2\nc"]),
    st.sampled_from(["z", "", "a = 1", "q\nr"]),
    st.booleans(),
)


@given(EDIT_CASES)
def test_a_profile_edit_leaves_the_file_the_engine_edit_leaves(case: tuple[list[str], str, str, bool]) -> None:
    import tempfile

    lines, old, new, replace_all = case
    content = "\n".join(lines) + "\n"
    results = []
    for profile, tool in (("default", "edit"), ("claude", "Edit")):
        with tempfile.TemporaryDirectory() as tmp:
            ws = Path(tmp)
            (ws / "f.txt").write_text(content)
            s = session(ws, profile)
            asyncio.run(s.run("view" if profile == "default" else "Read", {"file_path": str(ws / "f.txt")}))
            params = {"file_path": str(ws / "f.txt"), "old_string": old, "new_string": new, "replace_all": replace_all}
            r = asyncio.run(s.run(tool, params))
            results.append((r.is_error, r.metadata.get("error"), (ws / "f.txt").read_bytes()))
    assert results[0] == results[1]


def test_the_mcp_server_offers_every_profile_and_speaks_it(tmp_path: Path) -> None:
    from agent_toolsmith.mcp_server import ToolsmithServer
    from agent_toolsmith.mcp_server.cli import MCP_PROFILES

    assert MCP_PROFILES == PROFILES
    server = ToolsmithServer(tmp_path, Config(lsp_enabled=False), profile="codex")
    assert [info.name for info in server.tool_infos()] == CODEX


def test_exec_command_keeps_a_tty_session_that_write_stdin_talks_to(workspace: Path) -> None:
    async def main() -> tuple[Any, Any, Any]:
        async with session(workspace, "codex") as s:
            done = await s.run("exec_command", {"cmd": "echo ready; exit 3", "yield_time_ms": 10_000})
            started = await s.run("exec_command", {"cmd": "python3 -q -i", "tty": True, "yield_time_ms": 500})
            session_id = started.metadata.get("session_id")
            answer = await s.run("write_stdin", {"session_id": session_id, "chars": "6*7\n", "yield_time_ms": 5000})
            return done, started, answer

    done, started, answer = asyncio.run(main())
    assert not done.is_error and done.content.startswith("Process exited with code 3") and "ready" in done.content
    assert not started.is_error and "Process running with session ID" in started.content, started.content
    assert not answer.is_error and "42" in answer.content, answer.content


def test_max_output_tokens_keeps_head_and_tail_and_reports_the_original(workspace: Path) -> None:
    async def main() -> Any:
        async with session(workspace, "codex") as s:
            command = "for i in $(seq 1 5000); do echo line $i; done"
            return await s.run("exec_command", {"cmd": command, "max_output_tokens": 100})

    r = asyncio.run(main())
    assert "line 1\n" in r.content and "line 5000" in r.content and "line 2500\n" not in r.content
    assert "Original token count: " in r.content and r.metadata["truncated"] is True
