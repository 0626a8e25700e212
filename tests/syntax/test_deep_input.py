"""Deeply nested input never crashes the process: the 500-nested-class file through the CLI and
the tools, the walks' cost at any depth, and the child-process parse (syntax/probe.py) turning a
native crash into an error. The crash is a real SIGSEGV of a real child: the one seam is the
child's command (probe.CHILD_COMMAND), swapped for one that kills itself."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from agent_toolsmith.errors import ParseFailed
from agent_toolsmith.nesting import bracket_depth, brackets
from agent_toolsmith.syntax import judge, parse
from agent_toolsmith.syntax import probe as probe_module
from agent_toolsmith.syntax.outline import MAX_SYMBOL_DEPTH, flatten, outline
from agent_toolsmith.syntax.parse import inside_literal
from agent_toolsmith.syntax.probe import SUSPICIOUS_NESTING, looks_deep, probe
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import Runner

ROOT = Path(__file__).resolve().parents[2]
#: Generous bounds that only a quadratic walk (minutes at these sizes) or a hang would pass.
SLOW_S = 20.0
SEGFAULT = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"]


def nested_classes(depth: int) -> str:
    """The file that crashed the process: ``depth`` classes, each inside the one above."""
    return "".join(" " * i + f"class C{i}:\n" for i in range(depth)) + " " * depth + "pass\n"


def cli(workspace: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cmd.tools", "--cwd", str(workspace), *args],
        cwd=ROOT, input=stdin, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


# --- the file of the report ---------------------------------------------------------------------


def test_the_500_nested_classes_through_the_cli_answer_with_no_crash(workspace: Path) -> None:
    (workspace / "n.py").write_text(nested_classes(500))
    (workspace / "sub").mkdir()
    (workspace / "sub" / "n.py").write_text(nested_classes(500))
    one = cli(workspace, "outline", '{"path": "n.py"}')
    assert one.returncode == 0, one.stdout + one.stderr
    assert f"(python, {MAX_SYMBOL_DEPTH} symbols)" in one.stdout and "nest deeper than" in one.stdout
    directory = cli(workspace, "outline", '{"path": "."}')
    assert directory.returncode == 0 and "n.py: class C0 (1)" in directory.stdout, directory.stdout
    calls = [
        {"tool": "view", "params": {"file_path": "n.py"}},
        {"tool": "symbol_edit", "params": {"file_path": "n.py", "symbol": "C499", "new_string": "x = 1\n"}},
        {"tool": "symbol_edit", "params": {"file_path": "n.py", "symbol": "C0.C1.C2",
                                           "new_string": "  class C2:\n   y = 1\n"}},
    ]  # fmt: skip
    batch = cli(workspace, "--batch", "-", stdin="\n".join(json.dumps(c) for c in calls))
    assert 0 <= batch.returncode <= 2, batch.stderr
    viewed, missing, edited = (json.loads(line) for line in batch.stdout.splitlines())
    assert not viewed["is_error"]
    assert missing["metadata"]["error"] == "symbol_not_found" and "use edit for those" in missing["content"]
    assert not edited["is_error"], edited["content"]
    assert (workspace / "n.py").read_text() == "class C0:\n class C1:\n  class C2:\n   y = 1\n"


def test_the_outline_of_deep_nesting_is_bounded(workspace: Path, run: Runner) -> None:
    (workspace / "n.py").write_text(nested_classes(500))
    r = run("outline", {"path": "n.py"})
    assert not r.is_error and r.metadata["depth_cut"] == MAX_SYMBOL_DEPTH
    assert len(r.metadata["symbols"]) == MAX_SYMBOL_DEPTH and len(r.content) < 10_000
    assert r.metadata["symbols"][-1]["path"].endswith(f"C{MAX_SYMBOL_DEPTH - 2}.C{MAX_SYMBOL_DEPTH - 1}")


# --- cost at any depth: no recursion, no walk up from a node, no rescans of a long line ---------


@pytest.mark.parametrize(
    ("name", "text", "symbols"),
    [
        ("ns.ts", "namespace a {" * 100_000 + "}" * 100_000, MAX_SYMBOL_DEPTH),
        ("deep.py", nested_classes(2_000), MAX_SYMBOL_DEPTH),
        ("flat.js", "".join(f"function f{i}(){{return {i}}};" for i in range(30_000)), 30_000),
        ("brackets.rs", "fn f() { let x = " + "[" * 100_000 + "]" * 100_000 + "; }\n", 1),
        ("declarators.js", "const " + ", ".join(f"f{i} = () => {i}" for i in range(20_000)) + ";\n", 20_000),
    ],
)
def test_outline_is_linear_at_any_depth(name: str, text: str, symbols: int) -> None:
    parsed = parse(text, name)
    assert parsed is not None
    started = time.monotonic()
    found = flatten(outline(parsed))
    assert len(found) == symbols and time.monotonic() - started < SLOW_S
    assert all(0 <= s.start_byte <= s.end_byte <= len(parsed.source) for s in found)


def test_signatures_on_one_long_line_are_read_near_the_symbol() -> None:
    text = "".join(f"function f{i}(){{return {i}}};" for i in range(20_000))
    parsed = parse(text, "min.js")
    assert parsed is not None
    last = flatten(outline(parsed))[-1]
    assert last.signature.startswith("function f19999()") and last.start_line == 1


def test_the_gate_on_200_000_statements_on_one_line_is_linear() -> None:
    text = "a=1;" * 200_000 + "\n"
    started = time.monotonic()
    assert judge(None, text, "a.py") is None
    assert judge(text, text.replace("a=1", "a=(", 1), "a.py") is not None
    assert time.monotonic() - started < SLOW_S


def test_inside_literal_goes_down_from_the_root_at_any_depth() -> None:
    text = "x = " + "[" * 50_000 + '"""a\nb"""' + "]" * 50_000 + "\n"
    parsed = parse(text, "a.py")
    assert parsed is not None and not parsed.has_tree_errors
    inside = parsed.source.index(b'\nb"') + 1
    started = time.monotonic()
    assert inside_literal(parsed, [inside]) and not inside_literal(parsed, [2, len(parsed.source) - 1])
    assert time.monotonic() - started < SLOW_S


# --- the nesting estimate -----------------------------------------------------------------------


def _depth_by_hand(source: bytes) -> int:
    depth = low = deepest = 0
    for byte in source:
        if byte in b"([{":
            depth += 1
        elif byte in b")]}":
            depth -= 1
            low = min(low, depth)
        deepest = max(deepest, depth - low)
    return deepest


@given(st.lists(st.sampled_from([b"(", b")", b"[", b"]", b"{", b"}", b"x", b"'", b"\n"]), max_size=600))
def test_bracket_depth_is_the_deepest_nesting(pieces: list[bytes]) -> None:
    source = b"".join(pieces)
    assert bracket_depth(brackets(source)) == _depth_by_hand(source)
    assert looks_deep(source) == (_depth_by_hand(source) > SUSPICIOUS_NESTING)


def test_what_looks_deep() -> None:
    assert looks_deep(nested_classes(SUSPICIOUS_NESTING + 1).encode())
    assert looks_deep(b"x = " + b"(" * (SUSPICIOUS_NESTING + 1))
    assert looks_deep(b")" * 1000 + b"{" * (SUSPICIOUS_NESTING + 1))  # stray closers hide nothing
    assert not looks_deep(nested_classes(40).encode())
    assert not looks_deep(b"f(g(h(1)));\n" * 10_000)  # many brackets, shallow


# --- the child-process parse --------------------------------------------------------------------


def test_a_deep_file_is_probed_in_a_child_that_parses_and_walks_it() -> None:
    source = nested_classes(500).encode()
    assert probe(source, "python", "n.py") is True
    assert probe(b"[" * 10_000 + b"]" * 10_000, "json", "d.json") is True


def test_a_crash_in_the_child_is_an_error_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probe_module, "CHILD_COMMAND", SEGFAULT)
    with pytest.raises(ParseFailed) as raised:
        parse(nested_classes(300), "n.py")
    assert "crashed on it (SIGSEGV)" in raised.value.message and raised.value.metadata["error"] == "parse_failed"
    assert parse(nested_classes(30), "shallow.py") is not None  # only what looks deep is probed


def test_a_child_past_its_time_is_killed_and_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probe_module, "CHILD_COMMAND", [sys.executable, "-c", "import time; time.sleep(600)"])
    monkeypatch.setattr(probe_module, "PROBE_TIMEOUT_S", 1.0)
    started = time.monotonic()
    with pytest.raises(ParseFailed, match="took longer than 1 s"):
        probe(b"(" * 1000, "python", "p.py")
    assert time.monotonic() - started < SLOW_S  # killed and reaped (the run's leak check would see it)


def test_the_tools_answer_a_crashed_parse_and_the_gate_says_it_did_not_judge(
    workspace: Path, run: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(probe_module, "CHILD_COMMAND", SEGFAULT)
    deep = nested_classes(300)
    (workspace / "n.py").write_text(deep)
    outlined = run("outline", {"path": "n.py"})
    assert outlined.is_error and outlined.metadata["error"] == "parse_failed" and "SIGSEGV" in outlined.content
    assert "n.py: (parse_failed)" in run("outline", {"path": "."}).content
    run("view", {"file_path": "n.py"})
    by_symbol = run("symbol_edit", {"file_path": "n.py", "symbol": "C0", "new_string": "x = 1\n"})
    assert by_symbol.is_error and by_symbol.metadata["error"] == "parse_failed"
    edited = run("edit", {"file_path": "n.py", "old_string": "class C299:", "new_string": "class D:"})
    assert not edited.is_error and "syntax check was skipped: the parser crashed on it (SIGSEGV)" in edited.content
    assert (workspace / "n.py").read_text() == deep.replace("class C299:", "class D:")
    written = run("write", {"file_path": "new.py", "content": deep})
    assert not written.is_error and "syntax check was skipped" in written.content


def test_a_directory_map_probes_a_few_deep_files_and_points_to_the_rest(workspace: Path, run: Runner) -> None:
    from agent_toolsmith.llm.tools.outline import MAX_MAP_PROBES

    for i in range(MAX_MAP_PROBES + 2):
        (workspace / f"d{i}.py").write_text(nested_classes(SUSPICIOUS_NESTING + 10))
    lines = run("outline", {"path": "."}).content.splitlines()
    assert sum("class C0 (1)" in line for line in lines) == MAX_MAP_PROBES
    assert sum("(deeply nested: outline it alone)" in line for line in lines) == 2
    assert not run("outline", {"path": f"d{MAX_MAP_PROBES + 1}.py"}).is_error


def test_the_child_is_the_package_module_run_from_the_root_directory() -> None:
    assert probe_module.CHILD_COMMAND[1:] == ["-m", "agent_toolsmith.syntax.probe_child"]
    done = subprocess.run(
        [*probe_module.CHILD_COMMAND, "python"], input=b"x = (\n", capture_output=True, timeout=60, cwd="/"
    )
    assert done.returncode == 0 and done.stdout == probe_module.FINISHED, done.stderr


def test_a_child_that_exits_0_without_finishing_is_not_trusted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probe_module, "CHILD_COMMAND", [sys.executable, "-c", "pass"])
    with pytest.raises(ParseFailed, match="ended before it finished"):
        probe(b"(" * 1000, "python", "p.py")
