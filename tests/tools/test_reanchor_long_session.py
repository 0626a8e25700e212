"""Re-anchoring in a long session: the read tracker keeps what it needs for every file read (a byte
budget, not a count), so an edit after an outside change (a formatter pass) still lands after the
session viewed 40 or 120 other files."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from agent_toolsmith.file_tracker import MAX_SNAPSHOT_BYTES, FileTracker
from agent_toolsmith.session import Session

from tests.conftest import make_session

MODULE = '''import os


def handler_{n}(request):
    value = request.get("value")
    if value is None:
        return "missing"
    return str(value).upper()
'''


def run(session: Session, tool: str, params: dict[str, object]) -> tuple[bool, str]:
    r = asyncio.run(session.run(tool, params))
    return r.is_error, r.content


def formatter_pass(path: Path) -> None:
    """What an outside formatter does far from the edited lines: sorts an import in at the top."""
    path.write_text("import logging\n" + path.read_text())


@pytest.mark.parametrize("files", [40, 120])
def test_edit_after_a_formatter_pass_re_anchors_after_many_files_were_read(workspace: Path, files: int) -> None:
    session = make_session(workspace)
    for n in range(files):
        (workspace / f"m{n}.py").write_text(MODULE.format(n=n))
        error, content = run(session, "view", {"file_path": f"m{n}.py"})
        assert not error, content
    target = workspace / "m0.py"  # the first file read: the least recently used
    formatter_pass(target)
    error, content = run(session, "edit", {"file_path": "m0.py", "old_string": '        return "missing"',
                                           "new_string": '        return "absent"'})  # fmt: skip
    assert not error, content
    assert "had changed since you read it" in content
    assert target.read_text() == "import logging\n" + MODULE.format(n=0).replace('"missing"', '"absent"')


def test_the_byte_budget_drops_the_least_recently_used_first(workspace: Path) -> None:
    # A small budget in a real session: the file read first is past it, so its outside change is
    # refused as before; the one read last still re-anchors.
    session = make_session(workspace)
    size = len(MODULE.format(n=0).encode())
    session.ctx.files = FileTracker(snapshot_budget=3 * size)
    for n in range(4):
        (workspace / f"m{n}.py").write_text(MODULE.format(n=n))
        assert not run(session, "view", {"file_path": f"m{n}.py"})[0]
    assert session.ctx.files.snapshot_bytes == 3 * size
    for n in (0, 3):
        formatter_pass(workspace / f"m{n}.py")
    edit = {"old_string": '        return "missing"', "new_string": '        return "absent"'}
    error, content = run(session, "edit", {"file_path": "m0.py", **edit})
    assert error and "modified since it was last read" in content
    error, content = run(session, "edit", {"file_path": "m3.py", **edit})
    assert not error and "had changed since you read it" in content, content


def test_a_file_over_the_size_cap_is_kept_as_its_digest_only(tmp_path: Path) -> None:
    tracker = FileTracker()
    big = tmp_path / "big.txt"
    data = b"x" * (MAX_SNAPSHOT_BYTES + 1)
    big.write_bytes(data)
    tracker.record_read(big, data, big.stat())
    assert tracker.snapshot_bytes == 0
    assert tracker.read_state(big, data, big.stat()).kind == "unchanged"  # the digest says so
