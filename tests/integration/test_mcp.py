"""The MCP server driven by the official SDK's real client, over stdio and streamable HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.session import Session
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.helpers import user_config
from tests.integration.test_lsp import MARKER_SERVER

ROOT = Path(__file__).resolve().parents[2]
#: Every wait on the server or a process is bounded by this.
WAIT_S = 20.0


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "TOOLSMITH_STATE_DIR": str(tmp_path / "state"), "PYTHONUNBUFFERED": "1"}


def stdio_client(workspace: Path, tmp_path: Path, *extra: str, **client: Any) -> Client:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "cmd.mcp", "--cwd", str(workspace), "--no-lsp", *extra],
        cwd=str(ROOT),
        env=_env(tmp_path),
    )
    return Client(params, read_timeout_seconds=WAIT_S, **client)


class HttpServer:
    """``python -m cmd.mcp --http --port 0``: a real server process on 127.0.0.1."""

    def __init__(self, workspace: Path, tmp_path: Path, *extra: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cmd.mcp", "--http", "--port", "0", "--cwd", str(workspace), "--no-lsp", *extra],
            cwd=ROOT, env=_env(tmp_path), stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        lines: queue.Queue[str] = queue.Queue()
        assert self.process.stderr is not None
        threading.Thread(target=lambda: lines.put(self.process.stderr.readline()), daemon=True).start()  # type: ignore[union-attr]
        first = lines.get(timeout=WAIT_S)
        found = re.search(r"(http://127\.0\.0\.1:\d+/mcp)", first)
        assert found, first
        self.url = found.group(1)

    def client(self, **options: Any) -> Client:
        return Client(self.url, read_timeout_seconds=WAIT_S, **options)

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(WAIT_S) == 0


@asynccontextmanager
async def connected(kind: str, workspace: Path, tmp_path: Path, http: HttpServer | None) -> AsyncIterator[Client]:
    client = http.client() if kind == "http" and http is not None else stdio_client(workspace, tmp_path)
    async with client:
        yield client


def text(result: types.CallToolResult) -> str:
    first = result.content[0]
    assert isinstance(first, types.TextContent)
    return first.text


def processes_with(token: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    if token.encode() in handle.read():
                        found.append(int(entry))
            except OSError:
                continue
    return found


async def until(condition: Callable[[], bool], what: str) -> None:
    """Poll ``condition`` until it holds or WAIT_S passes (never a fixed sleep as synchronisation)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_S
    while not condition():
        assert loop.time() < deadline, f"timed out waiting until {what}"
        await asyncio.sleep(0.02)


def run(coroutine: Awaitable[Any]) -> Any:
    return asyncio.run(asyncio.wait_for(coroutine, 3 * WAIT_S))  # type: ignore[arg-type]


# --- tools and annotations -------------------------------------------------------------------


def test_every_tool_is_listed_with_its_schema_title_and_annotations(workspace: Path, tmp_path: Path) -> None:
    async def main() -> list[types.Tool]:
        async with stdio_client(workspace, tmp_path) as client:
            return (await client.list_tools()).tools

    tools = {tool.name: tool for tool in run(main())}
    expected = {info.name: info for info in Session(workspace, config=Config(lsp_enabled=False)).tools()}
    assert list(tools) == list(expected)
    for name, tool in tools.items():
        assert tool.input_schema == expected[name].parameters and tool.description == expected[name].description
        assert tool.title and tool.annotations is not None and tool.annotations.title == tool.title
    hints = {n: (t.annotations.read_only_hint, t.annotations.destructive_hint, t.annotations.open_world_hint)  # type: ignore[union-attr]
             for n, t in tools.items()}  # fmt: skip
    assert hints["view"] == (True, False, False)
    assert hints["fetch"] == (True, False, True)
    assert hints["bash"] == (False, True, True)
    assert hints["edit"] == (False, True, False)
    assert tools["write"].annotations.idempotent_hint is True  # type: ignore[union-attr]
    assert tools["edit"].annotations.idempotent_hint is False  # type: ignore[union-attr]


@pytest.mark.parametrize("kind", ["stdio", "http"])
def test_view_then_edit_returns_the_diff(kind: str, workspace: Path, tmp_path: Path, http_server: HttpServer) -> None:
    (workspace / "a.py").write_text("x = 1\ny = 2\n")

    async def main() -> tuple[types.CallToolResult, types.CallToolResult]:
        async with connected(kind, workspace, tmp_path, http_server) as client:
            viewed = await client.call_tool("view", {"file_path": "a.py"})
            edited = await client.call_tool("edit", {"file_path": "a.py", "old_string": "y = 2", "new_string": "y = 3"})
            return viewed, edited

    viewed, edited = run(main())
    assert "     2|y = 2" in text(viewed) and viewed.is_error is False
    assert edited.is_error is False and "Edited" in text(edited)
    assert "-y = 2\n+y = 3" in (edited.meta or {})["toolsmith/metadata"]["diff"]
    assert (workspace / "a.py").read_text() == "x = 1\ny = 3\n"


@pytest.mark.parametrize("kind", ["stdio", "http"])
def test_bash_output_arrives_as_progress(kind: str, workspace: Path, tmp_path: Path, http_server: HttpServer) -> None:
    received: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        received.append((progress, message))

    async def main() -> types.CallToolResult:
        async with connected(kind, workspace, tmp_path, http_server) as client:
            command = "for i in 1 2 3; do echo line-$i; sleep 0.15; done"
            return await client.call_tool("bash", {"command": command}, progress_callback=on_progress)

    result = run(main())
    assert text(result) == "line-1\nline-2\nline-3"
    values = [value for value, _ in received]
    assert values == sorted(values) and len(set(values)) == len(values)  # increasing
    assert "".join(message or "" for _, message in received) == "line-1\nline-2\nline-3\n"


def test_a_tool_failure_is_an_error_result_not_a_protocol_error(workspace: Path, tmp_path: Path) -> None:
    async def main() -> tuple[types.CallToolResult, types.CallToolResult]:
        async with stdio_client(workspace, tmp_path) as client:
            missing = await client.call_tool("view", {"file_path": "nope.txt"})
            invalid = await client.call_tool("view", {"offset": "x"})
            return missing, invalid

    missing, invalid = run(main())
    assert missing.is_error is True and text(missing).startswith("File not found")
    assert invalid.is_error is True and "Invalid parameters for view" in text(invalid)


# --- cancellation and shutdown ----------------------------------------------------------------


@pytest.mark.parametrize("kind", ["stdio", "http"])
def test_a_cancelled_bash_call_leaves_no_process_and_the_server_serves_on(
    kind: str, workspace: Path, tmp_path: Path, http_server: HttpServer
) -> None:
    token = f"cancel-me-{uuid.uuid4().hex}"

    async def main() -> types.CallToolResult:
        async with connected(kind, workspace, tmp_path, http_server) as client:
            call = asyncio.ensure_future(client.call_tool("bash", {"command": f"sleep 1000; : {token}"}))
            await until(lambda: bool(processes_with(token)), "the command runs")
            call.cancel()
            await asyncio.gather(call, return_exceptions=True)
            await until(lambda: not processes_with(token), "the command's processes are gone")
            return await client.call_tool("bash", {"command": "echo still serving"})

    assert text(run(main())) == "still serving"


def _rpc(process: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert process.stdin is not None
    process.stdin.write((json.dumps(message) + "\n").encode())
    process.stdin.flush()


def test_stdin_closing_stops_running_commands_and_language_servers(workspace: Path, tmp_path: Path) -> None:
    """The host goes away mid-call (no cancellation sent): nothing the server started survives."""
    token = f"orphan-{uuid.uuid4().hex}"
    command = [sys.executable, str(MARKER_SERVER), token]
    user_config().write_text(
        f"[lsp.servers.marker]\ncommand = {json.dumps(command)}\nextensions = ['.mark']\n"
    )
    (workspace / "a.mark").write_text("fine\n")
    server = subprocess.Popen(
        [sys.executable, "-m", "cmd.mcp", "--cwd", str(workspace)],
        cwd=ROOT, env=_env(tmp_path), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}
        _rpc(server, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
        assert server.stdout is not None and b'"id":1' in server.stdout.readline().replace(b" ", b"")
        _rpc(server, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _rpc(server, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "write", "arguments": {"file_path": "b.mark", "content": "x\n"}}})  # fmt: skip
        assert b'"id":2' in server.stdout.readline().replace(b" ", b"")
        _rpc(server, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                      "params": {"name": "bash", "arguments": {"command": f"sleep 1000; : {token}"}}})  # fmt: skip
        asyncio.run(until(lambda: len(processes_with(token)) >= 2, "the language server and the command run"))
        assert server.stdin is not None
        server.stdin.close()
        assert server.wait(WAIT_S) == 0
        asyncio.run(until(lambda: not processes_with(token), "everything the server started is gone"))
    finally:
        if server.poll() is None:
            server.kill()


# --- sessions, roots, policy -----------------------------------------------------------------


def test_two_http_sessions_keep_their_own_state(workspace: Path, tmp_path: Path, http_server: HttpServer) -> None:
    (workspace / "one").mkdir()
    (workspace / "note.txt").write_text("hello\n")

    async def main() -> tuple[str, str, types.CallToolResult]:
        async with http_server.client() as a, http_server.client() as b:
            await asyncio.gather(
                a.call_tool("bash", {"command": "cd one"}), a.call_tool("view", {"file_path": "note.txt"})
            )
            where_a, where_b = await asyncio.gather(
                a.call_tool("bash", {"command": "pwd"}), b.call_tool("bash", {"command": "pwd"})
            )
            # b never read note.txt: its session refuses to edit it.
            b_edit = await b.call_tool("edit", {"file_path": "note.txt", "old_string": "hello", "new_string": "bye"})
            return text(where_a), text(where_b), b_edit

    where_a, where_b, b_edit = run(main())
    assert (where_a, where_b) == (str(workspace / "one"), str(workspace))
    assert b_edit.is_error and "read the file before editing" in text(b_edit)


def test_a_client_without_sessions_is_told_why(workspace: Path, tmp_path: Path, http_server: HttpServer) -> None:
    async def main() -> types.CallToolResult:
        async with http_server.client(mode="2026-07-28") as client:
            return await client.call_tool("bash", {"command": "pwd"})

    refused = run(main())
    assert refused.is_error and "protocol 2026-07-28 has no sessions over HTTP" in text(refused)
    assert (refused.meta or {}).get("toolsmith/metadata", {}).get("error") == "no_session"


@pytest.mark.parametrize("kind", ["stdio", "http"])
def test_the_clients_roots_become_allowed_dirs(
    kind: str, workspace: Path, tmp_path: Path, http_server: HttpServer
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()

    async def roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=shared.as_uri(), name="shared")])  # type: ignore[arg-type]

    async def main() -> types.CallToolResult:
        options: dict[str, Any] = {"mode": "legacy", "list_roots_callback": roots}
        client = http_server.client(**options) if kind == "http" else stdio_client(workspace, tmp_path, **options)
        async with client:
            return await client.call_tool("write", {"file_path": str(shared / "out.txt"), "content": "from mcp\n"})

    written = run(main())
    assert written.is_error is False, text(written)
    assert (shared / "out.txt").read_text() == "from mcp\n"


def test_read_only_offers_and_runs_only_tools_that_change_nothing(workspace: Path, tmp_path: Path) -> None:
    async def main() -> tuple[list[str], types.CallToolResult]:
        async with stdio_client(workspace, tmp_path, "--read-only") as client:
            names = [t.name for t in (await client.list_tools()).tools]
            return names, await client.call_tool("write", {"file_path": "x.txt", "content": "x"})

    names, refused = run(main())
    assert names == [
        "job_output", "view", "read_many", "attach", "glob", "grep", "ls", "lsp", "fetch", "skill", "outline",
        "plan", "question",
    ]  # fmt: skip
    assert refused.is_error and "this session is read-only" in text(refused)
    assert not (workspace / "x.txt").exists()


def test_custom_tools_and_the_audit_log(tmp_path: Path) -> None:
    example = ROOT / "testdata" / "custom_tools"
    audit = tmp_path / "audit.jsonl"

    async def main() -> tuple[list[str], types.CallToolResult]:
        async with stdio_client(example, tmp_path, "--audit-log", str(audit)) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            return names, await client.call_tool("greet", {"args": "MCP"})

    names, greeted = run(main())
    assert "greet" in names and text(greeted) == "Hello, MCP!"
    (record,) = [json.loads(line) for line in audit.read_text().splitlines()]
    assert record["tool"] == "greet" and record["params"] == {"args": "MCP"} and record["exit_code"] == 0


def test_a_non_loopback_bind_is_refused_with_the_reason(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cmd.mcp", "--http", "--host", "0.0.0.0"],
        cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=WAIT_S,
    )  # fmt: skip
    assert done.returncode == 2
    assert "refusing to listen on 0.0.0.0" in done.stderr and "--allow-remote" in done.stderr
