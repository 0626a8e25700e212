"""What a change changed (lines, names), what another file gained, and how a report orders and caps
what it shows — internal/lsp/changes.py, crossfile.py's comparison, diagnostics.py's report."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

from agent_toolsmith.lsp.changes import NamePlace, Region, changed_names, changed_regions, closeness
from agent_toolsmith.lsp.crossfile import error_keys, gained_errors
from agent_toolsmith.lsp.diagnostics import Diag, format_report
from agent_toolsmith.lsp.importers import importers_of
from hypothesis import given
from hypothesis import strategies as st

LINES = st.lists(st.sampled_from(["a", "b", "c", "", "def f():", "    return 1"]), max_size=30)


def rebuilt(old: str, new: str, regions: list[Region]) -> str:
    """``old`` with each region's old lines replaced by its new lines (independent of the diff)."""
    a, b = old.split("\n"), new.split("\n")
    out, cursor = [], 0
    for region in regions:
        out += a[cursor : region.old_start] + b[region.new_start : region.new_end]
        cursor = region.old_end
    return "\n".join(out + a[cursor:])


@given(LINES, LINES)
def test_regions_are_exactly_what_differs(old_lines: list[str], new_lines: list[str]) -> None:
    old, new = "\n".join(old_lines), "\n".join(new_lines)
    regions = changed_regions(old, new)
    assert rebuilt(old, new, regions) == new
    assert (regions == []) == (old == new)
    for region in regions:  # no region is a no-op
        assert old.split("\n")[region.old_start : region.old_end] != new.split("\n")[region.new_start : region.new_end]


def test_closeness_of_lines_to_a_change() -> None:
    regions = [Region(10, 11, 10, 12)]  # line 10 became lines 10 and 11
    assert [closeness(line, regions) for line in (10, 11, 12, 14, 15, 7, 6)] == [0, 0, 1, 1, 2, 1, 2]
    assert closeness(5, [Region(5, 7, 5, 5)]) == 0  # where lines were removed


PY_OLD = """import os

LIMIT = 3


def greet(name: str) -> str:
    return "hi " + name


class Shop:
    def open(self) -> None:
        pass

    def close(self) -> None:
        pass
"""


def test_changed_names_are_the_innermost_touched_definitions_old_and_new() -> None:
    new = PY_OLD.replace("def greet(", "def salute(")
    new = new.replace("        pass\n\n    def close", "        return\n\n    def close")
    names = changed_names(Path("m.py"), PY_OLD, new, changed_regions(PY_OLD, new))
    assert names.names == {"greet", "salute", "open"} and not names.anything
    assert names.old == [NamePlace("greet", 5, 4), NamePlace("open", 10, 8)]  # where references are asked


def test_a_touched_assignment_counts_by_its_name_and_an_import_by_everything() -> None:
    assigned = PY_OLD.replace("LIMIT = 3", "LIMIT = 4")
    names = changed_names(Path("m.py"), PY_OLD, assigned, changed_regions(PY_OLD, assigned))
    assert names.names == {"LIMIT"} and not names.anything
    imported = PY_OLD.replace("import os", "import sys")
    assert changed_names(Path("m.py"), PY_OLD, imported, changed_regions(PY_OLD, imported)).anything


def test_typescript_names() -> None:
    old = "export const LIMIT = 1;\nexport function format(value: number): string {\n  return String(value);\n}\n"
    new = old.replace("value: number)", "value: number, digits: number)").replace("LIMIT = 1", "LIMIT = 2")
    names = changed_names(Path("u.ts"), old, new, changed_regions(old, new))
    assert names.names == {"LIMIT", "format"} and not names.anything
    assert names.old == [NamePlace("format", 1, 16)]


def error(message: str, line: int = 0, code: str | None = "E") -> Diag:
    return Diag(line=line, character=0, severity=1, message=message, code=code)


def test_gained_is_beyond_the_picture_before_and_the_untouched_state() -> None:
    untouched = error_keys([error("old type error", 8)])
    broken = error_keys([error('"capfirst" is unknown import symbol', 1)])  # the old one is hidden now
    reverted = [error("old type error", 8)]
    assert gained_errors(reverted, broken, untouched) == []  # the revert brought back an old one
    assert gained_errors(reverted, broken, None) == reverted  # without the untouched state, it would be blamed
    twice = [error("dup", 1), error("dup", 2), error("new", 3)]
    assert gained_errors(twice, Counter({("dup", "E"): 1}), Counter()) == [error("dup", 2), error("new", 3)]
    moved = [error("same", 40)]
    assert gained_errors(moved, error_keys([error("same", 4)]), None) == []  # lines moved, nothing gained
    warning = Diag(line=0, character=0, severity=2, message="only a warning")
    assert gained_errors([warning], Counter(), None) == []


def test_the_report_shows_the_changed_lines_errors_first_within_the_cap() -> None:
    old = [error(f"old {i}", i) for i in range(25)]
    new = error("new one", 90)
    report = format_report({"q.py": [*old, new]}, errors_only=True, focus={"q.py": [Region(90, 90, 90, 91)]})
    lines = report.splitlines()
    assert lines[1] == "Error: q.py:91:1 [E] new one"
    assert lines[2] == "Error: q.py:1:1 [E] old 0" and "... and 6 more" in lines
    plain = format_report({"q.py": [*old, new]}, errors_only=True)
    assert "new one" not in plain  # by line alone, the cap would hide it


def test_other_files_beyond_five_are_named() -> None:
    others = {f"use{i}.py": [error("broken", 0)] for i in range(8)}
    report = format_report({"text.py": []}, others, errors_only=True)
    assert report.count("Error: use") == 5
    assert "... and 3 more file(s) with new errors: use5.py, use6.py, use7.py" in report
    assert "errors in 8 other file(s): 8" in report


def test_importers_that_name_what_changed(tmp_path: Path) -> None:
    (tmp_path / "util.py").write_text("def greet(): ...\ndef other(): ...\n")
    (tmp_path / "a.py").write_text("from util import greet\n")
    (tmp_path / "b.py").write_text("from util import other\n")
    (tmp_path / "c.py").write_text("import util\n\nutil.greet()\n")
    (tmp_path / "d.py").write_text("greet = 1\n")  # names it, imports nothing
    found = asyncio.run(importers_of(tmp_path / "util.py", tmp_path, None, {"greet"}, 30))
    assert found == [tmp_path / "a.py", tmp_path / "c.py"]
    everyone = asyncio.run(importers_of(tmp_path / "util.py", tmp_path, None, None, 30))
    assert everyone == [tmp_path / "a.py", tmp_path / "b.py", tmp_path / "c.py"]


def test_importers_through_a_barrel_and_a_package_name(tmp_path: Path) -> None:
    shared = tmp_path / "packages" / "shared"
    (shared / "src").mkdir(parents=True)
    (shared / "package.json").write_text('{"name": "@demo/shared", "main": "src/index.ts"}\n')
    (shared / "src" / "general.ts").write_text("export function camelize(s: string): string { return s; }\n")
    (shared / "src" / "index.ts").write_text("export * from './general'\n")
    core = tmp_path / "packages" / "core" / "src"
    core.mkdir(parents=True)
    (core / "a.ts").write_text("import { camelize } from '@demo/shared'\n\ncamelize('x')\n")
    (core / "b.ts").write_text("import { other } from '@demo/shared'\n")
    (core / "c.ts").write_text("import { camelize } from '@demo/shared-extra'\n")
    found = asyncio.run(importers_of(shared / "src" / "general.ts", tmp_path, None, {"camelize"}, 30))
    assert found == [core / "a.ts"]
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "text.py").write_text("def capfirst(x): ...\n")
    (package / "__init__.py").write_text("from .text import capfirst\n")
    (tmp_path / "user.py").write_text("from pkg import capfirst\n")
    found = asyncio.run(importers_of(package / "text.py", tmp_path, None, {"capfirst"}, 30))
    assert found == [package / "__init__.py", tmp_path / "user.py"]


def test_a_commits_old_text_is_used_only_while_the_file_holds_the_committed_text(tmp_path: Path) -> None:
    from agent_toolsmith.config import Config
    from agent_toolsmith.lsp.manager import LspManager
    from agent_toolsmith.state import StateDir

    manager = LspManager(tmp_path, Config(), StateDir(tmp_path / "state"))
    target = tmp_path / "m.py"
    old, new = b"def greet():\r\n    pass\r\n", b"def salute():\r\n    pass\r\n"
    target.write_bytes(new)
    manager.remember_old_texts({target: (old, new)})
    change = manager._changed(target)
    assert change is not None and change.old == "def greet():\n    pass\n"  # line ends as the servers get them
    assert change.regions == [Region(0, 1, 0, 1)]
    manager.remember_old_texts({target: (old, new)})
    target.write_bytes(b"something else\n")  # written again since (a call without diagnostics)
    stale = manager._changed(target)
    assert stale is not None and stale.old is None  # unknown, never a wrong picture
