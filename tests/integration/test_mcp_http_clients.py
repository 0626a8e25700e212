"""MCP HTTP clients that behave as real ones do: a client that closes the stream of a running call
(no notifications/cancelled), one that times out, one that opens a session for every call.
Real server processes, real clients (httpx, the official SDK's)."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
import pytest
from mcp import Client

from tests.integration.test_mcp import WAIT_S, HttpServer, processes_with, run, text, until

#: The issue's bound: an aborted `sleep` call leaves no `sleep` this long after the abort.
GONE_WITHIN_S = 8.0
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
HELLO = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "abort", "version": "1"}}


async def _gone_within(token: str, seconds: float) -> float:
    """Seconds until no process carries ``token``; fails past ``seconds``."""
    started = time.monotonic()
    while processes_with(token):
        assert time.monotonic() - started < seconds, f"the command still runs {seconds:.0f} s after the abort"
        await asyncio.sleep(0.05)
    return time.monotonic() - started


async def _open_session(client: httpx.AsyncClient, url: str) -> dict[str, str]:
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": HELLO}
    opened = await client.post(url, headers=HEADERS, json=initialize)
    assert opened.status_code == 200, opened.text
    session = {**HEADERS, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
    done = await client.post(url, headers=session, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert done.status_code == 202
    return session


def test_a_client_that_closes_the_stream_stops_its_call(http_server: HttpServer) -> None:
    token = f"abort-{uuid.uuid4().hex}"

    async def main() -> tuple[float, str]:
        async with httpx.AsyncClient(timeout=WAIT_S) as client:
            session = await _open_session(client, http_server.url)
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "bash", "arguments": {"command": f"sleep 30; : {token}"}}}  # fmt: skip
            async with client.stream("POST", http_server.url, headers=session, json=call) as response:
                assert response.status_code == 200
                await until(lambda: bool(processes_with(token)), "the command runs")
            # The stream is closed, no notifications/cancelled was sent.
            took = await _gone_within(token, GONE_WITHIN_S)
            again = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                     "params": {"name": "bash", "arguments": {"command": "echo still serving"}}}  # fmt: skip
            served = await client.post(http_server.url, headers=session, json=again)
            return took, served.text

    took, served = run(main())
    assert "still serving" in served
    assert took < GONE_WITHIN_S


def test_a_client_that_times_out_stops_its_call(http_server: HttpServer) -> None:
    token = f"timeout-{uuid.uuid4().hex}"

    async def main() -> float:
        async with Client(http_server.url, read_timeout_seconds=1.0) as client:
            with pytest.raises(Exception):  # noqa: B017 - the client's own timeout error
                await client.call_tool("bash", {"command": f"sleep 30; : {token}"})
            return await _gone_within(token, GONE_WITHIN_S)

    assert run(main()) < GONE_WITHIN_S


def test_a_client_with_a_session_per_call_is_told_why_its_edit_is_refused(
    workspace: Path, tmp_path: Path
) -> None:
    """As langchain-mcp-adapters' default get_tools() does: every call in a session of its own."""
    (workspace / "a.py").write_text("x = 1\n")
    per_call = HttpServer(workspace, tmp_path)

    async def one_call(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        async with per_call.client() as client:
            return await client.call_tool(name, arguments)

    async def main() -> list[types.CallToolResult]:
        results = []
        for _ in range(2):
            results.append(await one_call("view", {"file_path": "a.py"}))
            results.append(await one_call("edit", {"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}))
        return results

    try:
        results = run(main())
    finally:
        per_call.stop()
    viewed, edited = results[0], results[-1]
    assert not viewed.is_error
    assert edited.is_error and "You must read the file" in text(edited)
    assert "this MCP client opens a new session for every call" in text(edited)
    assert "client.session(name)" in text(edited)
    assert (edited.meta or {})["toolsmith/metadata"]["error"] == "not_read"
    assert (workspace / "a.py").read_text() == "x = 1\n"  # the read check holds across sessions


def test_a_client_with_one_session_gets_no_such_note(workspace: Path, http_server: HttpServer) -> None:
    (workspace / "a.py").write_text("x = 1\n")

    async def main() -> types.CallToolResult:
        async with http_server.client() as client:
            return await client.call_tool("edit", {"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"})

    edited = run(main())
    assert edited.is_error and "You must read the file" in text(edited)
    assert "new session for every call" not in text(edited)


def test_sessions_are_spread_over_the_workers_and_each_keeps_its_state(workspace: Path, tmp_path: Path) -> None:
    server = HttpServer(workspace, tmp_path, "--workers", "2")
    (workspace / "one").mkdir()

    async def call(client: httpx.AsyncClient, session: dict[str, str], command: str) -> str:
        request = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "bash", "arguments": {"command": command}}}  # fmt: skip
        answer = await client.post(server.url, headers=session, json=request)
        data = next(line[6:] for line in answer.text.splitlines() if line.startswith("data: ") and len(line) > 6)
        return str(json.loads(data)["result"]["content"][0]["text"])

    async def main() -> tuple[list[str], list[str]]:
        # One connection for both sessions: the worker that gets a request for the other's session
        # (or a second initialize) hands it back to the front.
        async with httpx.AsyncClient(timeout=WAIT_S, limits=httpx.Limits(max_connections=1)) as client:
            a, b = [await _open_session(client, server.url) for _ in range(2)]
            await call(client, a, "cd one")
            where = [await call(client, a, "pwd"), await call(client, b, "pwd")]
            where += [await call(client, a, "pwd"), await call(client, b, "pwd")]
            nobody = {**a, "mcp-session-id": "9-no-such-worker"}  # no worker 9: answered, not passed around
            ping = {"jsonrpc": "2.0", "id": 9, "method": "ping"}
            assert (await client.post(server.url, headers=nobody, json=ping)).status_code == 404
            return [s["mcp-session-id"].split("-")[0] for s in (a, b)], where

    try:
        workers, where = run(main())
    finally:
        server.stop()
    assert sorted(workers) == ["0", "1"]  # one session on each worker
    assert where == [str(workspace / "one"), str(workspace)] * 2
