"""A tool call through the MCP server vs the same call through Session.run, interleaved.

What an MCP host waits for: the whole `tools/call` round trip through the official SDK client,
over stdio (the server as a subprocess) and over streamable HTTP on 127.0.0.1, for `view` of a
small file and `bash true`. Each MCP call is paired with the same call through an in-process
`Session.run` (A B A B, bench/harness.py), so machine load hits both alike. Goals: a view over
stdio ≤ 1.3× the SDK floor plus the view itself (see VIEW_OVER_FLOOR_GOAL); bash ≤ 1.5× + 5 ms. Also, for
information: the SDK's own floor — a `tools/call` to a minimal server on the same SDK's low-level
`Server` that answers with a constant text of the same size, no tool behind it — paired with the
Session.run view (what a stdio call costs before any tool runs); and connecting over stdio
(process start + handshake), each connect paired with a `python -c pass`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agent_toolsmith.config import Config
from agent_toolsmith.session import Session
from harness import exit_status, pairs_async, record, timed, timed_async
from mcp import Client
from mcp.client.stdio import StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
RUNS = int(os.environ.get("BENCH_RUNS", "60"))
CONNECT_RUNS = int(os.environ.get("BENCH_CONNECT_RUNS", "8"))
CALLS: dict[str, dict[str, Any]] = {"view": {"file_path": "a.txt"}, "bash": {"command": "true"}}
#: A view over stdio vs what it cannot avoid: the SDK's own round trip (the floor server's call)
#: plus the view itself (Session.run), timed side by side. The issue's first form of this goal,
#: ≤ 2× Session.run, measures the SDK more than us: the SDK round trip alone is ~1.3× a small
#: view, and every speed-up of view made that ratio worse. So the view-vs-Session.run rows are
#: shown for information and this one carries the goal: what our server adds is ≤ 30%.
VIEW_OVER_FLOOR_GOAL = 1.3
#: Any call over either transport: the protocol adds at most a few milliseconds.
CALL_GOAL, CALL_SLACK_S = 1.5, 0.005
#: The floor: the SDK's low-level server answering every call with a constant text.
FLOOR_SERVER = """
import socket
import sys

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server

TEXT = open("a.txt").read()


async def call(ctx, params):
    return types.CallToolResult(content=[types.TextContent(text=TEXT)])


async def tools(ctx, params):
    return types.ListToolsResult(tools=[types.Tool(name="constant", input_schema={"type": "object"})])


server = Server("floor", on_call_tool=call, on_list_tools=tools)


async def over_stdio():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


async def discover(ctx, params):
    # As toolsmith-mcp does over HTTP: the handshake versions only, so the client opens a session.
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    return types.DiscoverResult(
        supported_versions=list(HANDSHAKE_PROTOCOL_VERSIONS), capabilities=server.get_capabilities()
    )


async def over_http():
    import uvicorn

    server.add_request_handler("server/discover", types.RequestParams, discover)

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False)
    print(f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", file=sys.stderr, flush=True)
    await uvicorn.Server(config).serve(sockets=[sock])


anyio.run(over_http if "--http" in sys.argv else over_stdio)
"""
#: Hang guard: the HTTP server prints its address within this long.
SERVER_START_TIMEOUT_S = 60


async def compare(transport: str, client: Client, session: Session) -> None:
    for tool, params in CALLS.items():

        async def through_mcp(tool: str = tool, params: dict[str, Any] = params) -> None:
            result = await client.call_tool(tool, params)
            assert not result.is_error, result

        async def direct(tool: str = tool, params: dict[str, Any] = params) -> None:
            response = await session.run(tool, params)
            assert not response.is_error, response.content

        goal = None if (tool, transport) == ("view", "stdio") else CALL_GOAL
        await pairs_async(
            f"MCP {tool} over {transport}", through_mcp, direct, runs=RUNS, reference_name="Session.run", goal=goal,
            slack_s=CALL_SLACK_S,
        )


def stdio_params(workspace: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "cmd.mcp", "--cwd", str(workspace), "--no-lsp"], cwd=str(ROOT)
    )


@contextlib.asynccontextmanager
async def http_server(argv: list[str], cwd: Path) -> AsyncIterator[str]:
    """A server started with ``argv`` that prints its URL on its first stderr line."""
    server = subprocess.Popen(argv, cwd=cwd, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stderr is not None
        line = await asyncio.wait_for(asyncio.to_thread(server.stderr.readline), SERVER_START_TIMEOUT_S)
        url = re.search(r"(http://\S+/mcp)", line)
        assert url is not None, line
        yield url.group(1)
    finally:
        server.terminate()
        server.wait(10)


async def floor_row(transport: str, client: Client, session: Session) -> None:
    """The SDK round trip with no tool behind it, paired with the Session.run view."""

    async def floor() -> None:
        result = await client.call_tool("constant", {})
        assert not result.is_error, result

    async def direct() -> None:
        response = await session.run("view", {"file_path": "a.txt"})
        assert not response.is_error, response.content

    await pairs_async(
        f"SDK floor: minimal server's tools/call, {transport}", floor, direct, runs=RUNS, reference_name="Session.run",
        goal=None,
    )


def floor_stdio_params(workspace: Path) -> StdioServerParameters:
    script = workspace / "floor_server.py"
    script.write_text(FLOOR_SERVER)
    return StdioServerParameters(command=sys.executable, args=[str(script)], cwd=str(workspace))


async def view_over_floor(ours: Client, floor_client: Client, session: Session) -> None:
    """Our server's view vs the floor server's call plus the same view through Session.run, the
    three interleaved (A B C A B C): the reference is what the MCP view cannot avoid."""

    async def through_mcp() -> None:
        assert not (await ours.call_tool("view", CALLS["view"])).is_error

    async def floor() -> None:
        assert not (await floor_client.call_tool("constant", {})).is_error

    async def direct() -> None:
        assert not (await session.run("view", CALLS["view"])).is_error

    for call in (through_mcp, floor, direct):
        await call()
    tool_times, reference_times = [], []
    for _ in range(RUNS):
        tool_times.append(await timed_async(through_mcp))
        reference_times.append(await timed_async(floor) + await timed_async(direct))
    record(
        "MCP view over stdio vs SDK floor + Session.run view", tool_times, reference_times,
        reference="floor + Session.run", goal=VIEW_OVER_FLOOR_GOAL,
    )  # fmt: skip


async def connect_row(workspace: Path) -> None:
    """Connecting over stdio (spawn + initialize), each paired with a bare interpreter start."""

    async def connect() -> None:
        async with Client(stdio_params(workspace)):
            pass

    def bare() -> None:
        subprocess.run([sys.executable, "-c", "pass"], check=True)

    connects, bares = [], []
    for _ in range(CONNECT_RUNS):
        connects.append(await timed_async(connect))
        bares.append(timed(bare))
    record("MCP stdio connect (start + handshake)", connects, bares, reference="python -c pass", goal=None)


async def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(os.path.realpath(tmp))
        (workspace / "a.txt").write_text("hello\n" * 100)
        async with Session(workspace, config=Config(lsp_enabled=False)) as session:
            async with Client(stdio_params(workspace)) as client, Client(floor_stdio_params(workspace)) as floors:
                await compare("stdio", client, session)
                await floor_row("stdio", floors, session)
                await view_over_floor(client, floors, session)
            ours = [sys.executable, "-m", "cmd.mcp", "--http", "--port", "0", "--cwd", str(workspace), "--no-lsp"]
            async with http_server(ours, ROOT) as url, Client(url) as client:
                await compare("HTTP", client, session)
            floor = [sys.executable, str(workspace / "floor_server.py"), "--http"]
            async with http_server(floor, workspace) as url, Client(url) as client:
                await floor_row("HTTP", client, session)
        await connect_row(workspace)
    return exit_status()


if __name__ == "__main__":
    started = time.perf_counter()
    status = asyncio.run(main())
    print(f"  ({time.perf_counter() - started:.0f} s)")
    sys.exit(status)
