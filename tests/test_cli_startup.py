"""The CLI's one-shot view runs without an event loop (internal/event_loop.py): it never imports
asyncio (and ssl with it) nor the heavy dependencies, and answers exactly as ``Session.run``
under asyncio does. Real subprocesses from the repository root, as in test_cli.py."""

from __future__ import annotations

import ast
import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.session import Session

ROOT = Path(__file__).resolve().parents[1]
#: What a view must not load: an event loop, the dependencies of other tools, and logging (which
#: only a record needs: internal/logs.py).
HEAVY = (
    "asyncio", "ssl", "httpx", "pygls", "lsprotocol", "mcp", "tree_sitter", "nbformat", "pypdf", "bashlex", "logging"
)  # fmt: skip
#: Runs the CLI in this process, then prints which of HEAVY it loaded. argv[1] picks the entry
#: point: the repository's ``python -m cmd.tools``, or the installed package the ``toolsmith``
#: script calls.
PROBE = f"""
import runpy, sys
entry, args = sys.argv[1], sys.argv[2:]
try:
    if entry == "cmd.tools":
        sys.argv = ["tools", *args]
        runpy.run_module("cmd.tools", run_name="__main__")
    else:
        from agent_toolsmith.cli import main
        main(args)
except SystemExit:
    pass
print("LOADED", sorted(name for name in {HEAVY!r} if name in sys.modules))
"""
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000")


def loaded_by(entry: str, *args: str, env: dict[str, str]) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", PROBE, entry, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, env={**os.environ, **env})  # fmt: skip
    assert "LOADED" in proc.stdout, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    loaded: list[str] = ast.literal_eval(proc.stdout.rsplit("LOADED", 1)[1].strip())
    return loaded


@pytest.fixture
def state_env(tmp_path: Path) -> dict[str, str]:
    return {"TOOLSMITH_STATE_DIR": str(tmp_path / "state"), "TOOLSMITH_SESSION_HOST": "0"}


@pytest.mark.parametrize("entry", ["cmd.tools", "agent_toolsmith.cli"])
def test_a_view_loads_no_event_loop_and_no_heavy_dependency(
    entry: str, workspace: Path, state_env: dict[str, str]
) -> None:
    (workspace / "a.txt").write_text("x\n")
    (workspace / "a.png").write_bytes(PNG)
    (workspace / "a.ipynb").write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n')
    ws = ["--cwd", str(workspace)]
    views = [
        [*ws, "view", '{"file_path": "a.txt"}'],
        [*ws, "--json", "view", '{"file_path": "a.png"}'],
        [*ws, "view", '{"file_path": "a.ipynb"}'],
        [*ws, "view", '{"file_path": "nope.txt"}'],  # an error, with similar names
        [*ws, "view", '{"file_path": 5}'],  # invalid parameters
        [*ws, "--session", "s", "--no-lsp", "view", '{"file_path": "a.txt"}'],  # state saved, in-process
        [*ws, "--audit-log", str(workspace / "audit.jsonl"), "view", '{"file_path": "a.txt"}'],
    ]
    for args in views:
        assert loaded_by(entry, *args, env=state_env) == [], args
    audited = [json.loads(line) for line in (workspace / "audit.jsonl").read_text().splitlines()]
    assert [record["tool"] for record in audited] == ["view"]  # written by the close, without a loop
    # The probe sees an event loop where there is one: a shell call needs asyncio.
    assert "asyncio" in loaded_by(entry, *ws, "bash", '{"command": "true"}', env=state_env)


def test_a_view_through_the_session_host_loads_no_event_loop_on_the_cli_side(
    workspace: Path, state_env: dict[str, str]
) -> None:
    """The host runs the call; the CLI only talks to its socket (nor does it load the tool layer)."""
    (workspace / "a.txt").write_text("x\n")
    env = {**state_env, "TOOLSMITH_SESSION_HOST": "1"}
    ws = ["--cwd", str(workspace), "--session", "hosted"]
    probe = PROBE.replace(f"{HEAVY!r}", repr((*HEAVY, "agent_toolsmith.llm.tools.contract")))
    try:
        for _ in range(2):  # the first call starts the host, the second finds it running
            proc = subprocess.run([sys.executable, "-c", probe, "cmd.tools", *ws, "view", '{"file_path": "a.txt"}'],
                                  cwd=ROOT, capture_output=True, text=True, timeout=60,
                                  env={**os.environ, **env})  # fmt: skip
            assert "     1|x" in proc.stdout and proc.stdout.rstrip().endswith("LOADED []"), proc.stdout + proc.stderr
    finally:
        ended = subprocess.run([sys.executable, "-m", "cmd.tools", *ws, "--end"], cwd=ROOT, capture_output=True,
                               text=True, timeout=60, env={**os.environ, **env})  # fmt: skip
    assert "host stopped" in ended.stdout, ended.stdout + ended.stderr


def envelope_of_cli(workspace: Path, params: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "cmd.tools", "--cwd", str(workspace), "--json", "view", json.dumps(params)],
        cwd=ROOT, capture_output=True, text=True, timeout=60, env={**os.environ, **env},
    )  # fmt: skip
    envelope: dict[str, Any] = json.loads(proc.stdout)
    envelope["metadata"].pop("duration_ms")
    return envelope


def envelope_of_session(workspace: Path, params: dict[str, Any]) -> dict[str, Any]:
    """The same call through Session.run under asyncio, configured as the CLI's one-shot call is."""

    async def run() -> dict[str, Any]:
        config = Config.load(workspace, lsp_on_view=False, lsp_enabled=False)
        async with Session(workspace, config=config) as session:
            return (await session.run("view", params)).to_json()

    envelope = asyncio.run(run())
    envelope["metadata"].pop("duration_ms")
    return envelope


def test_a_view_without_a_loop_answers_as_session_run_does(
    workspace: Path, tmp_path: Path, state_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in state_env.items():
        monkeypatch.setenv(name, value)
    (workspace / "a.txt").write_text("".join(f"line {n}\n" for n in range(1, 3001)))
    (workspace / "b.txt").write_bytes(b"caf\xe9\r\n")  # not UTF-8, CRLF
    (workspace / "a.png").write_bytes(PNG)
    (workspace / "sub").mkdir()
    outside = tmp_path / "outside.txt"  # read with the permission the (allow-all) asker gives
    outside.write_text("far\n")
    calls: list[dict[str, Any]] = [
        {"file_path": "a.txt"},
        {"file_path": "a.txt", "offset": 2990, "limit": 5},
        {"file_path": "a.txt", "offset": 5000},  # beyond the end
        {"file_path": "b.txt"},
        {"file_path": "a.png"},
        {"file_path": "sub"},
        {"file_path": "a.txtt"},  # not found, with a similar name
        {"file_path": "a.txt", "pages": "1"},  # pages on a text file
        {"file_path": str(outside)},
        {"file_path": "a.txt", "limit": 0},  # invalid parameters
    ]
    for params in calls:
        assert envelope_of_cli(workspace, params, state_env) == envelope_of_session(workspace, params), params


def test_a_session_view_without_a_loop_keeps_the_read_for_a_later_edit(
    workspace: Path, state_env: dict[str, str]
) -> None:
    (workspace / "f.txt").write_text("one\n")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "cmd.tools", "--cwd", str(workspace), "--no-lsp", *args],
                              cwd=ROOT, capture_output=True, text=True, timeout=60,
                              env={**os.environ, **state_env})  # fmt: skip

    write = '{"file_path": "f.txt", "content": "two\\n"}'
    refused = cli("--session", "s", "write", write)
    assert refused.returncode == 1 and "You must read the file" in refused.stdout
    assert cli("--session", "s", "view", '{"file_path": "f.txt"}').returncode == 0
    wrote = cli("--session", "s", "write", write)
    assert wrote.returncode == 0, wrote.stdout + wrote.stderr
    assert (workspace / "f.txt").read_text() == "two\n"
