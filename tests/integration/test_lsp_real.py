"""End to end with real third-party servers: basedpyright beside ruff, and typescript-language-server.

basedpyright and ruff come with the dev extra; typescript-language-server (with TypeScript 5)
comes from npm into .lsp-servers/ via the Makefile. Missing servers fail these tests loudly,
except typescript-language-server where npm itself is absent (then the test says so and skips).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.lsp.servers import find_executable

from tests.integration.test_lsp import Driver

ROOT = Path(__file__).resolve().parents[2]
TS_SERVER = ROOT / ".lsp-servers" / "node_modules" / ".bin" / "typescript-language-server"


def test_basedpyright_and_ruff_are_installed_by_the_dev_extra() -> None:
    for name in ("basedpyright-langserver", "ruff"):
        assert find_executable(name) is not None, f"pip install -e '.[dev]' should provide {name}"


def be_patient(monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine may be loaded (basedpyright took 3.7 s for a 2-line file here): tests that
    check what the servers report make the waits hang guards, ended by the server's answer."""
    from agent_toolsmith.lsp import crossfile, manager

    for name, seconds in (("WAIT_CAP_S", 25.0), ("OTHER_FILES_WAIT_S", 12.0), ("IMPORTERS_BUDGET_S", 12.0),
                          ("VIEW_COLD_CAP_S", 25.0), ("VIEW_WAIT_CAP_S", 12.0)):  # fmt: skip
        monkeypatch.setattr(manager, name, seconds)
    monkeypatch.setattr(crossfile, "SETTLE_QUIET_S", 3.0)
    monkeypatch.setattr(crossfile, "REFERENCES_BUDGET_S", 10.0)


@pytest.fixture
def patient(monkeypatch: pytest.MonkeyPatch) -> None:
    be_patient(monkeypatch)


@pytest.fixture
def python_project(workspace: Path, patient: None) -> Iterator[Driver]:
    (workspace / "pyproject.toml").write_text("[project]\nname = 'demo'\nversion = '0'\n")
    (workspace / "shapes.py").write_text("def area(r: float) -> float:\n    return 3.14 * r * r\n")
    (workspace / "report.py").write_text("from shapes import area\n\n\nprint(area(2.0))\n")
    # Only basedpyright (the Python group's first) and ruff: the defaults, as a user has them.
    driver = Driver(workspace, Config(lsp_servers={"pylsp": {"disabled": True}, "pyright": {"disabled": True}}))
    yield driver
    driver.close()


def test_an_edit_that_breaks_an_open_importer_names_it(python_project: Driver) -> None:
    python_project.run("view", {"file_path": "report.py"})
    python_project.run("view", {"file_path": "shapes.py"})
    r = python_project.run("edit", {"file_path": "shapes.py", "old_string": "def area(", "new_string": "def surface("})
    assert "<project_diagnostics>" in r.content and "Error: report.py:1:" in r.content, r.content
    assert '"area" is unknown import symbol' in r.content


def test_an_importer_nobody_opened_is_found_and_named(python_project: Driver) -> None:
    python_project.run("view", {"file_path": "shapes.py"})  # report.py is never viewed
    r = python_project.run("edit", {"file_path": "shapes.py", "old_string": "def area(", "new_string": "def surface("})
    assert "Error: report.py:1:" in r.content, r.content


def test_basedpyright_and_ruff_together(python_project: Driver) -> None:
    (python_project.workspace / "both.py").write_text("import os\n\nprint(undefined_name)\n")
    r = python_project.run("lsp", {"file_path": "both.py"})
    assert "[basedpyright]" in r.content and "undefined_name" in r.content  # the type checker's error
    assert "[Ruff][F401]" in r.content  # the linter's unused import, merged into the same report
    definition = python_project.run(
        "lsp", {"file_path": "report.py", "operation": "definition", "line": 4, "character": 7}
    )  # ruff has no definition support: the request goes to basedpyright
    assert definition.content == "shapes.py:1:5: def area(r: float) -> float:"


@pytest.fixture
def ts_project(workspace: Path, patient: None) -> Iterator[Driver]:
    if not TS_SERVER.exists():
        if shutil.which("npm") is None:
            pytest.skip("npm is not installed, so typescript-language-server cannot be (make test installs it)")
        pytest.fail(f"{TS_SERVER} is missing: `make test` installs it with npm")
    (workspace / "tsconfig.json").write_text('{"compilerOptions": {"strict": true}}\n')
    (workspace / "a.ts").write_text("export function add(a: number, b: number): number {\n  return a + b;\n}\n")
    driver = Driver(workspace, Config(lsp_servers={"typescript": {"command": [str(TS_SERVER), "--stdio"]}}))
    yield driver
    driver.close()


def test_typescript_clean_edit_of_a_clean_file_is_confirmed_clean(ts_project: Driver) -> None:
    ts_project.run("view", {"file_path": "a.ts"})
    r = ts_project.run("edit", {"file_path": "a.ts", "old_string": "return a + b;", "new_string": "return b + a;"})
    # typescript-language-server says nothing when a clean file stays clean; tsserver's own answer
    # (typescript.tsserverRequest) confirms it instead.
    assert "unconfirmed" not in r.content and "Error:" not in r.content, r.content
    broken = ts_project.run("edit", {"file_path": "a.ts", "old_string": "return b + a;", "new_string": "return b + c;"})
    assert "Error: a.ts:2:14" in broken.content and "Cannot find name 'c'" in broken.content
