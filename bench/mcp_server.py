"""A tool call through the MCP server vs the same call through Session.run.

What an MCP host waits for: the whole `tools/call` round trip through the official SDK client,
over stdio (the server as a subprocess) and over streamable HTTP on 127.0.0.1, for `view` of a
small file and `bash true`. Target: the protocol adds at most a few milliseconds per call
(≤ 1.5x + 5 ms over Session.run). Also prints the cost of connecting (process start + handshake).
"""

from __future__ import annotations

import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agent_toolsmith.config import Config
from agent_toolsmith.session import Session
from mcp import Client
from mcp.client.stdio import StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
RUNS = 30
CALLS: dict[str, dict[str, Any]] = {"view": {"file_path": "a.txt"}, "bash": {"command": "true"}}


async def median_s(call: Callable[[], Awaitable[Any]]) -> float:
    await call()  # warm
    samples = []
    for _ in range(RUNS):
        started = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


async def each_call(run: Callable[[str, dict[str, Any]], Awaitable[Any]]) -> dict[str, float]:
    timings = {}
    for tool, params in CALLS.items():

        def call(tool: str = tool, params: dict[str, Any] = params) -> Awaitable[Any]:
            return run(tool, params)

        timings[tool] = await median_s(call)
    return timings


async def direct(workspace: Path) -> dict[str, float]:
    async with Session(workspace, config=Config(lsp_enabled=False)) as session:
        return await each_call(session.run)


async def through(client: Client) -> dict[str, float]:
    return await each_call(client.call_tool)


async def stdio(workspace: Path) -> tuple[float, dict[str, float]]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cmd.mcp", "--cwd", str(workspace), "--no-lsp"], cwd=str(ROOT)
    )
    started = time.perf_counter()
    async with Client(params) as client:
        connected = time.perf_counter() - started
        return connected, await through(client)


async def http(workspace: Path) -> dict[str, float]:
    server = subprocess.Popen(
        [sys.executable, "-m", "cmd.mcp", "--http", "--port", "0", "--cwd", str(workspace), "--no-lsp"],
        cwd=ROOT, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.stderr is not None
        url = re.search(r"(http://\S+/mcp)", server.stderr.readline())
        assert url is not None
        async with Client(url.group(1)) as client:
            return await through(client)
    finally:
        server.terminate()
        server.wait(10)


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(os.path.realpath(tmp))
        (workspace / "a.txt").write_text("hello\n" * 100)
        base = await direct(workspace)
        connected, over_stdio = await stdio(workspace)
        over_http = await http(workspace)
    print(f"connect over stdio (start + handshake): {connected * 1000:.0f} ms")
    for tool in CALLS:
        for name, measured in (("stdio", over_stdio), ("http", over_http)):
            ratio = measured[tool] / base[tool]
            budget = 1.5 * base[tool] + 0.005
            verdict = "within" if measured[tool] <= budget else "OVER"
            shown = f"{measured[tool] * 1000:7.2f} ms vs Session.run {base[tool] * 1000:6.2f} ms"
            print(f"{tool:<5} over {name:<5} {shown} ({ratio:.2f}x; budget 1.5x + 5 ms) {verdict}")


if __name__ == "__main__":
    asyncio.run(main())
