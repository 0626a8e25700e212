"""LSP, round two: broken servers cost once, clean stays clean, several servers per file, columns,
wording, the one-shot CLI — against the marker server playing each real server's quirks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.lsp.client import LspClient
from agent_toolsmith.lsp.documents import CLEAN_QUIET_S
from agent_toolsmith.lsp.manager import WAIT_CAP_S, LspManager
from agent_toolsmith.lsp.servers import configured_servers

from tests.helpers import processes_with, user_config
from tests.integration.test_lsp import MARKER_SERVER, Driver

ROOT = Path(__file__).resolve().parents[2]


def marker(name: str = "marker", extensions: tuple[str, ...] = (".mark",), **env: str) -> dict[str, object]:
    command = [sys.executable, str(MARKER_SERVER)]
    if env:
        command = ["/usr/bin/env", *(f"{k}={v}" for k, v in env.items()), *command]
    return {"command": command, "extensions": list(extensions)}


def driver(workspace: Path, servers: dict[str, dict[str, object]]) -> Driver:
    return Driver(workspace, Config(lsp_servers=servers))


@pytest.fixture
def quiet_marker(workspace: Path) -> Iterator[Driver]:
    d = driver(workspace, {"tsish": marker(NO_EMPTY_REPUBLISH="1")})
    yield d
    d.close()


def test_clean_stays_clean_without_waiting_out_the_cap(quiet_marker: Driver) -> None:
    f = quiet_marker.workspace / "a.mark"
    f.write_text("one\n")
    quiet_marker.run("view", {"file_path": "a.mark"})
    started = time.monotonic()
    r = quiet_marker.run("edit", {"file_path": "a.mark", "old_string": "one", "new_string": "two"})
    elapsed = time.monotonic() - started
    # The server said nothing: the wait ends after a short quiet, not the cap, and the result says
    # honestly that silence is not a confirmation.
    assert "Error:" not in r.content
    assert "(Diagnostics: unconfirmed: tsish reported no errors for a.mark after the change" in r.content
    assert elapsed < CLEAN_QUIET_S + 1.5 < WAIT_CAP_S
    broken = quiet_marker.run("edit", {"file_path": "a.mark", "old_string": "two", "new_string": "ERROR: bad"})
    assert "Error: a.mark:1:1 [marker][M1] bad" in broken.content
    fixed = quiet_marker.run("edit", {"file_path": "a.mark", "old_string": "ERROR: bad", "new_string": "fine"})
    assert "Error:" not in fixed.content


def test_an_edit_that_breaks_another_open_file_names_it(workspace: Path) -> None:
    d = driver(workspace, {"marker": marker()})
    try:
        (workspace / "other.mark").write_text("fine\n")
        (workspace / "e.mark").write_text("start\n")
        d.run("view", {"file_path": "other.mark"})
        d.run("view", {"file_path": "e.mark"})
        r = d.run("edit", {"file_path": "e.mark", "old_string": "start", "new_string": "TOUCH other.mark"})
        assert "<project_diagnostics>\nError: other.mark:1:1 [marker][X1] broken by e.mark" in r.content
        assert "errors in 1 other file(s): 1" in r.content
    finally:
        d.close()


def test_two_servers_merge_diagnostics_and_route_navigation(workspace: Path) -> None:
    # The diagnostics-only server comes first, like ruff beside basedpyright.
    d = driver(workspace, {"lint": marker(NO_NAV="1"), "types": marker()})
    try:
        (workspace / "n.mark").write_text("def greet():\n    pass\n\ngreet()\nERROR: twice reported\n")
        r = d.run("lsp", {"file_path": "n.mark"})
        assert r.content.count("twice reported") == 1  # both servers report it: shown once
        definition = d.run("lsp", {"file_path": "n.mark", "operation": "definition", "line": 4, "character": 2})
        assert definition.content == "n.mark:1:5: def greet():"
    finally:
        d.close()
    only_lint = driver(workspace, {"lint": marker(NO_NAV="1")})
    try:
        r = only_lint.run("lsp", {"file_path": "n.mark", "operation": "hover", "line": 4, "character": 2})
        assert r.is_error and "no language server for this file supports hover (servers: lint)" in r.content
        assert "nknown request" not in r.content and "ethod not found" not in r.content
    finally:
        only_lint.close()


def test_utf16_columns_become_the_character_columns_view_shows(workspace: Path) -> None:
    d = driver(workspace, {"wide": marker(ENCODING="utf-16")})
    try:
        (workspace / "u.mark").write_text("def 😀go():\n    pass\n😀😀 ERROR: after emoji\n😀go()\n")
        r = d.run("lsp", {"file_path": "u.mark"})
        assert "Error: u.mark:3:4 [marker][M1] after emoji" in r.content  # 3 characters before, 5 UTF-16 units
        # "go" after an emoji: character 2 of line 4 is UTF-16 unit 3 on the way out, and back.
        refs = d.run("lsp", {"file_path": "u.mark", "operation": "references", "line": 4, "character": 2})
        assert refs.content.splitlines() == ["u.mark:1:6: def 😀go():", "u.mark:4:2: 😀go()"]
    finally:
        d.close()


def test_wording_and_multiline_messages(workspace: Path) -> None:
    d = driver(workspace, {"marker": marker()})
    try:
        (workspace / "w.mark").write_text("ERROR: first line\\nsecond line\nWARN: careful\n")
        viewed = d.run("view", {"file_path": "w.mark"})
        assert "Errors in w.mark: 1" in viewed.content and "changed file" not in viewed.content
        assert "Error: w.mark:1:1 [marker][M1] first line\n    second line" in viewed.content
        asked = d.run("lsp", {"file_path": "w.mark"})
        assert "w.mark: 1 errors, 1 warnings, 0 information/hints" in asked.content
        edited = d.run("edit", {"file_path": "w.mark", "old_string": "careful", "new_string": "still careful"})
        assert "Errors in the changed file(s): 1" in edited.content
    finally:
        d.close()


def test_workspace_symbols_list_the_project_first(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "lib" / "lib.mark"
    outside.parent.mkdir()
    outside.write_text("def helper():\n    pass\n")
    (workspace / "mine.mark").write_text("def helper():\n    pass\n")
    d = driver(workspace, {"marker": marker()})
    try:
        d.run("view", {"file_path": str(outside)})  # opened first: the server lists it first
        d.run("view", {"file_path": "mine.mark"})
        r = d.run("lsp", {"file_path": "mine.mark", "operation": "workspace_symbol", "query": "helper"})
        lines = r.content.splitlines()
        assert lines[0] == "helper (Function) mine.mark:1" and str(outside) in lines[1]
    finally:
        d.close()


def test_pygls_notices_never_reach_stderr(workspace: Path) -> None:
    script = (
        "import asyncio, sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from tests.integration.test_lsp_robust import marker\n"
        "from agent_toolsmith.config import Config\n"
        "from agent_toolsmith.session import Session\n"
        "async def main():\n"
        f"    s = Session({str(workspace)!r}, config=Config(lsp_servers={{'marker': marker()}}))\n"
        "    r = await s.run('write', {'file_path': 'x.mark', 'content': 'ERROR: e\\n'})\n"
        "    print('Error: x.mark' in r.content)\n"
        "    await s.close()\n"
        "asyncio.run(main())\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.stdout.strip() == "True", proc.stderr
    assert proc.stderr == ""  # no "Ignoring notification for unknown method", no traceback


# --- broken servers ----------------------------------------------------------------------------


def _cli(workspace: Path, *args: str, state: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    """A ``--session`` CLI call run in the CLI process itself (the session host's fallback path),
    where a server's health is carried between calls in the session's state file. Through the
    host, the session and its servers simply stay alive (tests/test_session_host.py)."""
    started = time.monotonic()
    env = {**os.environ, "TOOLSMITH_STATE_DIR": str(state), "TOOLSMITH_SESSION_HOST": "0"}
    proc = subprocess.run(
        [sys.executable, "-m", "cmd.tools", "--cwd", str(workspace), "--session", "s", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    return proc, time.monotonic() - started


def test_a_hung_server_costs_one_bounded_start_then_nothing(workspace: Path, tmp_path: Path) -> None:
    token = f"hung-{uuid.uuid4().hex}"
    config = user_config()  # a server's command comes from the user's config, never the workspace's
    hang = f"import sys, time; sys.argv.append({token!r}); time.sleep(10**6)"
    config.write_text(f"[lsp.servers.hang]\ncommand = [{sys.executable!r}, '-c', {hang!r}, {token!r}]\n"
                      "extensions = ['.hang']\n")  # fmt: skip
    (workspace / "a.hang").write_text("one\n")
    state = tmp_path / "state"
    _cli(workspace, "view", '{"file_path": "a.hang"}', state=state)
    first, first_s = _cli(workspace, "edit", '{"file_path": "a.hang", "old_string": "one", "new_string": "two"}',
                          state=state)  # fmt: skip
    assert first.returncode == 0, first.stdout + first.stderr
    assert "(Diagnostics: unconfirmed: hang is still starting" in first.stdout
    assert first_s <= 12
    later, later_s = _cli(workspace, "edit", '{"file_path": "a.hang", "old_string": "two", "new_string": "three"}',
                          state=state)  # fmt: skip
    assert later.returncode == 0 and "hang did not start" in later.stdout and "next try in" in later.stdout
    assert later_s <= 4
    assert (workspace / "a.hang").read_text() == "three\n"
    assert processes_with(token.encode()) == []  # killed at once, nothing left behind


def test_a_server_that_exits_at_once_is_not_retried_every_call(workspace: Path) -> None:
    d = Driver(workspace, Config(lsp_servers={"dead": {"command": ["/bin/false"], "extensions": [".dead"]}}))
    try:
        first = d.run("write", {"file_path": "a.dead", "content": "x\n"})
        assert "(Diagnostics unavailable: dead did not start: exited with code 1" in first.content
        second = d.run("write", {"file_path": "b.dead", "content": "y\n"})
        assert "dead did not start" in second.content and "next try in" in second.content
        manager = d.session.ctx.lsp
        assert isinstance(manager, LspManager)
        assert [h.failures for k, h in manager.health.items() if k.startswith("dead@")] == [1]
    finally:
        d.close()


def test_a_stopped_server_is_killed_and_skipped(workspace: Path) -> None:
    d = driver(workspace, {"marker": marker()})
    try:
        (workspace / "s.mark").write_text("one\n")
        d.run("view", {"file_path": "s.mark"})
        manager = d.session.ctx.lsp
        assert isinstance(manager, LspManager)
        (client,) = manager.clients.values()
        assert client._process is not None
        pid = client._process.pid
        os.kill(pid, signal.SIGSTOP)
        first = d.run("edit", {"file_path": "s.mark", "old_string": "one", "new_string": "two"})
        assert "marker is stopped (not running) and was killed" in first.content
        started = time.monotonic()
        later = d.run("edit", {"file_path": "s.mark", "old_string": "two", "new_string": "three"})
        assert "next try in" in later.content and time.monotonic() - started < 2
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    finally:
        d.close()


def test_the_one_shot_cli_view_starts_no_server_but_edits_report(workspace: Path, tmp_path: Path) -> None:
    config = user_config()
    spec = marker()
    config.write_text(f"[lsp.servers.marker]\ncommand = {json.dumps(spec['command'])}\nextensions = ['.mark']\n")
    (workspace / "c.mark").write_text("ERROR: present\n")
    state = tmp_path / "state"
    viewed, _ = _cli(workspace, "view", '{"file_path": "c.mark"}', state=state)
    assert viewed.returncode == 0 and "<file_diagnostics>" not in viewed.stdout
    assert not (state / "lsp" / "marker.log").exists()  # no server was started for a view
    edited, _ = _cli(workspace, "edit", '{"file_path": "c.mark", "old_string": "present", "new_string": "still"}',
                     state=state)  # fmt: skip
    assert "Error: c.mark:1:1 [marker][M1] still" in edited.stdout


def test_only_cross_file_servers_with_other_files_are_waited_on_for_them(tmp_path: Path) -> None:
    raw = {"mine": {"command": ["mine"], "extensions": [".x"], "per_file": True}, "ruff": {"per_file": False}}
    servers = {config.name: config for config in configured_servers(raw)}
    assert servers["mine"].per_file and servers["pylsp"].per_file and not servers["ruff"].per_file
    checker, linter = (LspClient(servers[name], tmp_path, tmp_path) for name in ("basedpyright", "pylsp"))
    changed = {"file:///w/a.py"}
    for client in (checker, linter):
        client.texts["file:///w/a.py"] = "import b\n"
    assert not checker.may_report_elsewhere(changed)  # nothing else open: nothing else can move
    for client in (checker, linter):
        client.texts["file:///w/b.py"] = "x = 1\n"
    assert checker.may_report_elsewhere(changed)
    assert not linter.may_report_elsewhere(changed)  # pyflakes and pycodestyle look at one file
