"""grep's output modes, context, filters and paging: against rg's own output on real trees, and
against a Python reference over generated trees (both backends)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.llm.tools.contract import ToolResponse
from agent_toolsmith.ripgrep.runner import find_rg
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import Runner, make_session

ROOT = Path(__file__).resolve().parents[2]
#: Real trees to compare with rg: this repository (its .gitignore keeps .venv out) and two
#: stdlib packages of this interpreter (the whole stdlib dir may hold a large site-packages).
STDLIB = Path(os.path.dirname(os.__file__))
REAL_TREES = [ROOT, STDLIB / "email", STDLIB / "asyncio"]
RG_TIMEOUT_S = 120

NAME_CHARS = st.sampled_from(list("ab:|- é中_x"))
names = st.text(NAME_CHARS, min_size=1, max_size=8).filter(lambda n: n not in (".", "..") and not n.startswith("."))
LINES = ["Needle", "a:b|c needle", "nope", "", "x|1|needle:2", "中 needle é", "-needle", "9|x", "12-y"]
contents = st.lists(st.sampled_from(LINES), max_size=8)


def run_grep(ws: Path, params: dict[str, Any], *, use_rg: bool = True) -> ToolResponse:
    config = Config(lsp_enabled=False, rg_path=None if use_rg else "")
    return asyncio.run(make_session(ws, config=config).run("grep", params))


def rg(*args: str, cwd: Path) -> str:
    binary = find_rg(None)
    assert binary is not None
    base = ["--hidden", "--no-require-git", "--glob", "!.git", "--no-messages", "--color=never"]
    proc = subprocess.run([binary, *base, *args], cwd=cwd, capture_output=True, timeout=RG_TIMEOUT_S, check=False)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.stdout.decode("utf-8", "surrogateescape")


def parse_content(content: str) -> tuple[set[tuple[str, int, str]], set[tuple[str, int, str]]]:
    """(matches, context lines) from content-mode output; headers are 'path:' after a blank line."""
    matches: set[tuple[str, int, str]] = set()
    context: set[tuple[str, int, str]] = set()
    body = re.sub(r"\n\n\(Showing [^\n]*\)$", "", content)
    for block in body.split("\n\n")[1:]:
        header, _, rest = block.partition(":\n  ")
        for item in ("  " + rest).split("\n"):
            if item == "  --":
                continue
            found = re.fullmatch(r"  Line (\d+)([:-]) (.*)", item, re.S)
            assert found, item
            (matches if found[2] == ":" else context).add((header, int(found[1]), found[3]))
    return matches, context


def parse_listing(content: str) -> list[str]:
    """The entries of files_with_matches / count output (after the summary and a blank line)."""
    body = re.sub(r"\n\n\(Showing [^\n]*\)$", "", content)
    return body.split("\n")[2:]


def all_pages(ws: Path, params: dict[str, Any], page: int = 1000, use_rg: bool = True) -> list[str]:
    """Every page's content, following the "use offset=M" notes to the end."""
    out = []
    offset = 0
    while True:
        r = run_grep(ws, {**params, "head_limit": page, "offset": offset}, use_rg=use_rg)
        assert not r.is_error, r.content
        out.append(r.content)
        more = re.search(r"use offset=(\d+) to continue", r.content)
        if not more:
            return out
        assert int(more[1]) > offset
        offset = int(more[1])


# --- against rg's own output on a real tree ---------------------------------------------------


@pytest.mark.parametrize("tree", REAL_TREES, ids=lambda p: p.name)
def test_count_mode_equals_rg_c_and_files_mode_equals_rg_l_on_real_trees(tree: Path) -> None:
    for extra_params, flags in [({}, []), ({"case_insensitive": True, "type": "py"}, ["-i", "--type", "py"])]:
        params = {"pattern": "def _", "path": str(tree), **extra_params}
        counted = [e for c in all_pages(tree, {**params, "output_mode": "count"}) for e in parse_listing(c)]
        ours = {path: int(n) for path, n in (e.rsplit(": ", 1) for e in counted)}
        theirs = {}
        for record in rg("-c", "--null", *flags, "-e", "def _", "--", str(tree), cwd=tree).splitlines():
            path, _, n = record.partition("\0")
            theirs[path] = int(n)
        assert len(theirs) > 10 and ours == theirs
        files_params = {**params, "output_mode": "files_with_matches"}
        listed = [e for c in all_pages(tree, files_params, page=7) for e in parse_listing(c)]
        assert len(listed) == len(set(listed))
        reference = rg("-l", "--null", *flags, "-e", "def _", "--", str(tree), cwd=tree).split("\0")
        assert set(listed) == set(reference) - {""}
        mtimes = [os.stat(p).st_mtime for p in listed]
        assert mtimes == sorted(mtimes, reverse=True)  # newest first, across pages


def test_context_lines_equal_rg_json_context() -> None:
    tree = ROOT / "internal"
    params = {"pattern": "raise ToolError", "path": str(tree), "before": 2, "after": 1}
    matches: set[tuple[str, int, str]] = set()
    context: set[tuple[str, int, str]] = set()
    for content in all_pages(tree, params, page=40):
        m, c = parse_content(content)
        assert not (m & matches)  # pages never repeat a match
        matches |= m
        context |= c
    context -= matches  # a match on another page is context on this one
    ref_matches, ref_context = set(), set()
    for line in rg("--json", "-B", "2", "-A", "1", "-e", "raise ToolError", "--", str(tree), cwd=tree).splitlines():
        event = json.loads(line)
        if event["type"] in ("match", "context"):
            data = event["data"]
            entry = (data["path"]["text"], data["line_number"], data["lines"]["text"].rstrip("\n"))
            (ref_matches if event["type"] == "match" else ref_context).add(entry)
    assert len(ref_matches) > 20
    assert matches == ref_matches and context == ref_context


# --- against a Python reference over generated trees ------------------------------------------


def build(files: dict[str, list[str]]) -> Path:
    ws = Path(os.path.realpath(tempfile.mkdtemp()))
    (ws / "sub").mkdir()
    for i, (name, lines) in enumerate(files.items()):
        (ws / ("sub" if i % 2 else "") / name).write_text("".join(line + "\n" for line in lines))
    (ws / "sub" / "blob.bin").write_bytes(b"\x00\x01needle\x00" * 10)
    return ws


def reference(ws: Path, case_insensitive: bool) -> dict[str, list[tuple[int, str, bool]]]:
    """path -> [(line number, text, matches)] for every text file of the tree."""
    out = {}
    for path in [*ws.iterdir(), *(ws / "sub").iterdir()]:
        if path.is_file() and path.name != "blob.bin":
            lines = path.read_text().splitlines()
            folded = [t.lower() if case_insensitive else t for t in lines]
            out[str(path)] = [(n, t, "needle" in f) for n, (t, f) in enumerate(zip(lines, folded, strict=True), 1)]
    return out


@given(
    st.dictionaries(names, contents, min_size=1, max_size=5),
    st.sampled_from(["content", "files_with_matches", "count"]),
    st.booleans(),
    st.integers(0, 3),
    st.integers(0, 3),
    st.booleans(),
)
def test_modes_and_context_equal_a_reference(
    files: dict[str, list[str]], mode: str, case_insensitive: bool, before: int, after: int, use_rg: bool
) -> None:
    ws = build(files)
    ref = reference(ws, case_insensitive)
    params = {"pattern": "needle", "literal_text": True, "output_mode": mode, "case_insensitive": case_insensitive}
    params |= {"before": before, "after": after}
    pages = all_pages(ws, params, page=3, use_rg=use_rg)
    if mode == "files_with_matches":
        listed = [e for c in pages for e in parse_listing(c)]
        assert sorted(listed) == sorted(p for p, lines in ref.items() if any(m for _, _, m in lines))
    elif mode == "count":
        counted = [e for c in pages for e in parse_listing(c)]
        expected = {p: sum(m for _, _, m in lines) for p, lines in ref.items()}
        assert dict(e.rsplit(": ", 1) for e in counted) == {p: str(n) for p, n in expected.items() if n}
    else:
        matches: set[tuple[str, int, str]] = set()
        context: set[tuple[str, int, str]] = set()
        for content in pages:
            m, c = parse_content(content)
            assert not (m & matches)
            matches |= m
            context |= c
        expected_matches = {(p, n, t) for p, lines in ref.items() for n, t, m in lines if m}
        numbers = {(p, n) for p, n, _ in expected_matches}
        expected_context = {
            (p, n, t)
            for p, lines in ref.items()
            for n, t, m in lines
            if not m and any((p, k) in numbers for k in range(n - after, n + before + 1))
        }
        assert matches == expected_matches
        assert context - matches == expected_context


# --- the options one by one --------------------------------------------------------------------


def test_context_is_marked_merged_and_gaps_are_shown(workspace: Path, run: Runner) -> None:
    (workspace / "t.txt").write_text("a\nfoo\nbar\nbaz\nq\nw\ne\nfoo bar\nend\nfoo\n")
    r = run("grep", {"pattern": "foo", "context": 1})
    assert r.content.split("\n\n")[1].splitlines()[1:] == [
        "  Line 1- a", "  Line 2: foo", "  Line 3- bar", "  --",
        "  Line 7- e", "  Line 8: foo bar", "  Line 9- end", "  Line 10: foo",
    ]  # fmt: skip
    r = run("grep", {"pattern": "foo", "before": 0, "after": 2, "context": 5})
    assert "  Line 4- baz" in r.content and "  Line 1- a" not in r.content


def test_multiline_and_case_insensitive_with_a_type(workspace: Path) -> None:
    (workspace / "a.py").write_text("class Foo:\n    x = 1\n\nclass Bar:\n    pass\n")
    (workspace / "b.txt").write_text("CLASS FOO:\n    x = 1\n")
    for use_rg in (True, False):
        r = run_grep(workspace, {"pattern": r"class Foo:.*?x = 1", "multiline": True}, use_rg=use_rg)
        assert parse_content(r.content)[0] == {
            (str(workspace / "a.py"), 1, "class Foo:"),
            (str(workspace / "a.py"), 2, "    x = 1"),
        }
    r = run_grep(workspace, {"pattern": "class foo", "case_insensitive": True})
    assert "b.txt" in r.content and "a.py" in r.content
    r = run_grep(workspace, {"pattern": "class foo", "case_insensitive": True, "type": "py"})
    assert "b.txt" not in r.content and "a.py" in r.content
    r = run_grep(workspace, {"pattern": "class foo", "case_insensitive": True, "include": "*.py"}, use_rg=False)
    assert "b.txt" not in r.content and "a.py" in r.content


def test_unknown_type_names_close_ones(workspace: Path) -> None:
    (workspace / "a.py").write_text("x\n")
    r = run_grep(workspace, {"pattern": "x", "type": "pyhton"})
    assert r.is_error and r.metadata["error"] == "unknown_type"
    assert r.content.startswith("Unknown file type 'pyhton'.") and "python" in r.metadata["close_types"]
    r = run_grep(workspace, {"pattern": "x", "type": "py"}, use_rg=False)
    assert r.is_error and r.metadata["error"] == "type_needs_rg" and "include" in r.content


def test_pages_do_not_overlap_and_repeat_identically(workspace: Path, run: Runner) -> None:
    for i in range(4):
        f = workspace / f"f{i}.txt"
        f.write_text("".join(f"hit {i}.{n}\n" for n in range(7)))
        os.utime(f, (1_000_000 + i, 1_000_000 + i))
    first = run("grep", {"pattern": "hit", "head_limit": 10})
    assert first.content.endswith("(Showing 1–10 of 28; use offset=10 to continue.)")
    assert run("grep", {"pattern": "hit", "head_limit": 10}).content == first.content
    second = run("grep", {"pattern": "hit", "head_limit": 10, "offset": 10})
    third = run("grep", {"pattern": "hit", "head_limit": 10, "offset": 20})
    assert third.content.endswith("(Showing 21–28 of 28; this is the last page.)")
    pages = [parse_content(r.content)[0] for r in (first, second, third)]
    assert sum(map(len, pages)) == 28 and len(set().union(*pages)) == 28
    texts = [t for r in (first, second, third) for t in re.findall(r"Line \d+: (.*)", r.content)]
    assert texts == [f"hit {i}.{n}" for i in (3, 2, 1, 0) for n in range(7)]  # newest file first
    files = run("grep", {"pattern": "hit", "output_mode": "files_with_matches", "head_limit": 3, "offset": 1})
    assert parse_listing(files.content) == [str(workspace / f"f{i}.txt") for i in (2, 1, 0)]
    past = run("grep", {"pattern": "hit", "offset": 28})
    assert past.is_error and past.metadata["error"] == "offset_out_of_range" and "below 28" in past.content


def test_the_byte_cap_cuts_a_page_and_the_note_continues_exactly(workspace: Path) -> None:
    (workspace / "wide.txt").write_text("".join(f"{n} needle {'é' * 600}\n" for n in range(200)))
    config = Config(lsp_enabled=False, max_output_bytes=16 * 1024)
    session = make_session(workspace, config=config)
    r = asyncio.run(session.run("grep", {"pattern": "needle", "head_limit": 1000}))
    shown = r.metadata["shown"]
    assert 0 < shown < 200 and len(r.content.encode()) <= 16 * 1024
    assert r.content.endswith(f"(Showing 1–{shown} of 200; use offset={shown} to continue.)")
    nxt = asyncio.run(session.run("grep", {"pattern": "needle", "head_limit": 1000, "offset": shown}))
    assert re.search(r"Line (\d+): ", nxt.content)[1] == str(shown + 1)  # type: ignore[index]
    long_line = re.search(r"Line 1: (.*)", r.content)[1]  # type: ignore[index]
    assert long_line.endswith("...") and len(long_line) == 503 and "\ufffd" not in long_line


def test_new_options_through_the_cli(workspace: Path) -> None:
    (workspace / "a.txt").write_text("one\ntwo\n")
    proc = subprocess.run(
        [sys.executable, "-m", "cmd.tools", "--cwd", str(workspace), "grep",
         '{"pattern": "TWO", "case_insensitive": true, "output_mode": "count"}'],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.stdout.strip().endswith(f"{workspace}/a.txt: 1"), proc.stdout


@pytest.mark.parametrize("bad", [{"output_mode": "lines"}, {"context": -1}, {"context": 21}, {"head_limit": 0}])
def test_bad_options_are_clear_errors(workspace: Path, run: Runner, bad: dict[str, Any]) -> None:
    r = run("grep", {"pattern": "x", **bad})
    assert r.is_error and r.metadata["error"] == "invalid_params" and next(iter(bad)) in r.content


@given(st.dictionaries(names, contents, min_size=1, max_size=4), st.booleans(), st.booleans())
def test_multiline_matches_equal_a_reference(files: dict[str, list[str]], case_insensitive: bool, use_rg: bool) -> None:
    ws = build(files)
    flags = re.M | re.S | (re.I if case_insensitive else 0)
    regex = re.compile(r"e\n(?:nope|needle)", flags)
    expected = set()
    for path, lines in reference(ws, False).items():
        text = Path(path).read_text()
        for found in regex.finditer(text):
            first = text.count("\n", 0, found.start()) + 1
            last = first + text.count("\n", found.start(), found.end() - 1)
            expected |= {(path, n, lines[n - 1][1]) for n in range(first, last + 1)}
    params = {"pattern": r"e\n(?:nope|needle)", "multiline": True, "case_insensitive": case_insensitive}
    matches = set()
    for content in all_pages(ws, params, page=4, use_rg=use_rg):
        matches |= parse_content(content)[0]
    assert matches == expected


def test_context_of_a_file_whose_name_is_not_utf8(tmp_path: Path) -> None:
    """With context, rg is asked again for the page's files only, by the names it printed: an
    undecodable one goes back byte for byte."""
    ws = tmp_path / "ws"
    ws.mkdir()
    odd = os.fsdecode(bytes(ws) + b"/odd-\xff.txt")
    with open(odd, "w", encoding="utf-8") as file:
        file.write("before\nneedle\nafter\n")
    (ws / "plain.txt").write_text("one\nneedle here\ntwo\n")
    response = run_grep(ws, {"pattern": "needle", "context": 1})
    assert not response.is_error, response.content
    odd_lines = ("Line 1- before", "Line 2: needle", "Line 3- after")
    for line in (*odd_lines, "Line 1- one", "Line 2: needle here", "Line 3- two"):
        assert line in response.content


@pytest.mark.parametrize("opening", [b"", b"\xef\xbb\xbf", b"\xff\xfe"])
def test_page_context_read_from_the_files_is_what_rg_prints(tmp_path: Path, opening: bytes) -> None:
    """The page's context comes from its files read directly (CRLF, a last line without LF,
    windows clipped at both ends), or from rg again when a file opens with a byte-order mark or
    holds a NUL: the same lines either way as rg -B/-A prints them."""
    ws = tmp_path / "ws"
    ws.mkdir()
    body = "first needle\r\nsecond\r\nthird\nneedle again\nfifth\nsixth\nseventh needle"
    if opening == b"\xff\xfe":
        (ws / "a.txt").write_bytes(opening + body.encode("utf-16-le"))
    else:
        (ws / "a.txt").write_bytes(opening + body.encode())
    (ws / "b.txt").write_bytes(b"x\nneedle\x00binary\ny\n")
    (ws / "c.txt").write_text("one\ntwo\nneedle three\n")
    response = run_grep(ws, {"pattern": "needle", "before": 2, "after": 2})
    assert not response.is_error, response.content
    ours = {(p, n, t) for p, n, t in set.union(*parse_content(response.content))}
    reference = set()
    for line in rg("--json", "-B", "2", "-A", "2", "-e", "needle", "--", str(ws), cwd=ws).splitlines():
        event = json.loads(line)
        if event["type"] in ("match", "context"):
            data = event["data"]
            text = data["lines"].get("text", "").rstrip("\n").rstrip("\r")
            reference.add((data["path"]["text"], data["line_number"], text))
    assert ours == reference
