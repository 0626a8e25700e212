from __future__ import annotations

import codecs
import os
from pathlib import Path

from tests.conftest import Runner
from tests.helpers import apply_unified_diff


def test_create_with_parents(workspace: Path, run: Runner) -> None:
    r = run("write", {"file_path": "a/b/new.py", "content": "print(1)\n"})
    assert not r.is_error, r.content
    assert (workspace / "a/b/new.py").read_text() == "print(1)\n"
    assert r.metadata["additions"] == 1 and r.metadata["created"]


def test_existing_requires_read_then_detects_change(workspace: Path, run: Runner) -> None:
    f = workspace / "f.txt"
    f.write_text("old\n")
    r = run("write", {"file_path": "f.txt", "content": "new\n"})
    assert r.is_error and "You must read the file before editing it" in r.content
    run("view", {"file_path": "f.txt"})
    f.write_text("changed by someone\n")
    os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 1000))
    r = run("write", {"file_path": "f.txt", "content": "new\n"})
    assert r.is_error and "has been modified since it was last read" in r.content
    assert f.read_text() == "changed by someone\n"


def test_overwrite_keeps_encoding_bom_eol_and_reports_diff(workspace: Path, run: Runner) -> None:
    f = workspace / "f.txt"
    old = codecs.BOM_UTF8 + b"one\r\ntwo\r\n"
    f.write_bytes(old)
    run("view", {"file_path": "f.txt"})
    r = run("write", {"file_path": "f.txt", "content": "one\nthree\n"})
    assert not r.is_error, r.content
    assert f.read_bytes() == codecs.BOM_UTF8 + b"one\r\nthree\r\n"
    assert apply_unified_diff("one\ntwo\n", r.metadata["diff"]) == "one\nthree\n"
    # A second write right after ours needs no new read.
    r = run("write", {"file_path": "f.txt", "content": "four\n"})
    assert not r.is_error, r.content


def test_identical_content(workspace: Path, run: Runner) -> None:
    (workspace / "f.txt").write_text("same\n")
    run("view", {"file_path": "f.txt"})
    r = run("write", {"file_path": "f.txt", "content": "same\n"})
    assert r.is_error and "already contains the exact content. No changes made." in r.content


def test_directory_refused(workspace: Path, run: Runner) -> None:
    (workspace / "d").mkdir()
    r = run("write", {"file_path": "d", "content": "x"})
    assert r.is_error and "directory" in r.content


def test_confinement_blocks_outside_and_symlink_escape(workspace: Path, run: Runner, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    r = run("write", {"file_path": str(outside / "x.txt"), "content": "x"})
    assert r.is_error and "outside the workspace" in r.content
    (workspace / "link").symlink_to(outside)
    r = run("write", {"file_path": "link/x.txt", "content": "x"})
    assert r.is_error and "outside the workspace" in r.content
    assert not (outside / "x.txt").exists()
    r = run("write", {"file_path": ".git/config", "content": "x"})
    assert r.is_error and "protected" in r.content


def test_permission_denied(workspace: Path) -> None:
    import asyncio

    from agent_toolsmith.permission import read_only_policy

    from tests.conftest import make_session

    session = make_session(workspace, asker=read_only_policy)
    r = asyncio.run(session.run("write", {"file_path": "x.txt", "content": "x"}))
    assert r.is_error and r.content.startswith("Permission denied")
    assert not (workspace / "x.txt").exists()
