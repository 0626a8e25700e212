"""What a change broke, with the real servers, on a generated project shaped like the cases that
went wrong on Django and vue: a module with 25 old errors, a first edit that starts the servers
and breaks an importer (API, CLI --batch, CLI --session), a rename and its revert with an old
error the breakage hid, eight broken importers behind the five shown, a rename's own report, and
a TypeScript change whose importer breaks on the second change.

basedpyright comes with the dev extra and typescript-language-server from npm (the Makefile):
missing servers fail these tests, except where npm itself is absent.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_toolsmith.config import Config

from tests.integration.test_lsp import Driver
from tests.integration.test_lsp_real import TS_SERVER, be_patient

ROOT = Path(__file__).resolve().parents[2]
#: basedpyright alone (the Python group's first server): ruff would add its own lines.
ONLY_BASEDPYRIGHT = {name: {"disabled": True} for name in ("pylsp", "pyright", "ruff")}
OLD_ERRORS = 25
USERS = 8

TEXT_PY = """def capfirst(value: str) -> str:
    return value[:1].upper() + value[1:]


def greet(name: str) -> str:
    return "hello " + name
"""
QUERY_PY = (
    "def count(rows: list[int]) -> int:\n    return len(rows)\n\n\n"
    + "".join(f'old_{i}: int = "x"\n' for i in range(OLD_ERRORS))
    + "total = count([1, 2])\n"
)
FORMS_PY = """from pkg.text import capfirst


def label(name: str) -> str:
    return capfirst(name)


width: int = capfirst("x")
"""


BREAK_CAPFIRST = {"file_path": "pkg/text.py", "old_string": "def capfirst(", "new_string": "def upper_first("}
REVERT_CAPFIRST = {"file_path": "pkg/text.py", "old_string": "def upper_first(", "new_string": "def capfirst("}


def python_project(root: Path) -> None:
    (root / "pyproject.toml").write_text("[project]\nname = 'shaped'\nversion = '0'\n")
    package = root / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "text.py").write_text(TEXT_PY)
    (package / "query.py").write_text(QUERY_PY)
    (package / "forms.py").write_text(FORMS_PY)
    for i in range(USERS):
        (package / f"use{i}.py").write_text(f'from pkg.text import greet\n\nmessage{i} = greet("x")\n')


@pytest.fixture
def py(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Driver]:
    """The API, the way the CLI runs it: a view starts no server, so the first edit does."""
    be_patient(monkeypatch)
    python_project(workspace)
    driver = Driver(workspace, Config(lsp_servers=ONLY_BASEDPYRIGHT, lsp_on_view=False))
    yield driver
    driver.close()


def errors_of(content: str, path: str) -> list[str]:
    return [line for line in content.splitlines() if line.startswith(f"Error: {path}:")]


def test_a_new_error_among_25_old_ones_is_shown_first_and_the_fix_drops_it(py: Driver) -> None:
    py.run("view", {"file_path": "pkg/query.py"})
    added = "total = count([1, 2])\nfresh: str = count([3])\n"
    broken = py.run("edit", {"file_path": "pkg/query.py", "old_string": "total = count([1, 2])\n", "new_string": added})
    shown = errors_of(broken.content, "pkg/query.py")
    new_line = 4 + OLD_ERRORS + 2  # two defs lines, two blank, the old errors, total, then it
    assert shown[0].startswith(f"Error: pkg/query.py:{new_line}:"), broken.content
    assert len(shown) == 20 and f"... and {OLD_ERRORS + 1 - 20} more" in broken.content, broken.content
    asked = py.run("lsp", {"file_path": "pkg/query.py"})  # the same order for the lsp tool
    listed = [line for line in asked.content.splitlines() if line.startswith(("Error:", "Warn:", "Info:", "Hint:"))]
    assert listed[0].startswith(f"Error: pkg/query.py:{new_line}:"), asked.content
    fixed = py.run("edit", {"file_path": "pkg/query.py", "old_string": "fresh: str = count([3])\n", "new_string": ""})
    assert f"pkg/query.py:{new_line}:" not in fixed.content, fixed.content
    assert '"int" is not assignable to declared type "str"' not in fixed.content
    assert len(errors_of(fixed.content, "pkg/query.py")) == 20 and f"... and {OLD_ERRORS - 20} more" in fixed.content


def test_the_first_edit_starts_the_servers_and_names_the_importer_it_breaks(py: Driver) -> None:
    py.run("view", {"file_path": "pkg/text.py"})
    r = py.run("edit", BREAK_CAPFIRST)
    assert "<project_diagnostics>" in r.content and "Error: pkg/forms.py:1:" in r.content, r.content
    assert '"capfirst" is unknown import symbol' in r.content


def test_a_revert_is_not_blamed_for_the_old_error_the_breakage_hid(py: Driver) -> None:
    py.run("view", {"file_path": "pkg/text.py"})
    broken = py.run("edit", BREAK_CAPFIRST)
    assert "Error: pkg/forms.py:1:" in broken.content, broken.content
    # The import is broken, so capfirst("x") is Unknown: forms.py's old `width: int = …` error is
    # hidden now, and comes back with the revert. It was there in the untouched project.
    assert "pkg/forms.py:8:" not in broken.content
    reverted = py.run("edit", REVERT_CAPFIRST)
    assert "<project_diagnostics>" not in reverted.content and "forms.py" not in reverted.content, reverted.content
    seen = py.run("lsp", {"file_path": "pkg/forms.py"})  # it is there: the revert was simply not blamed
    assert "Error: pkg/forms.py:8:" in seen.content, seen.content
    again = py.run("edit", BREAK_CAPFIRST)
    assert '"capfirst" is unknown import symbol' in again.content, again.content  # broken again: reported again


def test_a_revert_is_not_blamed_even_when_the_first_picture_was_missed(
    py: Driver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the untouched project was never pictured (the first edit ran out of time for it), the
    server is shown it again — the changed files at their original texts — before anything is
    blamed. The importer itself was changed by the session and changed back first: back at its
    original text, its untouched picture measures it again. Another change stays, so the revert
    is not a return to the untouched project (where nothing would be new)."""
    from agent_toolsmith.lsp import manager

    py.run("view", {"file_path": "pkg/forms.py"})
    touched = {"file_path": "pkg/forms.py", "old_string": "def label(", "new_string": "def label_text("}
    py.run("edit", touched)
    py.run("edit", {**touched, "old_string": touched["new_string"], "new_string": touched["old_string"]})
    py.run("view", {"file_path": "pkg/query.py"})
    py.run("edit", {"file_path": "pkg/query.py", "old_string": "count([1, 2])", "new_string": "count([1, 2, 3])"})
    py.run("view", {"file_path": "pkg/text.py"})
    monkeypatch.setattr(manager, "IMPORTERS_BUDGET_S", 0.0)  # no time for pictures before the change
    broken = py.run("edit", BREAK_CAPFIRST)
    assert "unconfirmed: files that use what changed were not all checked (" in broken.content, broken.content
    monkeypatch.setattr(manager, "IMPORTERS_BUDGET_S", 12.0)
    reverted = py.run("edit", REVERT_CAPFIRST)
    assert "<project_diagnostics>" not in reverted.content and "forms.py" not in reverted.content, reverted.content
    again = py.run("edit", BREAK_CAPFIRST)  # the untouched picture is known now: a new error is still news
    assert '"capfirst" is unknown import symbol' in again.content, again.content


def test_eight_broken_importers_show_five_and_name_the_rest(py: Driver) -> None:
    py.run("view", {"file_path": "pkg/text.py"})
    r = py.run("edit", {"file_path": "pkg/text.py", "old_string": "def greet(", "new_string": "def salute("})
    shown = {line.split(":")[1].strip() for line in r.content.splitlines() if line.startswith("Error: pkg/use")}
    assert len(shown) == 5, r.content
    more = [line for line in r.content.splitlines() if line.startswith("... and 3 more file(s) with new errors: ")]
    assert more, r.content
    named = set(more[0].split(": ", 1)[1].split(", "))
    assert named | shown == {f"pkg/use{i}.py" for i in range(USERS)} and not named & shown
    assert f"errors in {USERS} other file(s): {USERS}" in r.content, r.content


def test_a_rename_reports_the_diagnostics_after_it(py: Driver) -> None:
    (py.workspace / "pkg" / "caller.py").write_text("from pkg.text import greet\n\ngreet(1)\n")
    r = py.run("lsp", {"file_path": "pkg/text.py", "operation": "rename", "symbol": "greet", "new_name": "salute"})
    assert not r.is_error, r.content
    caller = errors_of(r.content, "pkg/caller.py")
    assert len(caller) == 1 and 'in function "salute"' in caller[0], r.content  # not "greet": from before


# --- the CLI: --batch (one process) and --session (the session's host) ----------------------------


def _cli(workspace: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cmd.tools", "--cwd", str(workspace), *args],
        cwd=ROOT, input=stdin, capture_output=True, text=True, timeout=180, env={**os.environ},
    )  # fmt: skip


def _cli_config(workspace: Path) -> None:
    config = workspace / ".toolsmith" / "config.toml"
    config.parent.mkdir(exist_ok=True)
    config.write_text("".join(f"[lsp.servers.{name}]\ndisabled = true\n" for name in ONLY_BASEDPYRIGHT))


NAMED_OR_UNCONFIRMED = ("Error: pkg/forms.py:1:", "unconfirmed")


def test_cli_batch_first_edit_names_the_importer_or_says_unconfirmed(workspace: Path) -> None:
    python_project(workspace)
    _cli_config(workspace)
    lines = [
        {"tool": "view", "params": {"file_path": "pkg/text.py"}},
        {"tool": "view", "params": {"file_path": "pkg/forms.py"}},
        {"tool": "edit", "params": BREAK_CAPFIRST},
        {"tool": "view", "params": {"file_path": "pkg/forms.py"}},
    ]
    done = _cli(workspace, "--batch", "-", stdin="".join(json.dumps(line) + "\n" for line in lines))
    assert done.returncode == 0, done.stdout + done.stderr
    results = [json.loads(line)["content"] for line in done.stdout.splitlines()]
    edit = results[2]
    assert any(sign in edit for sign in NAMED_OR_UNCONFIRMED), edit  # never a silent answer
    # The truth, for the record: the importer is broken (the later view shows it, or says it is
    # still being analysed).
    assert '"capfirst" is unknown import symbol' in results[3] or "unconfirmed" in results[3], results[3]


def test_cli_session_edits_name_the_importer_or_say_unconfirmed(workspace: Path) -> None:
    python_project(workspace)
    _cli_config(workspace)
    session = f"lsp-{uuid.uuid4().hex[:8]}"
    try:
        for path in ("pkg/text.py", "pkg/forms.py"):
            assert _cli(workspace, "--session", session, "view", json.dumps({"file_path": path})).returncode == 0
        first = _cli(workspace, "--session", session, "edit", json.dumps(BREAK_CAPFIRST))
        assert first.returncode == 0, first.stdout + first.stderr
        assert any(sign in first.stdout for sign in NAMED_OR_UNCONFIRMED), first.stdout
        back = _cli(workspace, "--session", session, "edit", json.dumps(REVERT_CAPFIRST))
        assert back.returncode == 0 and "forms.py:8" not in back.stdout, back.stdout  # no blame for the old error
        second = _cli(workspace, "--session", session, "edit", json.dumps(BREAK_CAPFIRST))
        assert any(sign in second.stdout for sign in NAMED_OR_UNCONFIRMED), second.stdout
    finally:
        ended = _cli(workspace, "--session", session, "--end")
        assert ended.returncode == 0, ended.stdout + ended.stderr


# --- TypeScript -------------------------------------------------------------------------------------


@pytest.fixture
def ts(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Driver]:
    if not TS_SERVER.exists():
        if shutil.which("npm") is None:
            pytest.skip("npm is not installed, so typescript-language-server cannot be (make test installs it)")
        pytest.fail(f"{TS_SERVER} is missing: `make test` installs it with npm")
    be_patient(monkeypatch)
    (workspace / "tsconfig.json").write_text('{"compilerOptions": {"strict": true}}\n')
    (workspace / "src").mkdir()
    (workspace / "src" / "util.ts").write_text(
        "export function format(value: number): string {\n  return value.toFixed(2);\n}\n"
    )
    component = "import { format } from './util';\n\nexport const shown = format(1);\n"
    (workspace / "src" / "component.ts").write_text(component)
    config = Config(lsp_servers={"typescript": {"command": [str(TS_SERVER), "--stdio"]}}, lsp_on_view=False)
    driver = Driver(workspace, config)
    yield driver
    driver.close()


def test_typescript_an_importer_broken_by_the_second_change_is_named(ts: Driver) -> None:
    """The changed file is never opened by a view (as in the CLI): its old text is sent before the
    importer is pictured, and the wait for the importer starts at the change."""
    ts.run("view", {"file_path": "src/util.ts"})
    first = ts.run("edit", {"file_path": "src/util.ts", "old_string": "toFixed(2)", "new_string": "toFixed(3)"})
    assert "Error:" not in first.content and "unconfirmed" not in first.content, first.content
    second = ts.run(
        "edit", {"file_path": "src/util.ts", "old_string": "format(value: number)",
                 "new_string": "format(value: number, digits: number)"},
    )  # fmt: skip
    assert "<project_diagnostics>\nError: src/component.ts:3:" in second.content, second.content
    assert "Expected 2 arguments, but got 1." in second.content
    fixed = ts.run(
        "edit", {"file_path": "src/util.ts", "old_string": "format(value: number, digits: number)",
                 "new_string": "format(value: number, digits = 2)"},
    )  # fmt: skip
    assert "Error:" not in fixed.content, fixed.content
