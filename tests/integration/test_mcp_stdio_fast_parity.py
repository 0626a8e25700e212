"""The stdio fast lane (internal/mcp_server/stdio_fast.py) against the SDK's own path, where the
two could part: requests the SDK refuses, cancels naming the id in another form, a duplicated id,
and calls still running when stdin closes. Each case is sent once as the lane takes it and once
with a progress token (which leaves it to the SDK); both answers must be the same."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_mcp_stdio import HELLO, ROOT, WAIT_S, RawServer, _readline
from tests.integration.test_mcp_stdio_fast import MODERN, without_timing

#: How long a cancelled call is given to (wrongly) answer before it counts as unanswered.
SILENCE_S = 3.0
TOKEN = {"progressToken": "p"}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path)) / "ws"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    return root


class AuditedServer(RawServer):
    """A RawServer that keeps an audit log: a cancelled call's line there says it has ended."""

    def __init__(self, workspace: Path, state: Path) -> None:
        self.audit = state.parent / "audit.jsonl"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cmd.mcp", "--cwd", str(workspace), "--no-lsp", "--audit-log", str(self.audit)],
            cwd=ROOT, env={**os.environ, "TOOLSMITH_STATE_DIR": str(state)},
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self.next_id = 1

    def wait_aborted(self, file_path: str) -> None:
        """Until the audit log has the write of ``file_path`` ended without running to its end."""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            lines = self.audit.read_text().splitlines() if self.audit.exists() else []
            for entry in map(json.loads, lines):
                if entry["params"].get("file_path") == file_path and entry["duration_ms"] is None:
                    return
            time.sleep(0.02)
        raise TimeoutError(f"the write of {file_path} was not aborted in {WAIT_S} s")


@pytest.fixture
def raw(workspace: Path, tmp_path: Path) -> Iterator[AuditedServer]:
    server = AuditedServer(workspace, tmp_path / "state")
    yield server
    if server.process.poll() is None:
        server.process.kill()
        server.process.wait(WAIT_S)


def _send_call(raw: RawServer, request_id: int | str, params: dict[str, Any], **meta: Any) -> None:
    params = {**params, "_meta": {**params.get("_meta", MODERN), **meta}}
    raw.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})


def _answer_of(raw: RawServer, *request_ids: int | str | None) -> dict[str, Any]:
    """The next answer to one of ``request_ids`` (None: a parse error's)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        answer: dict[str, Any] = json.loads(_readline(raw.process, max(deadline - time.monotonic(), 0.05)))
        if answer.get("id") in request_ids:
            return answer


def _unanswered(raw: RawServer, request_id: int | str) -> bool:
    """No answer for ``request_id`` within SILENCE_S (a later call's answer ends the wait)."""
    probe = f"probe-{request_id}"
    time.sleep(SILENCE_S)  # the cancelled call's answer, if wrongly sent, comes before the probe's
    _send_call(raw, probe, {"name": "view", "arguments": {"file_path": "a.txt"}})
    while True:
        answer = json.loads(_readline(raw.process, WAIT_S))
        if answer.get("id") == request_id:
            return False
        if answer.get("id") == probe:
            return True


def _first_call(raw: RawServer) -> None:
    _send_call(raw, 0, {"name": "view", "arguments": {"file_path": "a.txt"}})  # the SDK's: it makes the session
    assert "result" in _answer_of(raw, 0)


def _round_trip(raw: RawServer, probe: str) -> None:
    """A view through the SDK answered: every line sent before it has been read and dispatched,
    and the calls they made have started."""
    _send_call(raw, probe, {"name": "view", "arguments": {"file_path": "a.txt"}}, **TOKEN)
    assert "result" in _answer_of(raw, probe)


def _wire(answer: dict[str, Any]) -> dict[str, Any]:
    copy = {key: value for key, value in answer.items() if key != "id"}
    if "result" in copy:
        copy["result"] = without_timing(copy["result"])
    return copy


@pytest.mark.parametrize(
    "line",
    [
        # A lone surrogate escape: not JSON to the SDK's parser (-32700).
        '{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":{"name":"view",'
        '"arguments":{"file_path":"a\\udcff.txt"},"_meta":META}}',
        # A 2026-07-28 envelope without its client capabilities (-32602).
        '{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":{"name":"view",'
        '"arguments":{"file_path":"a.txt"},"_meta":VERSION_ONLY}}',
        # Input responses of the wrong shape (-32602).
        '{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":{"name":"view",'
        '"arguments":{"file_path":"a.txt"},"inputResponses":{"x":1},"_meta":META}}',
        # Client info that is not an Implementation (-32602).
        '{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":{"name":"view",'
        '"arguments":{"file_path":"a.txt"},"_meta":BAD_INFO}}',
    ],
    ids=["lone-surrogate", "no-capabilities", "bad-input-responses", "bad-client-info"],
)
def test_a_request_the_sdk_refuses_is_refused_alike(raw: RawServer, line: str) -> None:
    _first_call(raw)
    answers = []
    for request_id, meta in ((1, MODERN), (2, {**MODERN, **TOKEN})):
        version_only = {key: meta[key] for key in meta if key != "io.modelcontextprotocol/clientCapabilities"}
        bad_info = {**meta, "io.modelcontextprotocol/clientInfo": 5}
        text = (
            line.replace("ID", str(request_id)).replace("VERSION_ONLY", json.dumps(version_only))
            .replace("BAD_INFO", json.dumps(bad_info)).replace("META", json.dumps(meta))
        )  # fmt: skip
        assert raw.process.stdin is not None
        raw.process.stdin.write(text.encode() + b"\n")
        raw.process.stdin.flush()
        answers.append(_answer_of(raw, request_id, None))
    lane, sdk = answers
    assert "error" in sdk, sdk
    assert _wire(lane) == _wire(sdk)
    assert raw.close() == 0


def test_a_modern_call_on_a_handshake_connection_is_refused_alike(raw: RawServer) -> None:
    """A connection opened with `initialize` serves the handshake era: the SDK refuses a request
    carrying the 2026-07-28 envelope on it (-32600), and so must the lane."""
    assert "result" in raw.request("initialize", HELLO)
    raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert "result" in raw.request("tools/call", {"name": "view", "arguments": {"file_path": "a.txt"}})
    answers = []
    for request_id, meta in ((101, {}), (102, TOKEN)):
        _send_call(raw, request_id, {"name": "view", "arguments": {"file_path": "a.txt"}}, **meta)
        answers.append(_answer_of(raw, request_id))
    lane, sdk = answers
    assert sdk["error"]["code"] == -32600, sdk
    assert _wire(lane) == _wire(sdk)
    assert raw.close() == 0


@contextlib.contextmanager
def _writers_held(directory: Path) -> Iterator[None]:
    """The directory's writer lock held (fsutil/anchored.py): a write into it waits, running."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _write(name: str) -> dict[str, Any]:
    return {"name": "write", "arguments": {"file_path": name, "content": "written\n"}}


@pytest.mark.parametrize(("request_id", "cancelled_id"), [(5, "5"), ("6", 6)])
def test_a_cancel_naming_the_id_in_another_form_cancels(
    raw: AuditedServer, workspace: Path, request_id: int | str, cancelled_id: int | str
) -> None:
    """The SDK correlates 5 and "5" as one id (coerce_request_id): a cancel naming either
    cancels the call, which is never answered and writes nothing."""
    _first_call(raw)
    with _writers_held(workspace):
        _send_call(raw, request_id, _write("b.txt"))
        _round_trip(raw, "started")
        raw.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": cancelled_id}})
        raw.wait_aborted("b.txt")  # the lock is let go once the call has ended (a call not cancelled never does)
    assert _unanswered(raw, request_id)
    assert not (workspace / "b.txt").exists()
    assert raw.close() == 0


def test_a_cancel_of_a_duplicated_id_cancels_the_newest_as_the_sdk_does(raw: AuditedServer, workspace: Path) -> None:
    """Two calls running under one id (the lane's, then one the SDK takes): the SDK's dispatcher
    keeps the newest under that id, so a cancel stops the newest and the first is answered."""
    _first_call(raw)
    with _writers_held(workspace):
        _send_call(raw, 7, _write("first.txt"))
        _send_call(raw, 7, _write("second.txt"), **TOKEN)
        _round_trip(raw, "started")
        raw.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}})
        raw.wait_aborted("second.txt")
    answer = _answer_of(raw, 7)
    assert not answer["result"]["isError"], answer
    assert _unanswered(raw, 7)
    assert (workspace / "first.txt").exists() and not (workspace / "second.txt").exists()
    assert raw.close() == 0


def test_calls_running_when_stdin_closes_are_answered_as_the_sdk_does(raw: RawServer, workspace: Path) -> None:
    """At the end of input the SDK cancels the calls still running and answers each with its
    "Connection closed" error; a call of the lane is answered the same, and nothing is written."""
    _first_call(raw)
    assert raw.process.stdin is not None and raw.process.stdout is not None
    with _writers_held(workspace):
        _send_call(raw, 8, _write("lane.txt"))
        _send_call(raw, 9, _write("sdk.txt"), **TOKEN)
        _round_trip(raw, "started")
        raw.process.stdin.close()
        rest = [json.loads(line) for line in raw.process.stdout.read().splitlines()]
        assert raw.process.wait(WAIT_S) == 0
    answers = {answer["id"]: _wire(answer) for answer in rest}
    assert answers[9] == {"jsonrpc": "2.0", "error": {"code": -32000, "message": "Connection closed"}}
    assert answers.get(8) == answers[9]
    assert not (workspace / "lane.txt").exists() and not (workspace / "sdk.txt").exists()
