"""The README's examples, run: the agent loop, and the provider export it shows."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from toolsmith.config import Config
from toolsmith.llm.providers import declarations
from toolsmith.llm.tools.tools import ToolRegistry

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def code_after(marker: str, language: str) -> str:
    start = README.index(marker)
    found = re.compile(rf"```{language}\n(.*?)```", re.S).search(README, start)
    assert found is not None, marker
    return found.group(1)


def test_the_agent_loop_runs_every_scripted_call(workspace: Path) -> None:
    namespace: dict[str, Any] = {"__name__": "readme_example"}
    exec(compile(code_after("<!-- agent-loop -->", "python"), "README.md", "exec"), namespace)
    answer, messages = asyncio.run(namespace["agent"](str(workspace), "Write hello.sh and run it."))
    assert answer == "hello.sh is written and prints its greeting."
    assert (workspace / "hello.sh").read_text() == "echo hello from the agent\n"
    turns = [m["content"] for m in messages if m["role"] == "user" and isinstance(m["content"], list)]
    results = [block for turn in turns for block in turn]
    assert [r["tool_use_id"] for r in results] == ["toolu_1", "toolu_2"]
    assert not any(r.get("is_error") for r in results)
    assert results[1]["content"][0]["text"] == "hello from the agent"


def test_the_openai_declaration_shown_is_what_the_export_gives(tmp_path: Path) -> None:
    shown = json.loads(code_after("The `grep` tool as `--format openai` declares it", "json"))
    (grep,) = [t.info() for t in ToolRegistry.for_workspace(tmp_path, Config()).tools() if t.name == "grep"]
    (exported,) = declarations("openai", [grep])
    assert exported["description"].startswith(shown["description"].removesuffix(" …"))
    assert {**exported, "description": shown["description"]} == shown


def test_the_mcp_client_snippet_is_valid_json() -> None:
    snippet = json.loads(code_after("Add it to an MCP client's configuration", "json"))
    assert snippet["mcpServers"]["toolsmith"]["command"] == "toolsmith-mcp"
