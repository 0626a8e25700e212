"""tools/call over stdio without the SDK's dispatch (internal/mcp_server/stdio_fast.py): the
answers are the SDK's own, a cancel stops a call and leaves it unanswered, and what the lane does
not serve reaches the SDK. Spoken to as a raw client on pipes (protocol 2026-07-28: every request
names its version)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_mcp_stdio import WAIT_S, RawServer, _readline

MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


#: A 1x1 PNG.
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000100ffff03000006000557bfabd40000000049454e44ae426082"
)


def call(raw: RawServer, tool: str, arguments: dict[str, Any], **meta: Any) -> dict[str, Any]:
    answer = raw.request("tools/call", {"name": tool, "arguments": arguments, "_meta": {**MODERN, **meta}})
    assert "result" in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


def without_timing(result: dict[str, Any]) -> dict[str, Any]:
    copy = json.loads(json.dumps(result))
    copy["_meta"]["toolsmith/metadata"].pop("duration_ms", None)
    return copy


@pytest.fixture
def raw(tmp_path: Path) -> Any:
    workspace = Path(os.path.realpath(tmp_path)) / "ws"
    (workspace / "pkg").mkdir(parents=True)
    (workspace / "pkg" / "mod.py").write_text("def f():\n    return 1\n")
    (workspace / "notes.md").write_text("é notes\n")
    (workspace / "pixel.png").write_bytes(PIXEL)
    server = RawServer(workspace, tmp_path / "state")
    server.workspace = workspace  # type: ignore[attr-defined]
    yield server
    if server.process.poll() is None:
        server.process.kill()
        server.process.wait(WAIT_S)


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("view", {"file_path": "pkg/mod.py"}),
        ("view", {"file_path": "notes.md"}),
        ("view", {"file_path": "missing.py"}),  # an error result
        ("view", {"file_path": "pixel.png"}),  # an image attachment
        ("ls", {"depth": 1}),
        ("glob", {"pattern": "**/*.py"}),
        ("grep", {"pattern": "return"}),
        ("read_many", {"paths": ["pkg/mod.py", "notes.md"]}),
    ],
)
def test_the_lane_answers_as_the_sdk_does(raw: RawServer, tool: str, arguments: dict[str, Any]) -> None:
    """The same call answered by the lane and, with a progress token (which the lane leaves to
    the SDK), by the SDK: the same result, to the byte once parsed (timing aside)."""
    call(raw, "view", {"file_path": "pkg/mod.py"})  # the session's first call: the SDK's, always
    fast = call(raw, tool, arguments)
    by_sdk = call(raw, tool, arguments, progressToken="p1")
    assert without_timing(fast) == without_timing(by_sdk)
    assert fast["resultType"] == "complete" and "io.modelcontextprotocol/serverInfo" in fast["_meta"]
    assert raw.close() == 0


def test_an_edit_through_the_lane_is_an_edit(raw: RawServer) -> None:
    call(raw, "view", {"file_path": "pkg/mod.py"})
    edited = call(raw, "edit", {"file_path": "pkg/mod.py", "old_string": "return 1", "new_string": "return 2"})
    assert not edited["isError"], edited
    assert (raw.workspace / "pkg" / "mod.py").read_text() == "def f():\n    return 2\n"  # type: ignore[attr-defined]
    again = call(raw, "edit", {"file_path": "pkg/mod.py", "old_string": "return 1", "new_string": "return 3"})
    assert again["isError"] and again["_meta"]["toolsmith/metadata"]["error"] == "no_match"
    assert raw.close() == 0


def test_a_call_cancelled_before_it_ran_is_never_answered(raw: RawServer) -> None:
    """The call and its cancel arrive together: the lane cancels the call it took, no answer
    comes for it, and the session serves on."""
    call(raw, "view", {"file_path": "pkg/mod.py"})
    cancelled_id = 1000
    params = {"name": "grep", "arguments": {"pattern": "return"}, "_meta": MODERN}
    lines = [
        {"jsonrpc": "2.0", "id": cancelled_id, "method": "tools/call", "params": params},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": cancelled_id}},
    ]
    assert raw.process.stdin is not None
    raw.process.stdin.write("".join(json.dumps(line) + "\n" for line in lines).encode())
    raw.process.stdin.flush()
    after = raw.request("tools/call", {"name": "view", "arguments": {"file_path": "notes.md"}, "_meta": MODERN})
    assert after["result"]["content"][0]["text"].startswith("<file>")
    raw.process.stdin.close()  # the server ends; everything it wrote is before its exit
    rest = raw.process.stdout.read() if raw.process.stdout is not None else b""
    assert raw.process.wait(WAIT_S) == 0
    assert not [line for line in rest.splitlines() if json.loads(line).get("id") == cancelled_id]


def test_what_the_lane_does_not_serve_reaches_the_sdk(raw: RawServer) -> None:
    """An unknown tool (the SDK's way: the lane serves only its own tools), a malformed call: the
    SDK's answers."""
    first = raw.request("tools/call", {"name": "nope", "arguments": {}, "_meta": MODERN})
    assert first["result"]["isError"] and "Unknown tool" in first["result"]["content"][0]["text"]
    unknown = raw.request("tools/call", {"name": "nope", "arguments": {}, "_meta": MODERN})
    assert without_timing(unknown["result"]) == without_timing(first["result"])
    malformed = raw.request("tools/call", {"name": 7, "_meta": MODERN})
    assert "error" in malformed  # the SDK's JSON-RPC error, not a tool result
    assert raw.close() == 0


def test_many_calls_at_once_are_each_answered_once(raw: RawServer) -> None:
    call(raw, "view", {"file_path": "pkg/mod.py"})
    assert raw.process.stdin is not None
    ids = range(2000, 2040)
    raw.process.stdin.write("".join(
        json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                    "params": {"name": "view", "arguments": {"file_path": "notes.md"}, "_meta": MODERN}}) + "\n"
        for i in ids
    ).encode())  # fmt: skip
    raw.process.stdin.flush()
    seen: list[int] = []
    deadline = time.monotonic() + WAIT_S
    while len(seen) < len(ids):
        answer = json.loads(_readline(raw.process, max(deadline - time.monotonic(), 0.1)))
        seen.append(answer["id"])
        assert answer["result"]["content"][0]["text"].startswith("<file>")
    assert sorted(seen) == list(ids)
    assert raw.close() == 0


class _Written:
    """The lane's writer, kept in memory."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    def write_encoded(self, data: bytes) -> None:
        self.lines.append(json.loads(data))

    async def flush(self) -> None:
        return None


def _line(request_id: int, name: str, arguments: dict[str, Any], meta: dict[str, Any] | None = None) -> bytes:
    params = {"name": name, "arguments": arguments, "_meta": MODERN if meta is None else meta}
    return (json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}) + "\n").encode()


def test_the_lane_takes_its_calls_and_leaves_the_rest(tmp_path: Path) -> None:
    """In process: which lines the lane takes (and answers), which it leaves to the SDK, and a
    call it took and then was told to cancel, which it never answers."""
    import asyncio

    from agent_toolsmith.config import Config
    from agent_toolsmith.mcp_server.server import STDIO_KEY, ToolsmithServer, _Entry
    from agent_toolsmith.mcp_server.stdio_fast import FastLane

    (tmp_path / "a.txt").write_text("a\n")

    async def main() -> None:
        server = ToolsmithServer(tmp_path, Config(lsp_enabled=False))
        written = _Written()
        lane = FastLane(server, written)  # type: ignore[arg-type]
        assert not lane.take(_line(1, "view", {"file_path": "a.txt"}))  # no session yet: the SDK's
        server.sessions[STDIO_KEY] = _Entry(server._new_session([]), modern=True)
        assert lane.take(_line(2, "view", {"file_path": "a.txt"}))
        for left in (
            _line(3, "view", {}, {**MODERN, "progressToken": 1}),  # progress: the SDK's
            _line(4, "view", {}, {"io.modelcontextprotocol/protocolVersion": "2025-11-25"}),  # not this lane's
            _line(5, "view", {}, {}),  # a handshake-era request names no version
            _line(6, "question", {"questions": []}),  # asks the client
            _line(7, "bash", {"command": "true"}),
            b'{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "view", "arguments": 1}}\n',
            b'{"jsonrpc": "2.0", "id": true, "method": "tools/call", "params": {"name": "view"}}\n',
            b"not json, mentioning \"tools/call\"\n",
        ):
            assert not lane.take(left), left
        assert lane.take(_line(9, "view", {"file_path": "a.txt"}))
        assert lane.take(b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}\n')
        assert not lane.take(b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 77}}\n')
        deadline = time.monotonic() + WAIT_S
        while not written.lines:  # call 2's answer (call 9 was cancelled before it ran)
            assert time.monotonic() < deadline, "call 2 was never answered"
            await asyncio.sleep(0.01)
        await lane.close()
        await server.close()
        assert [line["id"] for line in written.lines] == [2]
        assert written.lines[0]["result"]["content"][0]["text"] == "<file>\n     1|a\n</file>"

    asyncio.run(main())
