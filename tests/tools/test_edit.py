from __future__ import annotations

import asyncio
import codecs
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from agent_toolsmith.session import Session
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import Runner, make_session
from tests.helpers import apply_unified_diff

ROOT = Path(__file__).resolve().parents[2]


def read_then(run: Runner, path: str) -> None:
    r = run("view", {"file_path": path})
    assert not r.is_error, r.content


def test_edit_requires_read_and_reports_diff(workspace: Path, run: Runner) -> None:
    f = workspace / "a.py"
    f.write_text("x = 1\ny = 2\n")
    r = run("edit", {"file_path": "a.py", "old_string": "y = 2", "new_string": "y = 3"})
    assert r.is_error and "You must read the file before editing it" in r.content
    read_then(run, "a.py")
    r = run("edit", {"file_path": "a.py", "old_string": "y = 2", "new_string": "y = 3"})
    assert not r.is_error, r.content
    assert f.read_text() == "x = 1\ny = 3\n"
    assert r.metadata["match"] == "exact" and r.metadata["first_changed_line"] == 2
    assert (r.metadata["additions"], r.metadata["removals"]) == (1, 1)
    assert apply_unified_diff("x = 1\ny = 2\n", r.metadata["diff"]) == "x = 1\ny = 3\n"
    assert "Note:" not in r.content


def test_fuzzy_match_adds_verify_note(workspace: Path, run: Runner) -> None:
    (workspace / "a.py").write_text("def f():\n    return 1   \n")
    read_then(run, "a.py")
    r = run("edit", {"file_path": "a.py", "old_string": "    return 1\n", "new_string": "    return 2\n"})
    assert not r.is_error and r.metadata["match"] == "trailing_whitespace"
    assert "tolerating trailing_whitespace differences" in r.content
    assert "@@ -1,2 +1,2 @@\n def f():\n-    return 1   \n+    return 2\n</result>" in r.content  # the diff to check


def test_first_line_slip_is_applied_once_and_said(workspace: Path, run: Runner) -> None:
    (workspace / "a.py").write_text("class A:\n    def f(self):\n        return 1\n")
    read_then(run, "a.py")
    r = run("edit", {"file_path": "a.py", "old_string": "def f(self):\n        return 1",
                     "new_string": "    def f(self):\n        return 2"})  # fmt: skip
    assert not r.is_error and r.metadata["match"] == "first_line_indentation"
    assert (workspace / "a.py").read_text() == "class A:\n    def f(self):\n        return 2\n"
    assert "the whole line was replaced (the indentation is not doubled)" in r.content


def test_multiedit_numbers_edits_from_one_and_shows_the_closest_region(workspace: Path, run: Runner) -> None:
    (workspace / "m.py").write_text("alpha = 1\nbeta = 2\n")
    read_then(run, "m.py")
    r = run("multiedit", {"file_path": "m.py", "edits": [
        {"old_string": "alpha = 1", "new_string": "alpha = 10"},
        {"old_string": "betta = 2", "new_string": "beta = 20"},
    ]})  # fmt: skip
    assert r.is_error and r.content.startswith("Edit 2 failed, so no changes were made")
    assert "The closest region in the file" in r.content and "     2|beta = 2" in r.content


def test_create_delete_and_errors(workspace: Path, run: Runner) -> None:
    r = run("edit", {"file_path": "new/b.txt", "old_string": "", "new_string": "hello\nworld\n"})
    assert not r.is_error and (workspace / "new/b.txt").read_text() == "hello\nworld\n"
    r = run("edit", {"file_path": "new/b.txt", "old_string": "", "new_string": "again"})
    assert r.is_error and "already exists" in r.content
    r = run("edit", {"file_path": "new/b.txt", "old_string": "world\n", "new_string": ""})
    assert not r.is_error and (workspace / "new/b.txt").read_text() == "hello\n"
    r = run("edit", {"file_path": "new/b.txt", "old_string": "hello", "new_string": "hello"})
    assert r.is_error and "identical" in r.content
    r = run("edit", {"file_path": "missing.txt", "old_string": "a", "new_string": "b"})
    assert r.is_error and "File not found" in r.content


ENCODINGS = [
    ("utf-8", b"", "\n"),
    ("utf-8", b"", "\r\n"),
    ("utf-8", codecs.BOM_UTF8, "\r\n"),
    ("latin-1", b"", "\n"),
    ("utf-16-le", codecs.BOM_UTF16_LE, "\r\n"),
]
LINES = st.lists(st.sampled_from(["alpha", "beta  ", "\tgamma", "délta", "", "epsilon = 1"]), min_size=1, max_size=12)


@given(LINES, st.sampled_from(ENCODINGS), st.data())
def test_bytes_outside_span_unchanged(lines: list[str], enc: tuple[str, bytes, str], data: st.DataObject) -> None:
    encoding, bom, eol = enc
    ws = Path(tempfile.mkdtemp())
    unique = f"UNIQUE-{data.draw(st.integers(0, 99))}"
    at = data.draw(st.integers(0, len(lines)))
    lines = [*lines[:at], unique, *lines[at:]]
    raw = bom + eol.join(lines).encode(encoding) + eol.encode(encoding)
    target = ws / "f.txt"
    target.write_bytes(raw)
    session = make_session(ws)
    asyncio.run(session.run("view", {"file_path": "f.txt"}))
    r = asyncio.run(session.run("edit", {"file_path": "f.txt", "old_string": unique, "new_string": "NEW\nLINE"}))
    assert not r.is_error, r.content
    expected = raw.replace(unique.encode(encoding), ("NEW" + eol + "LINE").encode(encoding))
    assert target.read_bytes() == expected


@given(LINES, st.text(st.sampled_from(list("xyz \n")), min_size=1, max_size=10))
def test_refused_edit_leaves_file_identical(lines: list[str], old: str) -> None:
    ws = Path(tempfile.mkdtemp())
    target = ws / "f.txt"
    raw = ("\r\n".join(lines) + "\r\n").encode()
    target.write_bytes(raw)
    session = make_session(ws)
    asyncio.run(session.run("view", {"file_path": "f.txt"}))
    r = asyncio.run(session.run("edit", {"file_path": "f.txt", "old_string": old, "new_string": "Q"}))
    if r.is_error:
        assert target.read_bytes() == raw


def test_multiedit_sequential_and_all_or_nothing(workspace: Path, run: Runner) -> None:
    f = workspace / "m.py"
    original = "a = 1\nb = 2\nc = 3\n"
    f.write_text(original)
    read_then(run, "m.py")
    bad = run(
        "multiedit",
        {"file_path": "m.py", "edits": [
            {"old_string": "a = 1", "new_string": "a = 10"},
            {"old_string": "zzz", "new_string": "q"},
        ]},
    )  # fmt: skip
    assert bad.is_error and bad.content.startswith("Edit 2 failed, so no changes were made")
    assert f.read_text() == original
    ok = run(
        "multiedit",
        {"file_path": "m.py", "edits": [
            {"old_string": "a = 1", "new_string": "a = 10"},
            {"old_string": "a = 10\nb = 2", "new_string": "a = 11\nb = 20"},
            {"old_string": "3", "new_string": "30", "replace_all": True},
        ]},
    )  # fmt: skip
    assert not ok.is_error, ok.content
    assert f.read_text() == "a = 11\nb = 20\nc = 30\n"
    assert ok.metadata["match"] == ["exact", "exact", "exact"]


def test_multiedit_create_then_edit_is_atomic(workspace: Path, run: Runner) -> None:
    bad = run(
        "multiedit",
        {"file_path": "n.txt", "edits": [
            {"old_string": "", "new_string": "one\ntwo\n"},
            {"old_string": "three", "new_string": "3"},
        ]},
    )  # fmt: skip
    assert bad.is_error and "Edit 2 failed" in bad.content  # the create is edit 1
    assert not (workspace / "n.txt").exists()
    ok = run(
        "multiedit",
        {"file_path": "n.txt", "edits": [
            {"old_string": "", "new_string": "one\ntwo\n"},
            {"old_string": "two", "new_string": "2"},
        ]},
    )  # fmt: skip
    assert not ok.is_error and (workspace / "n.txt").read_text() == "one\n2\n"


def test_twenty_concurrent_edits_all_land(workspace: Path) -> None:
    f = workspace / "c.txt"
    f.write_text("".join(f"line {i}\n" for i in range(20)))
    session: Session = make_session(workspace)

    async def main() -> list[bool]:
        await session.run("view", {"file_path": "c.txt"})
        calls = [
            session.run("edit", {"file_path": "c.txt", "old_string": f"line {i}\n", "new_string": f"LINE {i}\n"})
            for i in range(20)
        ]
        return [r.is_error for r in await asyncio.gather(*calls)]

    assert asyncio.run(main()) == [False] * 20
    assert f.read_text() == "".join(f"LINE {i}\n" for i in range(20))


def test_cli_view_then_edit_in_one_session(workspace: Path) -> None:
    (workspace / "f.txt").write_text("hello\n")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "cmd.tools", "--cwd", str(workspace), "--session", "e", *args],
            cwd=ROOT, capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    assert cli("view", '{"file_path": "f.txt"}').returncode == 0
    edited = cli("edit", '{"file_path": "f.txt", "old_string": "hello", "new_string": "bye"}')
    assert edited.returncode == 0, edited.stdout
    multi = cli("multiedit", '{"file_path": "f.txt", "edits": [{"old_string": "bye", "new_string": "ciao"}]}')
    assert multi.returncode == 0, multi.stdout
    assert (workspace / "f.txt").read_text() == "ciao\n"


@pytest.mark.parametrize("tool", ["edit", "multiedit"])
def test_unencodable_new_text_is_refused_cleanly(workspace: Path, run: Runner, tool: str) -> None:
    f = workspace / "l.txt"
    raw = "café\n".encode("latin-1") * 10
    f.write_bytes(raw)
    read_then(run, "l.txt")
    params = {"file_path": "l.txt", "old_string": "café", "new_string": "✓ 中", "replace_all": True}
    if tool == "multiedit":
        params = {"file_path": "l.txt", "edits": [params | {}]}
        params["edits"][0].pop("file_path")  # type: ignore[index, union-attr]
    r = run(tool, params)
    assert r.is_error and "cannot be written in this file's encoding" in r.content
    assert f.read_bytes() == raw
