"""MCP transports: HTTP checks Host, Origin and bearer tokens on every binding (a real server
process on 127.0.0.2, a real HTTP client); stdio answers a line that is not JSON with -32700."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
#: Every wait on a server process or a response is bounded by this.
WAIT_S = 20.0
TOKEN_A = "token-a-" + "a" * 24
TOKEN_B = "token-b-" + "b" * 24
INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}  # fmt: skip


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "TOOLSMITH_STATE_DIR": str(tmp_path / "state"), "PYTHONUNBUFFERED": "1"}
    env.pop("TOOLSMITH_MCP_TOKEN", None)
    return {**env, **extra}


class Server:
    def __init__(self, workspace: Path, tmp_path: Path, *extra: str, env: dict[str, str] | None = None) -> None:
        command = [sys.executable, "-m", "cmd.mcp", "--http", "--host", "127.0.0.2", "--port", "0",
                   "--cwd", str(workspace), "--no-lsp", *extra]  # fmt: skip
        self.process = subprocess.Popen(command, cwd=ROOT, env=env or _env(tmp_path), stderr=subprocess.PIPE, text=True)
        lines: queue.Queue[str] = queue.Queue()
        assert self.process.stderr is not None
        stderr = self.process.stderr
        threading.Thread(target=lambda: lines.put(stderr.readline()), daemon=True).start()
        first = lines.get(timeout=WAIT_S)
        found = re.search(r"http://127\.0\.0\.2:(\d+)(/mcp)", first)
        assert found, first
        self.port = int(found.group(1))
        self.url = f"http://127.0.0.2:{self.port}/mcp"

    def post(self, body: Any, **headers: str) -> httpx.Response:
        base = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        with httpx.Client(timeout=WAIT_S) as client:
            return client.post(self.url, content=json.dumps(body), headers={**base, **headers})

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(WAIT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(WAIT_S)


def test_a_foreign_host_or_origin_is_refused_on_127_0_0_2(
    workspace: Path, tmp_path: Path, servers: list[Server]
) -> None:
    server = Server(workspace, tmp_path)
    servers.append(server)
    assert server.post(INITIALIZE, host="evil.example").status_code == 403
    assert server.post(INITIALIZE, origin="http://evil.example").status_code == 403
    assert server.post(INITIALIZE, host=f"evil.example:{server.port}", origin="http://evil.example").status_code == 403
    ok = server.post(INITIALIZE, origin=f"http://127.0.0.2:{server.port}")
    assert ok.status_code == 200, ok.text
    assert ok.headers.get("mcp-session-id")


def test_allowed_hosts_are_configurable(workspace: Path, tmp_path: Path, servers: list[Server]) -> None:
    server = Server(workspace, tmp_path, "--allowed-host", "toolsmith.internal")
    servers.append(server)
    assert server.post(INITIALIZE, host="toolsmith.internal").status_code == 200
    assert server.post(INITIALIZE, host="other.internal").status_code == 403


def test_tokens_are_required_and_sessions_belong_to_their_token(
    workspace: Path, tmp_path: Path, servers: list[Server]
) -> None:
    server = Server(workspace, tmp_path, env=_env(tmp_path, TOOLSMITH_MCP_TOKEN=f"{TOKEN_A},{TOKEN_B}"))
    servers.append(server)
    assert server.post(INITIALIZE).status_code == 401
    assert server.post(INITIALIZE, authorization="Bearer wrong-token-wrong-token").status_code == 401
    created = server.post(INITIALIZE, authorization=f"Bearer {TOKEN_A}")
    assert created.status_code == 200, created.text
    session = created.headers["mcp-session-id"]
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    other = server.post(ping, authorization=f"Bearer {TOKEN_B}", **{"mcp-session-id": session})
    assert other.status_code == 403 and "another token" in other.text


def test_token_and_hosts_from_the_config_file(workspace: Path, tmp_path: Path, servers: list[Server]) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN_A + "\n")
    config = tmp_path / "mcp.toml"
    config.write_text(f'[mcp]\ntoken_file = "{token_file}"\nallowed_hosts = ["box.internal"]\n')
    server = Server(workspace, tmp_path, "--config", str(config))
    servers.append(server)
    assert server.post(INITIALIZE, host="box.internal").status_code == 401
    assert server.post(INITIALIZE, host="box.internal", authorization=f"Bearer {TOKEN_A}").status_code == 200


def test_allow_remote_without_a_token_does_not_start(workspace: Path, tmp_path: Path) -> None:
    command = [sys.executable, "-m", "cmd.mcp", "--http", "--host", "0.0.0.0", "--port", "0", "--allow-remote",
               "--cwd", str(workspace), "--no-lsp"]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=WAIT_S)
    assert done.returncode == 2 and "bearer token" in done.stderr


def test_stdio_answers_garbage_with_a_parse_error_and_keeps_serving(workspace: Path, tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "cmd.mcp", "--cwd", str(workspace), "--no-lsp"],
        cwd=ROOT, env=_env(tmp_path), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    answers: queue.Queue[bytes] = queue.Queue()
    assert process.stdin is not None and process.stdout is not None
    stdout = process.stdout

    def read() -> None:
        for line in stdout:
            answers.put(line)

    threading.Thread(target=read, daemon=True).start()
    try:
        process.stdin.write(b"this is not json\n")
        process.stdin.write(b'{"not": "json-rpc"}\n')
        process.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
        process.stdin.flush()
        first = json.loads(answers.get(timeout=WAIT_S))
        second = json.loads(answers.get(timeout=WAIT_S))
        third = json.loads(answers.get(timeout=WAIT_S))
        assert first["error"]["code"] == -32700 and first["id"] is None
        assert second["error"]["code"] == -32600
        assert third["id"] == 1 and "serverInfo" in third["result"]
    finally:
        process.stdin.close()
        try:
            process.wait(WAIT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(WAIT_S)


def test_connections_get_tcp_nodelay_so_keep_alive_calls_do_not_stall() -> None:
    """A listening socket made with proto 0 hands asyncio accepted sockets it will not set
    TCP_NODELAY on: Nagle and delayed ACKs then held each keep-alive call ~40 ms."""
    import asyncio
    import socket

    from agent_toolsmith.mcp_server.http_transport import listen

    async def main() -> int:
        listener = listen("127.0.0.1", 0)
        client = socket.create_connection(listener.getsockname(), timeout=WAIT_S)
        accepted, _ = listener.accept()
        try:
            assert accepted.proto == socket.IPPROTO_TCP
            transport, _ = await asyncio.get_running_loop().connect_accepted_socket(asyncio.Protocol, accepted)
            nodelay = transport.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            transport.close()
            return int(nodelay)
        finally:
            client.close()
            listener.close()

    assert asyncio.run(main()) != 0
