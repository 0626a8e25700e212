"""Nothing hangs, nothing is unbounded, every failure is a clear message; files as the user left them."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.session import Session


def session(workspace: Path) -> Session:
    return Session(workspace, config=Config(lsp_enabled=False))


def run(s: Session, tool: str, params: dict[str, Any]) -> Any:
    return asyncio.run(asyncio.wait_for(s.run(tool, params), 30))


def test_fifo_and_dev_zero_views_return_errors_promptly(workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    s = session(workspace)
    started = time.monotonic()
    assert "FIFO" in run(s, "view", {"file_path": "pipe"}).content
    assert "character device" in run(s, "view", {"file_path": "/dev/zero"}).content
    assert time.monotonic() - started < 5


def test_a_change_that_restores_size_and_mtime_is_still_detected(workspace: Path) -> None:
    target = workspace / "f.txt"
    target.write_text("aaaa\n")
    s = session(workspace)
    run(s, "view", {"file_path": "f.txt"})
    st = target.stat()
    target.write_text("bbbb\n")  # same size
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the old mtime
    r = run(s, "edit", {"file_path": "f.txt", "old_string": "aaaa", "new_string": "cccc"})
    assert r.is_error and "has been modified since it was last read" in r.content
    assert target.read_text() == "bbbb\n"


def test_edits_keep_owner_and_mode_break_hard_links_and_refuse_read_only(workspace: Path) -> None:
    shared = workspace / "shared.txt"
    shared.write_text("one\n")
    os.link(shared, workspace / "other-name.txt")
    shared.chmod(0o640)
    if os.geteuid() == 0:
        os.chown(shared, 65534, 65534)
    locked = workspace / "locked.txt"
    locked.write_text("x\n")
    locked.chmod(0o444)
    s = session(workspace)
    for name in ("shared.txt", "locked.txt"):
        run(s, "view", {"file_path": name})
    edited = run(s, "edit", {"file_path": "shared.txt", "old_string": "one", "new_string": "two"})
    assert not edited.is_error and "link is broken" in edited.content
    assert (workspace / "other-name.txt").read_text() == "one\n" and shared.read_text() == "two\n"
    st = shared.stat()
    assert st.st_nlink == 1 and st.st_mode & 0o777 == 0o640
    if os.geteuid() == 0:
        assert (st.st_uid, st.st_gid) == (65534, 65534)
    refused = run(s, "edit", {"file_path": "locked.txt", "old_string": "x", "new_string": "y"})
    assert refused.is_error and "is read-only (mode 0444)" in refused.content and locked.read_text() == "x\n"


def test_patch_keeps_each_lines_own_line_ending(workspace: Path) -> None:
    mixed = workspace / "mixed.txt"
    mixed.write_bytes(b"a\r\nb\nc\r\nd\n")
    s = session(workspace)
    run(s, "view", {"file_path": "mixed.txt"})
    patch = "*** Begin Patch\n*** Update File: mixed.txt\n@@\n a\n-b\n+B\n+inserted\n c\n*** End Patch"
    assert not run(s, "patch", {"patch_text": patch}).is_error
    assert mixed.read_bytes() == b"a\r\nB\ninserted\nc\r\nd\n"


@pytest.mark.parametrize(
    ("tool", "params", "expected"),
    [
        ("view", {"file_path": "a\0b"}, "contains a NUL character"),
        ("view", {"file_path": "\ud800"}, "unpaired surrogate"),
        ("write", {"file_path": "x" * 300, "content": "x"}, "is too long"),
        ("bash", {"command": "echo \ud800"}, "unpaired surrogate"),
        ("bash", {"command": "echo " + "x" * 200_000}, "over the 100000-byte limit"),
        ("grep", {"pattern": "a\0b"}, "contains a NUL character"),
        ("lsp", {"file_path": "f.txt", "operation": "hover", "line": 2**31, "character": 1}, "must be at most"),
        ("fetch", {"url": "http://\ud800/"}, "Invalid URL"),
        ("view", {"file_path": "loop"}, "symbolic link that loops"),
    ],
)
def test_hostile_inputs_get_specific_messages(
    workspace: Path, tool: str, params: dict[str, Any], expected: str
) -> None:
    (workspace / "f.txt").write_text("x\n")
    (workspace / "loop").symlink_to("loop")
    r = run(session(workspace), tool, params)
    assert r.is_error and expected in r.content, r.content
    assert not r.content.startswith("Internal error")


def test_errors_quote_at_most_a_few_hundred_characters_of_input(workspace: Path) -> None:
    huge = "q" * 10_000_000
    s = session(workspace)
    for tool, params in [
        ("view", {"file_path": huge}),
        ("skill", {"name": huge}),
        ("fetch", {"url": "http://" + huge}),
        (huge, {}),
        ("view", {huge: 1}),
    ]:
        r = run(s, tool, params)
        assert r.is_error and len(r.content) < 2000, (tool, len(r.content))


def test_an_unwritable_directory_is_a_clear_error(workspace: Path) -> None:
    import subprocess

    locked = workspace / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    immutable = False
    if os.geteuid() == 0:  # root writes anywhere chmod allows nothing; an immutable directory stops it
        made = subprocess.run(["chattr", "+i", str(locked)], capture_output=True, text=True, timeout=30)
        if made.returncode != 0:
            pytest.skip(f"cannot make a directory unwritable for root here (chattr: {made.stderr.strip()})")
        immutable = True
    try:
        r = run(session(workspace), "write", {"file_path": "locked/new.txt", "content": "x"})
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(locked)], check=True, timeout=30)
        locked.chmod(0o755)
    assert r.is_error and "Nothing was changed." in r.content, r.content
    assert "permission denied" in r.content or "operation not permitted" in r.content
    assert "Internal error" not in r.content
    assert not (locked / "new.txt").exists() and os.listdir(locked) == []
