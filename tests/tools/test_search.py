"""grep, glob and ls against real rg and the pure-Python fallback."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.ripgrep.runner import find_rg
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import Runner, make_session

ROOT = Path(__file__).resolve().parents[2]
NAME_CHARS = st.sampled_from(list("ab:|- é中\n_x"))
names = st.text(NAME_CHARS, min_size=1, max_size=8).filter(lambda n: n not in (".", "..") and not n.startswith("."))
contents = st.lists(
    st.sampled_from(["needle", "a:b|c needle", "nope", "", "x|1|needle:2", "中 needle", "-needle"]), max_size=6
)


def rg_config(enabled: bool) -> Config:
    return Config(lsp_enabled=False, rg_path=None if enabled else "")


def run_in(ws: Path, tool: str, params: dict[str, object], *, use_rg: bool = True) -> object:
    return asyncio.run(make_session(ws, config=rg_config(use_rg)).run(tool, params))


def test_rg_comes_from_the_wheel() -> None:
    rg = find_rg(None)
    assert rg is not None and Path(rg).parent == Path(sys.executable).parent


def parse_grep(content: str) -> set[tuple[str, int, str]]:
    """Parse grep's output back; paths are headers ending in ':' after a blank line."""
    found: set[tuple[str, int, str]] = set()
    current = None
    blocks = content.split("\n\n")
    for block in blocks[1:]:
        header, _, body = block.partition(":\n  Line ")
        if not body:
            continue
        current = header
        for item in ("  Line " + body).split("\n  Line "):
            item = item.removeprefix("  Line ")
            number, _, text = item.partition(": ")
            found.add((current, int(number), text))
    return found


@given(st.dictionaries(names, contents, min_size=1, max_size=6), st.booleans())
def test_grep_match_set_equals_reference(files: dict[str, list[str]], use_rg: bool) -> None:
    ws = Path(tempfile.mkdtemp())
    (ws / "sub").mkdir()
    expected = set()
    for i, (name, lines) in enumerate(files.items()):
        path = ws / ("sub" if i % 2 else "") / name
        path.write_text("".join(line + "\n" for line in lines))
        expected |= {(str(path), n, line) for n, line in enumerate(lines, 1) if "needle" in line}
    # Never matched: a binary file (rg skips it) and a broken symlink (not followed).
    (ws / "sub" / "blob.bin").write_bytes(b"\x00\x01needle\x00" * 10)
    (ws / "dangling needle").symlink_to(ws / "does-not-exist")
    r = run_in(ws, "grep", {"pattern": "needle", "literal_text": True}, use_rg=use_rg)
    if not expected:
        assert r.content == "No matches found"  # type: ignore[attr-defined]
        return
    noun = "match" if len(expected) == 1 else "matches"
    assert r.content.startswith(f"Found {len(expected)} {noun}")  # type: ignore[attr-defined]
    if not any("\n" in path for path, _, _ in expected):
        assert parse_grep(r.content) == expected  # type: ignore[attr-defined]


def test_grep_pattern_starting_with_dash_and_regex(workspace: Path, run: Runner) -> None:
    (workspace / "a.py").write_text("x = -v\ndef foo(a, b):\n    pass\n")
    r = run("grep", {"pattern": "-v"})
    assert "Line 1: x = -v" in r.content
    r = run("grep", {"pattern": r"def \w+\(", "include": "*.py"})
    assert "Line 2: def foo(a, b):" in r.content
    r = run("grep", {"pattern": "foo(a", "literal_text": True})
    assert "Line 2" in r.content
    bad = run("grep", {"pattern": "foo("})
    assert bad.is_error and "invalid regular expression" in bad.content.lower()


def test_grep_orders_files_newest_first_and_truncates(workspace: Path, run: Runner) -> None:
    for i in range(3):
        f = workspace / f"f{i}.txt"
        f.write_text("hit\n" * 60)
        os.utime(f, (1_000_000 + i * 100, 1_000_000 + i * 100))
    r = run("grep", {"pattern": "hit"})
    headers = [line for line in r.content.splitlines() if line.endswith(":")]
    assert headers == [f"{workspace}/f2.txt:", f"{workspace}/f1.txt:"]
    assert r.content.endswith("(Showing 1–100 of 180; use offset=100 to continue.)")
    lines = [int(m) for m in re.findall(r"Line (\d+):", r.content)]
    assert lines[:60] == list(range(1, 61))


def test_grep_respects_gitignore_hidden_and_skips_git(workspace: Path, run: Runner) -> None:
    (workspace / ".gitignore").write_text("ignored.txt\n")
    (workspace / "ignored.txt").write_text("hit\n")
    (workspace / ".hidden.txt").write_text("hit\n")
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("hit\n")
    r = run("grep", {"pattern": "hit"})
    assert ".hidden.txt" in r.content
    assert "ignored.txt" not in r.content.replace(".gitignore", "")
    assert "/.git/" not in r.content


def test_grep_keeps_results_when_some_paths_are_unreadable(tmp_path: Path) -> None:
    """rg really exits 2 on an unreadable directory; the matches it found are kept.

    A directory with mode 0 locks out its owner, but not root: as root, rg runs as nobody
    through a wrapper (copied out of the venv so the clone's location does not matter). The tool
    itself runs in-process either way.
    """
    # The run's base temp dir is private (0700): nobody must be able to reach the workspace.
    base = Path(tempfile.mkdtemp()) if os.geteuid() == 0 else tmp_path
    base.chmod(0o755)
    ws = base / "ws"
    ws.mkdir()
    ws.chmod(0o777)
    (ws / "ok.txt").write_text("hit\n")
    locked = ws / "locked"
    locked.mkdir()
    (locked / "secret.txt").write_text("hit\n")
    locked.chmod(0)
    try:
        rg_path = _rg_as_nobody(base) if os.geteuid() == 0 else None
        session = make_session(ws, config=Config(lsp_enabled=False, rg_path=rg_path))
        r = asyncio.run(session.run("grep", {"pattern": "hit"}))
    finally:
        locked.chmod(0o755)
        if base != tmp_path:
            shutil.rmtree(base)
    assert not r.is_error, r.content
    assert f"{ws}/ok.txt:" in r.content and "secret" not in r.content
    assert r.content.endswith("(Some paths were inaccessible and skipped)")
    assert r.metadata["partial"] is True


def _rg_as_nobody(base: Path) -> str:
    bindir = base / "bin"
    bindir.mkdir()
    bindir.chmod(0o755)
    rg = find_rg(None)
    assert rg is not None
    shutil.copy(rg, bindir / "rg")
    wrapper = bindir / "rg-as-nobody"
    wrapper.write_text(f'#!/bin/sh\nexec setpriv --reuid=nobody --regid=nogroup --clear-groups {bindir / "rg"} "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


def test_glob_newest_first_ties_by_path(workspace: Path, run: Runner) -> None:
    for name, age in [("b.py", 5), ("a.py", 5), ("c.py", 9), ("d.txt", 10)]:
        f = workspace / name
        f.write_text("x")
        os.utime(f, (age * 1000, age * 1000))
    r = run("glob", {"pattern": "*.py"})
    assert r.content.splitlines() == [f"{workspace}/c.py", f"{workspace}/a.py", f"{workspace}/b.py"]
    r = run("glob", {"pattern": "*.py", "path": "c.py"})
    assert r.is_error and "is not a directory" in r.content


def test_glob_truncates_at_100(workspace: Path, run: Runner) -> None:
    for i in range(120):
        (workspace / f"f{i:03}.txt").write_text("x")
    r = run("glob", {"pattern": "**/*.txt"})
    assert len([line for line in r.content.splitlines() if line.startswith("/")]) == 100
    assert "(Results are truncated" in r.content


def build_tree(ws: Path) -> None:
    for rel in [
        *["src/b.py", "src/a.py", "src/lib/z.py", "README.md", "a.txt", "node_modules/x/y.js", "build/out.o"],
        *["src/__pycache__/a.pyc", "docs/tmp/keep.md", "docs/guide.md", "x.pyc", ".env.example"],
    ]:
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("x")


def test_ls_tree_order_and_ignores(workspace: Path, run: Runner) -> None:
    build_tree(workspace)
    r = run("ls", {})
    assert r.content.splitlines() == [
        f"- {workspace}/",
        "  - docs/",
        "    - guide.md",
        "  - src/",
        "    - lib/",
        "      - z.py",
        "    - a.py",
        "    - b.py",
        "  - .env.example",
        "  - README.md",
        "  - a.txt",
    ]
    r = run("ls", {"depth": 1, "ignore": ["*.md"]})
    # docs/ holds only ignored files, so it is not shown.
    assert r.content.splitlines() == [f"- {workspace}/", "  - src/", "  - .env.example", "  - a.txt"]


def test_ls_works_inside_dirs_named_like_ignored_ones(tmp_path: Path) -> None:
    project = tmp_path / "build" / "tmp" / "proj"
    project.mkdir(parents=True)
    (project / "main.py").write_text("x")
    r = run_in(project, "ls", {})
    assert "  - main.py" in r.content.splitlines()  # type: ignore[attr-defined]


def test_ls_cap(workspace: Path, run: Runner) -> None:
    for i in range(1100):
        (workspace / f"f{i:04}").write_text("")
    r = run("ls", {})
    assert r.content.startswith("There are more than 1000 files")
    assert r.metadata["truncated"] is True


@pytest.mark.parametrize("tool,params", [("ls", {}), ("glob", {"pattern": "**/*.py"}), ("grep", {"pattern": "x"})])
def test_fallback_parity(workspace: Path, tool: str, params: dict[str, object]) -> None:
    build_tree(workspace)
    (workspace / ".gitignore").write_text("docs/\n*.md\n!README.md\n")
    with_rg = run_in(workspace, tool, params, use_rg=True)
    without = run_in(workspace, tool, params, use_rg=False)
    assert with_rg.metadata["backend"] == "rg" and without.metadata["backend"] == "python"  # type: ignore[attr-defined]
    if tool == "grep":
        assert parse_grep(with_rg.content) == parse_grep(without.content)  # type: ignore[attr-defined]
    else:
        assert with_rg.content == without.content  # type: ignore[attr-defined]


def test_hidden_rg_uses_fallback_via_cli(workspace: Path) -> None:
    """With rg absent from the venv and PATH, the CLI still searches."""
    (workspace / "a.txt").write_text("needle\n")
    venv_rg = Path(sys.executable).parent / "rg"
    assert venv_rg.exists()
    env = {**os.environ, "PATH": "/nonexistent"}
    hidden = venv_rg.with_name("rg.hidden-by-test")
    shutil.move(venv_rg, hidden)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "cmd.tools", "--json", "--cwd", str(workspace), "grep", '{"pattern": "needle"}'],
            cwd=ROOT, capture_output=True, text=True, timeout=60, env=env,
        )  # fmt: skip
    finally:
        shutil.move(hidden, venv_rg)
    assert '"backend": "python"' in proc.stdout and "a.txt" in proc.stdout


def test_globs_with_a_slash_match_from_the_search_root_not_the_process_cwd(workspace: Path) -> None:
    (workspace / "sub").mkdir()
    (workspace / "sub" / "a.txt").write_text("needle\n")
    (workspace / "b.txt").write_text("needle\n")
    for use_rg in (True, False):
        config = Config(lsp_enabled=False, rg_path=None if use_rg else "")
        script = (
            "import asyncio, json, sys\n"
            "from agent_toolsmith.session import Session\n"
            "from agent_toolsmith.config import Config\n"
            f"s = Session({str(workspace)!r}, config=Config(lsp_enabled=False, rg_path={config.rg_path!r}))\n"
            "g = asyncio.run(s.run('glob', {'pattern': 'sub/*.txt'}))\n"
            "r = asyncio.run(s.run('grep', {'pattern': 'needle', 'include': 'sub/*.txt'}))\n"
            "print(json.dumps([g.content, r.content]))\n"
        )
        # Run from / so the process cwd and the workspace differ.
        proc = subprocess.run([sys.executable, "-c", script], cwd="/", capture_output=True, text=True, timeout=60)
        glob_out, grep_out = json.loads(proc.stdout)
        assert glob_out == str(workspace / "sub" / "a.txt"), (use_rg, glob_out)
        assert str(workspace / "sub" / "a.txt") in grep_out and "b.txt" not in grep_out, (use_rg, grep_out)


def test_grep_regex_errors_name_the_users_pattern(workspace: Path) -> None:
    (workspace / "a.txt").write_text("foo(bar\n")
    for use_rg in (True, False):
        r = run_in(workspace, "grep", {"pattern": "foo(bar"}, use_rg=use_rg)
        assert r.is_error and r.content.startswith("Invalid regular expression 'foo(bar'")  # type: ignore[attr-defined]
        assert "(?:" not in r.content and "literal_text" in r.content  # type: ignore[attr-defined]
        found = run_in(workspace, "grep", {"pattern": "foo(bar", "literal_text": True}, use_rg=use_rg)
        assert found.content.startswith("Found 1 match\n")  # type: ignore[attr-defined]


def test_a_search_cancelled_again_while_rg_is_stopped_waits_for_it_and_leaves_no_stray_error(tmp_path: Path) -> None:
    """The MCP SDK cancels a cancelled call again at each await: the second cancellation, while
    rg is being stopped, neither cuts short the wait for it nor leaves a failed future nobody
    reads (asyncio's "exception was never retrieved")."""
    import gc

    from agent_toolsmith.ripgrep import runner
    from agent_toolsmith.ripgrep.output import OutputParser

    started = tmp_path / "started"
    # Stands in for a long rg: says it started, then runs until it is killed.
    argv = [sys.executable, "-c", f"open({str(started)!r}, 'w').close()\nimport time\nwhile True: time.sleep(1)"]
    unretrieved: list[dict[str, object]] = []

    async def main() -> bool:
        asyncio.get_running_loop().set_exception_handler(lambda _loop, context: unretrieved.append(context))
        search = asyncio.ensure_future(
            runner._streamed(argv, tmp_path, OutputParser("search", 10), 60.0, None, None)
        )
        while not started.exists():
            await asyncio.sleep(0.01)  # polling for the child's start, not synchronising on time
        search.cancel()
        await asyncio.sleep(0)
        search.cancel()  # again, while the runner waits for the child to end
        with pytest.raises(asyncio.CancelledError):
            await search
        return True

    assert asyncio.run(main())
    gc.collect()
    assert unretrieved == []
    assert _processes_naming(str(started)) == []  # the child was reaped before the cancellation went on


def _processes_naming(text: str) -> list[int]:
    """Processes whose command line holds ``text`` (read from /proc: no procps needed)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue  # ended meanwhile
    return found
