"""outline: real tree-sitter parses of the fixtures in testdata/structure, and a real rg listing."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Runner

FIXTURES = Path(__file__).resolve().parents[2] / "testdata" / "structure"

EXPECTED = {
    "greeter.py": ["class Greeter [lines 5-18]", "  method Greeter.greet [lines 11-13]", "function main"],
    "greeter.ts": ["class Greeter [lines 3-9]", "  method Greeter.greet", "interface Named", "function shout"],
    "greeter.go": ["struct Greeter [lines 5-8]: type Greeter struct {", "method Greeter.Greet [lines 10-13]"],
    "greeter.rs": ["struct Greeter [lines 1-5]", "impl Greeter", "  method Greeter.greet [lines 8-11]"],
    "Greeter.java": ["class Greeter [lines 3-15]", "  method Greeter.toString [lines 11-14]: public String"],
    "greeter.cpp": ["namespace demo", "    method demo.Greeter.greet", "  function demo.add [lines 11-13]"],
    "greeter_c.c": ["struct point [lines 3-5]", "function add [lines 7-10]", "function main"],
}


@pytest.fixture
def project(workspace: Path) -> Path:
    for name in EXPECTED:
        shutil.copy(FIXTURES / name, workspace / name)
    return workspace


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_file_outline_lists_symbols_with_name_paths_and_lines(project: Path, run: Runner, name: str) -> None:
    r = run("outline", {"path": name})
    assert not r.is_error, r.content
    for expected in EXPECTED[name]:
        assert any(line.startswith(expected) for line in r.content.splitlines()), (expected, r.content)
    assert r.metadata["symbols"] and all(s["start_line"] <= s["end_line"] for s in r.metadata["symbols"])


def test_directory_map_respects_gitignore(project: Path, run: Runner) -> None:
    subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=30)
    (project / ".gitignore").write_text("build/\n")
    (project / "build").mkdir()
    (project / "build" / "gen.py").write_text("def generated():\n    pass\n")
    (project / "notes.txt").write_text("not source\n")
    r = run("outline", {})
    assert not r.is_error, r.content
    assert "greeter.py: class Greeter (5), function main (21)" in r.content
    assert "greeter.go: struct Greeter (5), method Greeter.Greet (10), function New (15)" in r.content
    assert "gen.py" not in r.content and "notes.txt" not in r.content
    assert r.metadata["files"] == len(EXPECTED)


def test_unsupported_file_is_a_clear_error(workspace: Path, run: Runner) -> None:
    (workspace / "notes.txt").write_text("hello\n")
    r = run("outline", {"path": "notes.txt"})
    assert r.is_error and r.metadata["error"] == "unsupported_language" and "grep" in r.content
