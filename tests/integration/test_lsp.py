"""The LSP layer against the deterministic marker server (exact checks) and real pylsp (end to end)."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.lsp.servers import find_executable
from agent_toolsmith.session import Session

ROOT = Path(__file__).resolve().parents[2]
MARKER_SERVER = ROOT / "testdata" / "lsp" / "marker_server.py"


def marker_config(pull: bool = False) -> Config:
    command = [sys.executable, str(MARKER_SERVER)]
    if pull:
        command = ["/usr/bin/env", "PULL=1", *command]
    return Config(lsp_servers={"marker": {"command": command, "extensions": [".mark"]}})


class Driver:
    """One session and one event loop for a whole test (servers live in that loop)."""

    def __init__(self, workspace: Path, config: Config) -> None:
        self.loop = asyncio.new_event_loop()
        self.session = Session(workspace, config=config)
        self.workspace = workspace

    def run(self, tool: str, params: dict[str, Any]) -> Any:
        return self.loop.run_until_complete(asyncio.wait_for(self.session.run(tool, params), 60))

    def close(self) -> None:
        self.loop.run_until_complete(asyncio.wait_for(self.session.close(), 30))
        self.loop.close()


@pytest.fixture
def marker(workspace: Path) -> Iterator[Driver]:
    driver = Driver(workspace, marker_config())
    yield driver
    driver.close()


def test_edit_reports_errors_only_and_a_fix_clears_them(marker: Driver) -> None:
    f = marker.workspace / "a.mark"
    f.write_text("one\ntwo\n")
    assert "<file_diagnostics>" not in marker.run("view", {"file_path": "a.mark"}).content
    r = marker.run("edit", {"file_path": "a.mark", "old_string": "two", "new_string": "ERROR: bad thing\nWARN: meh"})
    assert "<file_diagnostics>\nError: a.mark:2:1 [marker][M1] bad thing\n</file_diagnostics>" in r.content
    assert "meh" not in r.content
    r = marker.run("edit", {"file_path": "a.mark", "old_string": "ERROR: bad thing", "new_string": "fine"})
    assert "diagnostics" not in r.content and "Error:" not in r.content


def test_cap_of_twenty_per_file(marker: Driver) -> None:
    r = marker.run("write", {"file_path": "b.mark", "content": "MANY_ERRORS 27\n"})
    errors = [line for line in r.content.splitlines() if line.startswith("Error: b.mark")]
    assert len(errors) == 20 and "... and 7 more" in r.content


def test_waits_for_fresh_diagnostics_not_stale_ones(marker: Driver) -> None:
    marker.run("write", {"file_path": "c.mark", "content": "ERROR: old\n"})
    started = time.monotonic()
    r = marker.run("write", {"file_path": "c.mark", "content": "DELAY_MS 400\nERROR: new\n"})
    assert time.monotonic() - started >= 0.4
    assert "new" in r.content and "old" not in r.content


def test_view_appends_errors_of_the_viewed_file(marker: Driver) -> None:
    (marker.workspace / "d.mark").write_text("ERROR: here\nINFO: not shown\n")
    r = marker.run("view", {"file_path": "d.mark"})
    assert "Error: d.mark:1:1 [marker][M1] here" in r.content and "not shown" not in r.content.split("</file>")[1]


def test_write_reports_other_files_that_gained_errors(marker: Driver) -> None:
    (marker.workspace / "other.mark").write_text("fine\n")
    marker.run("view", {"file_path": "other.mark"})
    # The other file's errors arrive 100 ms after e.mark's own (final, versioned) publish.
    r = marker.run("write", {"file_path": "e.mark", "content": "TOUCH other.mark\nTOUCH_DELAY_MS 100\n"})
    assert "<project_diagnostics>\nError: other.mark:1:1 [marker][X1] broken by e.mark" in r.content
    r = marker.run("write", {"file_path": "e.mark", "content": "TOUCH other.mark\nTOUCH_DELAY_MS 100\nplus\n"})
    assert "<project_diagnostics>" not in r.content  # no new errors there: nothing stale repeated


def test_crashed_server_is_restarted_on_next_use(marker: Driver) -> None:
    r = marker.run("write", {"file_path": "f.mark", "content": "CRASH\n"})
    assert "(Diagnostics unavailable: marker exited (it is restarted on the next call).)" in r.content
    r = marker.run("write", {"file_path": "g.mark", "content": "ERROR: after restart\n"})
    assert "Error: g.mark:1:1 [marker][M1] after restart" in r.content


def test_pull_diagnostics(workspace: Path) -> None:
    driver = Driver(workspace, marker_config(pull=True))
    try:
        r = driver.run("write", {"file_path": "p.mark", "content": "ERROR: pulled\n"})
        assert "Error: p.mark:1:1 [marker][M1] pulled" in r.content
    finally:
        driver.close()


def test_lsp_tool_operations(marker: Driver) -> None:
    src = "def greet():\n    pass\n\ngreet()\nWARN: careful\nHINT: idea\n"
    (marker.workspace / "n.mark").write_text(src)
    diags = marker.run("lsp", {"file_path": "n.mark"})
    assert "Warn: n.mark:5:1 [marker][M1] careful" in diags.content
    assert "Hint: n.mark:6:1 [marker][M1] idea" in diags.content
    definition = marker.run("lsp", {"file_path": "n.mark", "operation": "definition", "line": 4, "character": 2})
    assert definition.content == "n.mark:1:5: def greet():"
    refs = marker.run("lsp", {"file_path": "n.mark", "operation": "references", "line": 1, "character": 6})
    assert refs.content.splitlines() == ["n.mark:1:5: def greet():", "n.mark:4:1: greet()"]
    hover = marker.run("lsp", {"file_path": "n.mark", "operation": "hover", "line": 4, "character": 1})
    assert hover.content == "word: greet"
    symbols = marker.run("lsp", {"file_path": "n.mark", "operation": "document_symbol"})
    assert symbols.content == "greet (Function) line 1"
    found = marker.run("lsp", {"file_path": "n.mark", "operation": "workspace_symbol", "query": "greet"})
    assert "greet (Function) n.mark:1" in found.content
    missing_pos = marker.run("lsp", {"file_path": "n.mark", "operation": "hover"})
    assert missing_pos.is_error and "needs line and character" in missing_pos.content


def test_lsp_tool_checks_the_file_before_the_server(marker: Driver) -> None:
    r = marker.run("lsp", {"file_path": "nope.xyz"})
    assert r.is_error and r.content.startswith("File not found")
    (marker.workspace / "x.xyz").write_text("x")
    r = marker.run("lsp", {"file_path": "x.xyz"})
    assert r.is_error and "No LSP server is configured for *.xyz files" in r.content


# --- a real third-party server ----------------------------------------------------------------


def test_pylsp_is_installed_by_the_dev_extra() -> None:
    """CI must have it: fail loudly instead of skipping the end-to-end tests."""
    assert find_executable("pylsp") is not None, "pip install -e '.[dev]' should provide pylsp"


@pytest.fixture
def pylsp(workspace: Path) -> Iterator[Driver]:
    config = Config(lsp_servers={name: {"disabled": True} for name in ("basedpyright", "pyright", "ruff")})
    driver = Driver(workspace, config)
    yield driver
    driver.close()


def test_pylsp_end_to_end_undefined_name_then_fix(pylsp: Driver) -> None:
    (pylsp.workspace / "mod.py").write_text("import os\n\n\ndef area(r):\n    return 3.14 * r * r\n")
    pylsp.run("view", {"file_path": "mod.py"})
    broken = pylsp.run("edit", {"file_path": "mod.py", "old_string": "3.14 * r * r", "new_string": "pi * r * r"})
    errors = [line for line in broken.content.splitlines() if line.startswith("Error:")]
    assert errors == ["Error: mod.py:5:12 [pyflakes] undefined name 'pi'"]
    assert "imported but unused" not in broken.content  # a warning: not shown after edits
    fixed = pylsp.run("edit", {"file_path": "mod.py", "old_string": "pi * r * r", "new_string": "os.sep and r"})
    assert "Error:" not in fixed.content
    warnings = pylsp.run("lsp", {"file_path": "mod.py"})
    assert "Error:" not in warnings.content


def test_pylsp_definition_and_references(pylsp: Driver) -> None:
    (pylsp.workspace / "lib.py").write_text("def helper(x):\n    return x\n\n\nvalue = helper(1) + helper(2)\n")
    definition = pylsp.run("lsp", {"file_path": "lib.py", "operation": "definition", "line": 5, "character": 10})
    assert definition.content == "lib.py:1:5: def helper(x):"
    refs = pylsp.run("lsp", {"file_path": "lib.py", "operation": "references", "line": 1, "character": 6})
    assert len(refs.content.splitlines()) == 3


def test_a_server_that_cannot_start_never_fails_an_edit(workspace: Path) -> None:
    broken = Config(lsp_servers={"broken": {"command": ["/bin/false"], "extensions": [".mark"]}})
    driver = Driver(workspace, broken)
    try:
        r = driver.run("write", {"file_path": "z.mark", "content": "ERROR: whatever\n"})
        assert not r.is_error and "File successfully created" in r.content
        assert (workspace / "z.mark").read_text() == "ERROR: whatever\n"
    finally:
        driver.close()
