"""The plan and question tools over MCP, with the official SDK's real client: a question is an
``elicitation/create`` request when the client declares elicitation (and a clear error at once
when it does not), and the plan is a resource of the calling session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.client.context import ClientRequestContext

from tests.integration.test_mcp import HttpServer, run, stdio_client

QUESTIONS = {"questions": [
    {"question": "Which database should the service use?", "header": "Database",
     "options": [{"label": "PostgreSQL", "description": "a server"}, {"label": "SQLite", "description": "a file"}]},
    {"question": "Which checks should run?", "options": [{"label": "lint"}, {"label": "tests"}], "multi_select": True},
    {"question": "Anything else?"},
]}  # fmt: skip


def _text(result: types.CallToolResult) -> str:
    return "".join(part.text for part in result.content if isinstance(part, types.TextContent))


@pytest.mark.parametrize("kind", ["stdio", "stdio-handshake", "http"])
def test_a_question_is_an_elicitation_and_the_answers_come_back(kind: str, workspace: Path, tmp_path: Path) -> None:
    """2026-07-28 (stdio, http): the call answers with the elicitation embedded and the client calls
    again with the answer; a handshake-era session ("legacy"): an elicitation/create request."""
    asked: list[types.ElicitRequestFormParams] = []

    async def answer(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        asked.append(params)
        content = {"q1": "SQLite", "q1_other": "", "q2": ["lint", "tests"], "q3": "keep it small"}
        return types.ElicitResult(action="accept", content=content)  # type: ignore[arg-type]

    async def main(client_of: Any) -> types.CallToolResult:
        async with client_of(elicitation_callback=answer) as client:
            result: types.CallToolResult = await client.call_tool("question", QUESTIONS)
            return result

    if kind.startswith("stdio"):
        mode = {"mode": "legacy"} if kind == "stdio-handshake" else {}
        result = run(main(lambda **kw: stdio_client(workspace, tmp_path, **mode, **kw)))
    else:
        server = HttpServer(workspace, tmp_path)
        try:
            result = run(main(server.client))
        finally:
            server.stop()
    assert not result.is_error, _text(result)
    assert _text(result) == (
        "The user answered:\n1. Which database should the service use?\n   → SQLite\n"
        "2. Which checks should run?\n   → lint, tests\n3. Anything else?\n   → keep it small"
    )
    (params,) = asked
    schema = params.requested_schema
    assert schema["properties"]["q1"]["enum"] == ["PostgreSQL", "SQLite"]  # type: ignore[index]
    assert schema["properties"]["q2"]["items"]["enum"] == ["lint", "tests"]  # type: ignore[index]
    assert schema["properties"]["q3"]["type"] == "string" and "q3_other" not in schema["properties"]  # type: ignore[index,operator]
    assert "1. Which database should the service use?" in params.message


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_a_declined_elicitation_is_a_declined_answer(mode: str, workspace: Path, tmp_path: Path) -> None:
    async def decline(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    async def main() -> types.CallToolResult:
        async with stdio_client(workspace, tmp_path, mode=mode, elicitation_callback=decline) as client:
            result: types.CallToolResult = await client.call_tool("question", {"questions": [{"question": "Go on?"}]})
            return result

    result = run(main())
    assert not result.is_error and "declined to answer" in _text(result)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_a_client_without_elicitation_gets_a_clear_error_at_once(mode: str, workspace: Path, tmp_path: Path) -> None:
    async def main() -> types.CallToolResult:
        async with stdio_client(workspace, tmp_path, mode=mode) as client:
            result: types.CallToolResult = await client.call_tool("question", {"questions": [{"question": "Go on?"}]})
            return result

    result = run(main())
    assert result.is_error and result.meta is not None
    assert result.meta["toolsmith/metadata"]["error"] == "cannot_ask"
    assert "did not declare the elicitation capability" in _text(result)


def test_the_plan_is_a_resource_and_a_progress_message(workspace: Path, tmp_path: Path) -> None:
    messages: list[str | None] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        messages.append(message)

    async def main() -> tuple[list[types.Resource], str, str]:
        async with stdio_client(workspace, tmp_path) as client:
            before = await client.read_resource("toolsmith://plan")
            todos = [{"content": "Write the test", "status": "in_progress"}, {"content": "Make it pass"}]
            await client.call_tool("plan", {"todos": todos}, progress_callback=on_progress)
            listed = (await client.list_resources()).resources
            after = await client.read_resource("toolsmith://plan")
            first = before.contents[0]
            last = after.contents[0]
            assert isinstance(first, types.TextResourceContents) and isinstance(last, types.TextResourceContents)
            return listed, first.text, last.text

    listed, before, after = run(main())
    assert [str(r.uri) for r in listed] == ["toolsmith://plan"]
    assert json.loads(before) == {"items": []}
    assert json.loads(after)["items"] == [
        {"content": "Write the test", "status": "in_progress"}, {"content": "Make it pass", "status": "pending"},
    ]
    assert any(m and m.startswith("Plan updated: 2 item(s)") for m in messages)
