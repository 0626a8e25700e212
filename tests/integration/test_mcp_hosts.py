"""What MCP host authors rely on, through the official SDK client: text-first results (no
metadata-only structuredContent), per-session idle reaping, and a bounded number of sessions."""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.helpers import user_config
from tests.integration.test_lsp import MARKER_SERVER
from tests.integration.test_mcp import (
    ROOT,
    WAIT_S,
    HttpServer,
    _env,
    processes_with,
    run,
    stdio_client,
    text,
    until,
)

META = "toolsmith/metadata"


def test_results_are_text_first_with_the_metadata_in_meta(workspace: Path, tmp_path: Path) -> None:
    (workspace / "app.py").write_text("print('hi')\n")
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 20
    (workspace / "i.png").write_bytes(png)

    async def main() -> tuple[types.CallToolResult, types.CallToolResult, types.CallToolResult]:
        async with stdio_client(workspace, tmp_path) as client:
            viewed = await client.call_tool("view", {"file_path": "app.py"})
            image = await client.call_tool("view", {"file_path": "i.png"})
            ran = await client.call_tool("bash", {"command": "echo out; exit 3"})
            return viewed, image, ran

    viewed, image, ran = run(main())
    # What a host that prefers structuredContent shows is the result itself: there is none.
    assert viewed.structured_content is None and ran.structured_content is None
    assert "print('hi')" in text(viewed)
    assert (viewed.meta or {})[META]["lines_shown"] == 1
    assert text(ran).startswith("out") and (ran.meta or {})[META]["exit_code"] == 3
    kinds = [block.type for block in image.content]
    assert kinds[0] == "text" and kinds[1:] == ["image"], kinds
    picture = image.content[1]
    assert isinstance(picture, types.ImageContent) and picture.mime_type == "image/png"
    assert base64.b64decode(picture.data) == png


def test_port_without_http_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cmd.mcp", "--port", "9999"],
        cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=WAIT_S, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 2
    assert "--port applies only to HTTP: add --http" in done.stderr


def test_a_view_over_mcp_starts_no_language_server_and_a_change_does(workspace: Path, tmp_path: Path) -> None:
    token = f"view-{uuid.uuid4().hex}"
    command = [sys.executable, str(MARKER_SERVER), token]
    user_config().write_text(
        f"[lsp.servers.marker]\ncommand = {json.dumps(command)}\nextensions = ['.mark']\n"
    )
    (workspace / "a.mark").write_text("fine\n")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cmd.mcp", "--cwd", str(workspace)], cwd=str(ROOT), env=_env(tmp_path)
    )

    async def main() -> None:
        async with Client(params, read_timeout_seconds=WAIT_S) as client:
            viewed = await client.call_tool("view", {"file_path": "a.mark"})
            assert not viewed.is_error and "fine" in text(viewed)
            assert not processes_with(token), "a view started a language server"
            changed = await client.call_tool("write", {"file_path": "b.mark", "content": "fine\n"})
            assert not changed.is_error, text(changed)
            assert processes_with(token), "the first change starts the language server"
        await until(lambda: not processes_with(token), "the server's exit stops it")

    run(main())


def refusal(error: BaseException) -> str:
    """The message of the MCP error inside what a client's connect raised (exception groups)."""
    if isinstance(error, BaseExceptionGroup):
        return " ".join(refusal(inner) for inner in error.exceptions)
    return str(error)


def test_sessions_past_the_limit_are_refused_until_one_closes(workspace: Path, tmp_path: Path) -> None:
    server = HttpServer(workspace, tmp_path, "--max-sessions", "1")

    async def main() -> tuple[str, types.CallToolResult]:
        async with server.client() as first:
            assert not (await first.call_tool("bash", {"command": "true"})).is_error
            try:
                async with server.client():
                    raise AssertionError("a second session was opened past --max-sessions 1")
            except Exception as error:
                refused = refusal(error)
        # first's DELETE closed its session: the slot is free.
        async with server.client() as second:
            return refused, await second.call_tool("bash", {"command": "echo served"})

    try:
        refused, served = run(main())
    finally:
        server.stop()
    assert "--max-sessions 1" in refused and "whether or not it made a call" in refused
    assert not served.is_error and text(served) == "served"


def test_an_idle_session_is_closed_and_frees_its_slot(workspace: Path, tmp_path: Path) -> None:
    server = HttpServer(workspace, tmp_path, "--max-sessions", "1", "--session-idle", "1")

    async def main() -> types.CallToolResult:
        async with server.client() as first:
            assert not (await first.call_tool("bash", {"command": "true"})).is_error
            loop = asyncio.get_running_loop()
            deadline = loop.time() + WAIT_S
            while True:  # polls until the reaper closed first's session (first never leaves)
                try:
                    async with server.client() as second:
                        return await second.call_tool("bash", {"command": "echo served"})
                except Exception:
                    assert loop.time() < deadline, "the idle session was not closed"
                    await asyncio.sleep(0.1)

    try:
        served = run(main())
    finally:
        server.stop()
    assert not served.is_error and text(served) == "served"


def test_the_server_module_loads_no_tool_before_initialize() -> None:
    """What `initialize` waits for is the SDK's import alone: the tools, the session and the
    language-server layer load on the first listing or call (bench/mcp_startup.py measures it)."""
    probe = (
        "import sys, agent_toolsmith.mcp_server as m; "
        "print(sorted(n for n in sys.modules if n.startswith(('agent_toolsmith.llm', 'agent_toolsmith.session', "
        "'agent_toolsmith.lsp', 'agent_toolsmith.shell'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=WAIT_S, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"



def test_without_the_sdk_the_command_says_how_to_install_it() -> None:
    """The server's modules import without the optional SDK, so the command can explain."""
    probe = (
        "import sys; sys.modules['mcp_types'] = None; "  # what a Python without the extra sees
        "from agent_toolsmith.mcp_server import main; sys.exit(main(['--cwd', '.']))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=WAIT_S, cwd=ROOT)
    assert done.returncode == 2, done.stderr
    assert "missing module 'mcp_types'" in done.stderr and "pip install 'agent-toolsmith[mcp]'" in done.stderr


def test_one_shot_sessions_close_sooner_than_busy_ones_and_running_ones_stay(workspace: Path) -> None:
    from agent_toolsmith.config import Config
    from agent_toolsmith.mcp_server.http_sessions import HttpSession, SessionGate
    from agent_toolsmith.mcp_server.server import ONE_SHOT_IDLE_S, ToolsmithServer, _Entry
    from agent_toolsmith.session import Session

    server = ToolsmithServer(workspace, Config(lsp_enabled=False), session_idle_s=10 * ONE_SHOT_IDLE_S)
    deleted: list[str] = []

    async def sdk_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Below the gate, the SDK's app: here it notes which sessions were deleted."""
        deleted.append(dict(scope["headers"])[b"mcp-session-id"].decode())
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    gate = SessionGate(sdk_app, server, share=8, total=8)

    def session(key: str, calls: int, idle_s: float, in_flight: int = 0) -> None:
        if calls:
            server.sessions[key] = _Entry(Session(workspace, config=Config(lsp_enabled=False)), calls=calls)
        gate.sessions[key] = HttpSession(last_active=time.monotonic() - idle_s, in_flight=in_flight)

    async def main() -> list[str]:
        session("never called, idle", 0, ONE_SHOT_IDLE_S + 5)
        session("one-shot, idle", 1, ONE_SHOT_IDLE_S + 5)
        session("busy, as idle", 7, ONE_SHOT_IDLE_S + 5)
        session("busy, idle past the limit", 7, 10 * ONE_SHOT_IDLE_S + 5)
        session("running a long call", 1, 10 * ONE_SHOT_IDLE_S + 5, in_flight=1)
        await gate.reap_once()
        left = sorted(gate.sessions)
        assert sorted(server.sessions) == ["busy, as idle", "running a long call"]
        await server.close()
        return left

    assert run(main()) == ["busy, as idle", "running a long call"]
    assert sorted(deleted) == ["busy, idle past the limit", "never called, idle", "one-shot, idle"]
