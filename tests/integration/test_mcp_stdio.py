"""The stdio transport served on the event loop (internal/mcp_server/stdio_streams.py), through real pipes: lines
of any length in, results larger than a pipe buffer out, fd 0 and 1 kept away from the protocol
while serving, a clean exit when stdin closes."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Hang guard for one answer or for the exit.
WAIT_S = 60.0
HELLO = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}


class RawServer:
    """`python -m cmd.mcp` on pipes, spoken to line by line."""

    def __init__(self, workspace: Path, state: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cmd.mcp", "--cwd", str(workspace), "--no-lsp"],
            cwd=ROOT, env={**os.environ, "TOOLSMITH_STATE_DIR": str(state)},
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self.next_id = 1

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request and read lines until its answer (a timeout fails the test)."""
        ident = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        assert self.process.stdout is not None
        while True:
            line = _readline(self.process, WAIT_S)
            answer: dict[str, Any] = json.loads(line)
            if answer.get("id") == ident:
                return answer

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.request("tools/call", {"name": tool, "arguments": arguments})["result"]
        return result

    def close(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        return self.process.wait(WAIT_S)


def _readline(process: subprocess.Popen[bytes], timeout: float) -> bytes:
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            raise TimeoutError(f"no answer in {timeout} s")
    line = process.stdout.readline()
    assert line, "the server closed stdout"
    return line


@pytest.fixture
def server(tmp_path: Path) -> Any:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    raw = RawServer(Path(os.path.realpath(workspace)), tmp_path / "state")
    raw.request("initialize", HELLO)
    raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    yield raw, Path(os.path.realpath(workspace))
    if raw.process.poll() is None:
        raw.process.kill()
        raw.process.wait(WAIT_S)


def test_long_lines_in_and_large_results_out(server: tuple[RawServer, Path]) -> None:
    raw, workspace = server
    # ~2.8 MB in one request line; tabs double in JSON, so a page of the view outgrows a pipe buffer.
    content = "".join(f"line {n:07d} {chr(9) * 60}\n" for n in range(40_000))
    written = raw.call("write", {"file_path": "big.txt", "content": content})
    assert not written.get("isError"), written
    assert (workspace / "big.txt").read_text() == content
    viewed = raw.call("view", {"file_path": "big.txt"})
    text = viewed["content"][0]["text"]
    shown = int(text.rsplit("Showing lines 1-", 1)[1].split(" ", 1)[0])
    assert f"line {shown - 1:07d}" in text and f"line {shown:07d}" not in text
    assert len(json.dumps(viewed)) > 65536  # more than a pipe buffer holds, read in full
    assert raw.close() == 0


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_fd_0_and_1_are_kept_from_the_protocol_while_serving(server: tuple[RawServer, Path]) -> None:
    raw, _ = server
    fds = Path(f"/proc/{raw.process.pid}/fd")
    assert os.readlink(fds / "0") == os.devnull
    assert os.readlink(fds / "1") == os.readlink(fds / "2")
    assert raw.call("view", {"file_path": "."})["content"]
    assert raw.close() == 0
