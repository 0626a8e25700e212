"""The lsp tool's refactoring operations against real servers: rename across files (one commit,
one permission ask), implementation, call hierarchy, and symbols addressed by name.

basedpyright comes with the dev extra; typescript-language-server from npm into .lsp-servers/
(see test_lsp_real.py). The waits are hang guards: a loaded machine makes basedpyright slow.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.permission import Decision, PermissionRequest
from agent_toolsmith.session import Session

from tests.integration.test_lsp_real import be_patient

ROOT = Path(__file__).resolve().parents[2]
TS_SERVER = ROOT / ".lsp-servers" / "node_modules" / ".bin" / "typescript-language-server"

A_PY = """class Greeter:
    def greet(self, name: str) -> str:
        return "hello " + name


def shout(text: str) -> str:
    return text.upper()


def greet(name: str) -> str:
    return Greeter().greet(name)
"""
B_PY = """from a import greet, shout


def main() -> None:
    print(shout(greet("x")))
"""


class Driver:
    """One session and one event loop for a test, recording every permission ask."""

    def __init__(self, workspace: Path, config: Config) -> None:
        self.asks: list[PermissionRequest] = []
        self.deny_writes = False
        self.loop = asyncio.new_event_loop()
        self.session = Session(workspace, config=config, asker=self._ask)
        self.workspace = workspace

    async def _ask(self, request: PermissionRequest) -> Decision:
        self.asks.append(request)
        return Decision.DENY if self.deny_writes and request.action == "write" else Decision.ALLOW_ONCE

    def run(self, tool: str, params: dict[str, Any]) -> Any:
        return self.loop.run_until_complete(asyncio.wait_for(self.session.run(tool, params), 120))

    def close(self) -> None:
        self.loop.run_until_complete(asyncio.wait_for(self.session.close(), 30))
        self.loop.close()


@pytest.fixture
def patient(monkeypatch: pytest.MonkeyPatch) -> None:
    """Starting and answering become hang guards (the tests check answers, not speed)."""
    from agent_toolsmith.lsp import client, manager

    be_patient(monkeypatch)
    monkeypatch.setattr(manager, "QUERY_START_S", 90.0)
    monkeypatch.setattr(client, "REQUEST_TIMEOUT_S", 60.0)


@pytest.fixture
def py(workspace: Path, patient: None) -> Iterator[Driver]:
    (workspace / "pyproject.toml").write_text("[project]\nname = 'demo'\nversion = '0'\n")
    (workspace / "a.py").write_text(A_PY)
    (workspace / "b.py").write_text(B_PY)
    config = Config(lsp_servers={name: {"disabled": True} for name in ("pylsp", "pyright", "ruff")})
    driver = Driver(workspace, config)
    yield driver
    driver.close()


def test_rename_changes_every_file_with_one_ask_and_a_diff_per_file(py: Driver) -> None:
    r = py.run("lsp", {"file_path": "a.py", "operation": "rename", "symbol": "shout", "new_name": "yell"})
    assert not r.is_error, r.content
    assert r.content.startswith("Renamed shout to yell: 3 edits in 2 files\n  a.py (1 edit)\n  b.py (2 edits)")
    assert (py.workspace / "a.py").read_text() == A_PY.replace("def shout", "def yell")
    assert (py.workspace / "b.py").read_text() == B_PY.replace("shout", "yell")
    writes = [a for a in py.asks if a.action == "write"]
    assert len(writes) == 1 and writes[0].tool == "lsp" and writes[0].target == "a.py, b.py"
    files = r.metadata["files"]
    assert [f["path"] for f in files] == ["a.py", "b.py"]
    assert "-def shout(text: str) -> str:\n+def yell(text: str) -> str:" in files[0]["diff"]
    assert "+from a import greet, yell" in files[1]["diff"] and files[1]["additions"] == 2
    # The files are recorded as read: an edit right after needs no view.
    edit = py.run("edit", {"file_path": "b.py", "old_string": 'greet("x")', "new_string": 'greet("y")'})
    assert not edit.is_error, edit.content


def test_rename_is_all_or_nothing_when_a_read_file_changed_since(py: Driver) -> None:
    py.run("view", {"file_path": "b.py"})
    changed = B_PY + "# saved by an editor\n"
    (py.workspace / "b.py").write_text(changed)
    r = py.run("lsp", {"file_path": "a.py", "operation": "rename", "line": 6, "character": 5, "new_name": "yell"})
    assert r.is_error and "modified since it was last read" in r.content, r.content
    assert (py.workspace / "a.py").read_text() == A_PY  # a.py (never viewed, fine alone) is untouched too
    assert (py.workspace / "b.py").read_text() == changed
    assert not [a for a in py.asks if a.action == "write"]


def test_rename_splices_exactly_after_astral_characters_in_a_crlf_file(py: Driver) -> None:
    crlf = 'from a import shout\r\n\r\nprint("😀é", shout("😀"), shout("x"))\r\n'.encode()
    (py.workspace / "c.py").write_bytes(crlf)
    r = py.run("lsp", {"file_path": "a.py", "operation": "rename", "symbol": "shout", "new_name": "yell"})
    assert not r.is_error, r.content
    assert (py.workspace / "c.py").read_bytes() == crlf.replace(b"shout", b"yell")


def test_rename_refusals_write_nothing(py: Driver) -> None:
    nothing = py.run("lsp", {"file_path": "a.py", "operation": "rename", "line": 5, "character": 1, "new_name": "x"})
    assert nothing.is_error and nothing.metadata["error"] == "rename_nothing", nothing.content
    both = py.run(
        "lsp",
        {"file_path": "a.py", "operation": "rename", "symbol": "shout", "line": 6, "character": 5, "new_name": "x"},
    )
    assert both.is_error and both.metadata["error"] == "position_and_symbol"
    unnamed = py.run("lsp", {"file_path": "a.py", "operation": "rename", "symbol": "shout"})
    assert unnamed.is_error and unnamed.metadata["error"] == "missing_new_name"
    assert (py.workspace / "a.py").read_text() == A_PY and (py.workspace / "b.py").read_text() == B_PY


def test_a_refused_ask_writes_nothing(py: Driver) -> None:
    py.deny_writes = True
    r = py.run("lsp", {"file_path": "a.py", "operation": "rename", "symbol": "shout", "new_name": "yell"})
    assert r.is_error and "Permission denied" in r.content, r.content
    assert [a.target for a in py.asks] == ["a.py, b.py"]
    assert (py.workspace / "a.py").read_text() == A_PY and (py.workspace / "b.py").read_text() == B_PY


def test_a_rename_computed_on_an_older_text_is_refused_then_redone(py: Driver) -> None:
    py.run("lsp", {"file_path": "a.py", "operation": "references", "symbol": "shout"})  # opens b.py, its importer
    shifted = "# a line added by another program\n" + B_PY
    (py.workspace / "b.py").write_text(shifted)  # the server still has the old text of b.py open
    params = {"file_path": "a.py", "operation": "rename", "symbol": "shout", "new_name": "yell"}
    stale = py.run("lsp", params)
    assert stale.is_error and stale.metadata["error"] == "rename_stale", stale.content
    assert (py.workspace / "b.py").read_text() == shifted and (py.workspace / "a.py").read_text() == A_PY
    again = py.run("lsp", params)
    assert not again.is_error, again.content
    assert (py.workspace / "b.py").read_text() == shifted.replace("shout", "yell")


def test_symbols_are_addressed_by_name_or_dotted_path(py: Driver) -> None:
    method = py.run("lsp", {"file_path": "a.py", "operation": "references", "symbol": "Greeter.greet"})
    assert method.content.splitlines() == [
        "a.py:2:9: def greet(self, name: str) -> str:",
        "a.py:11:22: return Greeter().greet(name)",
    ], method.content
    function = py.run("lsp", {"file_path": "a.py", "operation": "definition", "symbol": "greet"})
    assert function.content == "a.py:10:5: def greet(name: str) -> str:"  # the exact path wins over .greet
    missing = py.run("lsp", {"file_path": "a.py", "operation": "hover", "symbol": "nope"})
    assert missing.is_error and missing.metadata["error"] == "symbol_not_found"
    assert "Greeter.greet (Method) line 2" in missing.content


def test_call_hierarchy(py: Driver) -> None:
    incoming = py.run("lsp", {"file_path": "a.py", "operation": "incoming_calls", "symbol": "shout"})
    assert incoming.content == 'b.py:5:11: print(shout(greet("x")))', incoming.content
    outgoing = py.run("lsp", {"file_path": "b.py", "operation": "outgoing_calls", "symbol": "main"})
    lines = outgoing.content.splitlines()
    assert "a.py:6:5: def shout(text: str) -> str:" in lines and "a.py:10:5: def greet(name: str) -> str:" in lines


@pytest.fixture
def ts(workspace: Path, patient: None) -> Iterator[Driver]:
    if not TS_SERVER.exists():
        if shutil.which("npm") is None:
            pytest.skip("npm is not installed, so typescript-language-server cannot be (make test installs it)")
        pytest.fail(f"{TS_SERVER} is missing: `make test` installs it with npm")
    (workspace / "tsconfig.json").write_text('{"compilerOptions": {"strict": true}}\n')
    (workspace / "shape.ts").write_text(
        "export interface Shape {\n  area(): number;\n}\n\n"
        "export class Square implements Shape {\n  constructor(private side: number) {}\n"
        "  area(): number {\n    return this.side * this.side;\n  }\n}\n"
    )
    (workspace / "main.ts").write_text('import { Shape, Square } from "./shape";\n\nconst s: Shape = new Square(2);\n')
    driver = Driver(workspace, Config(lsp_servers={"typescript": {"command": [str(TS_SERVER), "--stdio"]}}))
    yield driver
    driver.close()


def test_typescript_implementation_and_rename(ts: Driver) -> None:
    ambiguous = ts.run("lsp", {"file_path": "shape.ts", "operation": "hover", "symbol": "area"})
    assert ambiguous.is_error and ambiguous.metadata["error"] == "ambiguous_symbol", ambiguous.content
    assert "Shape.area (Method) line 2" in ambiguous.content and "Square.area (Method) line 7" in ambiguous.content
    found = ts.run("lsp", {"file_path": "shape.ts", "operation": "implementation", "symbol": "Shape"})
    assert found.content == "shape.ts:5:14: export class Square implements Shape {", found.content
    r = ts.run("lsp", {"file_path": "shape.ts", "operation": "rename", "symbol": "Shape", "new_name": "Figure"})
    assert r.content.startswith("Renamed Shape to Figure: 4 edits in 2 files"), r.content
    assert "Shape" not in (ts.workspace / "main.ts").read_text() + (ts.workspace / "shape.ts").read_text()
    # Both files were synced before either was judged: the importer is not blamed for the old name.
    assert "Error:" not in r.content, r.content
