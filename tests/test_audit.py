"""The audit log: whole lines under concurrency, redaction, and never in the call's way."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from agent_toolsmith.audit import REDACTED, AuditLog
from agent_toolsmith.config import Config
from agent_toolsmith.session import Session

ROOT = Path(__file__).resolve().parents[1]


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_200_concurrent_calls_give_200_whole_lines(workspace: Path, tmp_path: Path) -> None:
    log_path = tmp_path / "audit" / "calls.jsonl"
    (workspace / "a.txt").write_text("hello\nthere\nworld\n")

    async def main() -> None:
        async with Session(workspace, config=Config(lsp_enabled=False, audit_log=log_path)) as session:
            calls = []
            for i in range(200):
                if i % 4 == 0:
                    calls.append(session.run("bash", {"command": f"echo call-{i}"}))
                elif i % 4 == 1:
                    calls.append(session.run("grep", {"pattern": "hello"}))
                else:
                    calls.append(session.run("view", {"file_path": "a.txt", "offset": i % 3}))
            responses = await asyncio.gather(*calls)
            assert not any(r.is_error for r in responses)

    asyncio.run(main())
    records = lines(log_path)
    assert len(records) == 200
    assert sorted(r["tool"] for r in records) == sorted(["bash"] * 50 + ["grep"] * 50 + ["view"] * 100)
    bash = [r for r in records if r["tool"] == "bash"]
    assert {r["exit_code"] for r in bash} == {0} and all(r["bytes_out"] > 0 for r in bash)
    assert {r["params"]["command"] for r in bash} == {f"echo call-{i}" for i in range(0, 200, 4)}  # type: ignore[index]
    first = records[0]
    assert set(first) == {
        "time", "session", "tool", "params", "is_error", "exit_code", "duration_ms", "bytes_in", "bytes_out",
        "truncated", "full_output_path",
    }  # fmt: skip
    assert str(first["time"]).endswith("Z") and isinstance(first["duration_ms"], float)
    assert oct(log_path.stat().st_mode & 0o777) == "0o600"


def test_secrets_are_redacted_at_any_depth_but_not_inside_free_text(tmp_path: Path) -> None:
    audit = AuditLog(tmp_path / "a.jsonl", redact_keys=["x-internal-pin"])
    params = {
        "url": "https://example.test",
        "headers": {"Authorization": "Bearer abc", "X-Api-Key": "k1", "Accept": "text/html"},
        "items": [{"client_secret": "s", "name": "n"}, {"GITHUB_TOKEN": "t"}],
        "x_internal_pin": "1234",
        "command": "curl -H 'Authorization: Bearer visible' x",
        "content": "x" * 5000,
    }
    redacted = audit.redact(params)
    assert redacted["headers"] == {"Authorization": REDACTED, "X-Api-Key": REDACTED, "Accept": "text/html"}
    assert redacted["items"] == [{"client_secret": REDACTED, "name": "n"}, {"GITHUB_TOKEN": REDACTED}]
    assert redacted["x_internal_pin"] == REDACTED  # a configured key, '-' read as '_'
    assert redacted["command"] == params["command"]  # free text: documented as not searched
    assert redacted["content"].endswith("…[5000 characters]") and len(redacted["content"]) < 2100


def test_a_stuck_sink_never_delays_a_result(workspace: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    fifo = tmp_path / "stuck.jsonl"
    os.mkfifo(fifo)  # opening it for writing blocks until someone reads: a disk that never answers
    session = Session(workspace, config=Config(lsp_enabled=False, audit_log=fifo))
    (workspace / "a.txt").write_text("x\n")
    try:
        for _ in range(3):
            assert not asyncio.run(asyncio.wait_for(session.run("view", {"file_path": "a.txt"}), 5)).is_error
        with caplog.at_level(logging.WARNING, logger="toolsmith"):
            assert session.audit is not None
            closing = threading.Thread(target=session.audit.close)
            closing.start()
            closing.join(10)
            assert not closing.is_alive()  # bounded, though the writer is still stuck
        assert "were not written" in caplog.text
    finally:
        with open(fifo, "rb") as reader:  # let the stuck writer go
            reader.read()


def test_a_failing_sink_is_logged_and_calls_succeed(
    workspace: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "adir").mkdir()

    async def main() -> None:
        async with Session(workspace, config=Config(lsp_enabled=False, audit_log=tmp_path / "adir")) as session:
            assert not (await session.run("bash", {"command": "true"})).is_error

    with caplog.at_level(logging.WARNING, logger="toolsmith"):
        asyncio.run(main())
    assert "cannot be written" in caplog.text


def test_the_cli_flag_and_the_config_file(workspace: Path, tmp_path: Path) -> None:
    flag_log = tmp_path / "flag.jsonl"
    env = {**os.environ, "TOOLSMITH_STATE_DIR": str(tmp_path / "state")}
    done = subprocess.run(
        [sys.executable, "-m", "cmd.tools", "--cwd", str(workspace), "--audit-log", str(flag_log),
         "bash", '{"command": "exit 3"}'],
        cwd=ROOT, capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (record,) = lines(flag_log)
    assert record["tool"] == "bash" and record["exit_code"] == 3 and record["is_error"] is False
    # The user's own config names the log (a workspace's may not: it could append to any file).
    user_config = Path(os.environ["XDG_CONFIG_HOME"]) / "toolsmith" / "config.toml"
    user_config.parent.mkdir(parents=True, exist_ok=True)
    user_config.write_text('[audit]\npath = "logs/audit.jsonl"\nredact_keys = ["pin"]\n')
    done = subprocess.run(
        [sys.executable, "-m", "cmd.tools", "--cwd", str(workspace), "ls", '{"path": ".", "pin": 1}'],
        cwd=ROOT, capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    (record,) = lines(workspace / "logs" / "audit.jsonl")
    assert record["tool"] == "ls" and record["is_error"] is True and record["params"] == {"path": ".", "pin": REDACTED}
