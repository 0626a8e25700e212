"""Checkpoints: a session rewinds what its file tools changed since a checkpoint."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.errors import ToolError
from agent_toolsmith.session import Session


def _session(workspace: Path, **kwargs: Any) -> Session:
    return Session(workspace, config=Config(lsp_enabled=False), **kwargs)


async def _ok(session: Session, tool: str, params: dict[str, Any]) -> None:
    response = await session.run(tool, params)
    assert not response.is_error, response.content


def test_rewind_restores_an_edit_removes_a_created_file_and_restores_a_deleted_one(workspace: Path) -> None:
    (workspace / "a.py").write_text("x = 1\n")
    (workspace / "gone.txt").write_text("keep me\n")
    (workspace / "old.txt").write_text("moved\n")

    async def main() -> None:
        async with _session(workspace) as session:
            for name in ("a.py", "gone.txt", "old.txt"):
                await _ok(session, "view", {"file_path": name})
            checkpoint = session.checkpoint()
            await _ok(session, "edit", {"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"})
            await _ok(session, "edit", {"file_path": "a.py", "old_string": "x = 2", "new_string": "x = 3"})
            await _ok(session, "write", {"file_path": "new/created.txt", "content": "new\n"})
            patch = (
                "*** Begin Patch\n*** Delete File: gone.txt\n"
                "*** Update File: old.txt\n*** Move to: renamed.txt\n@@\n-moved\n+moved and changed\n"
                "*** End Patch"
            )
            await _ok(session, "patch", {"patch_text": patch})
            kinds = {c.path.name: c.kind for c in session.changes(since=checkpoint)}
            assert kinds == {"a.py": "changed", "created.txt": "created", "gone.txt": "deleted",
                             "old.txt": "deleted", "renamed.txt": "created"}  # fmt: skip
            result = await session.rewind(checkpoint)
            assert result.conflicts == [] and len(result.restored) == 5
            assert session.changes(since=checkpoint) == []
            # The session may edit the restored file at once (it knows its content).
            await _ok(session, "edit", {"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 4"})

    asyncio.run(main())
    assert (workspace / "a.py").read_text() == "x = 4\n"
    assert not (workspace / "new" / "created.txt").exists()
    assert (workspace / "gone.txt").read_text() == "keep me\n"
    assert (workspace / "old.txt").read_text() == "moved\n" and not (workspace / "renamed.txt").exists()


def test_a_file_changed_by_someone_else_is_reported_not_overwritten_unless_forced(workspace: Path) -> None:
    (workspace / "a.txt").write_text("one\n")
    (workspace / "b.txt").write_text("bee\n")

    async def main() -> None:
        async with _session(workspace) as session:
            await _ok(session, "view", {"file_path": "a.txt"})
            await _ok(session, "view", {"file_path": "b.txt"})
            checkpoint = session.checkpoint()
            await _ok(session, "write", {"file_path": "a.txt", "content": "two\n"})
            await _ok(session, "write", {"file_path": "b.txt", "content": "bee two\n"})
            (workspace / "a.txt").write_text("the user's\n")  # not through the session's tools
            result = await session.rewind(checkpoint)
            assert result.conflicts == [workspace / "a.txt"] and result.restored == [workspace / "b.txt"]
            assert "changed by someone else" in result.summary()
            assert (workspace / "a.txt").read_text() == "the user's\n"
            assert (workspace / "b.txt").read_text() == "bee\n"
            forced = await session.rewind(checkpoint, force=True)
            assert forced.restored == [workspace / "a.txt"] and forced.conflicts == []

    asyncio.run(main())
    assert (workspace / "a.txt").read_text() == "one\n"


def test_checkpoints_survive_across_sessions_with_the_same_id(workspace: Path) -> None:
    async def first() -> str:
        async with _session(workspace, session_id="carried") as session:
            checkpoint = session.checkpoint()
            await _ok(session, "write", {"file_path": "made.txt", "content": "x\n"})
            return checkpoint

    checkpoint = asyncio.run(first())

    async def second() -> None:
        async with _session(workspace, session_id="carried") as session:
            assert [c.path.name for c in session.changes(since=checkpoint)] == ["made.txt"]
            await session.rewind(checkpoint)

    asyncio.run(second())
    assert not (workspace / "made.txt").exists()


def test_an_unknown_checkpoint_is_a_clear_error(workspace: Path) -> None:
    async def main() -> None:
        async with _session(workspace) as session:
            known = session.checkpoint()
            with pytest.raises(ToolError, match=rf"Unknown checkpoint 'nope'.*{known}"):
                await session.rewind("nope")

    asyncio.run(main())


def test_a_session_without_a_checkpoint_records_nothing(workspace: Path) -> None:
    async def main() -> Session:
        async with _session(workspace) as session:
            await _ok(session, "write", {"file_path": "x.txt", "content": "x\n"})
            return session

    session = asyncio.run(main())
    assert not (session.ctx.state.location() / "sessions" / session.session_id / "changes").exists()


@pytest.mark.parametrize("replacement", ["fifo", "symlink to /dev/zero"])
def test_rewind_leaves_a_file_replaced_by_a_special_file_alone_and_answers_at_once(
    workspace: Path, replacement: str
) -> None:
    """A FIFO (or a link to an endless device) where the session's file was is reported as
    changed by someone else, never opened: the rewind neither hangs nor reads without bound."""
    import os
    import time

    target = workspace / "a.py"
    target.write_text("x = 1\n")
    (workspace / "b.py").write_text("y = 1\n")

    async def main() -> None:
        async with _session(workspace) as session:
            await _ok(session, "view", {"file_path": "a.py"})
            await _ok(session, "view", {"file_path": "b.py"})
            checkpoint = session.checkpoint()
            await _ok(session, "edit", {"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"})
            await _ok(session, "edit", {"file_path": "b.py", "old_string": "y = 1", "new_string": "y = 2"})
            target.unlink()
            if replacement == "fifo":
                os.mkfifo(target)
            else:
                target.symlink_to("/dev/zero")
            started = time.monotonic()
            result = await asyncio.wait_for(session.rewind(checkpoint, force=True), 30)
            assert time.monotonic() - started < 5
            assert result.conflicts == [target] and result.restored == [workspace / "b.py"]

    asyncio.run(main())
    assert (workspace / "b.py").read_text() == "y = 1\n"
    assert target.is_fifo() if replacement == "fifo" else os.readlink(target) == "/dev/zero"


def test_a_change_log_replaced_by_a_fifo_or_a_link_is_refused_at_once(workspace: Path) -> None:
    """The log is read only as a regular file of the user's own: a FIFO planted in its place (by a
    command of the session's own user) answers at once with a clear error, never a hang."""
    import os
    import time

    (workspace / "a.py").write_text("x = 1\n")

    async def main() -> None:
        async with _session(workspace) as session:
            await _ok(session, "view", {"file_path": "a.py"})
            checkpoint = session.checkpoint()
            await _ok(session, "edit", {"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"})
            log = session.ctx.state.location() / "sessions" / session.session_id / "changes" / "log.jsonl"
            log.unlink()
            os.mkfifo(log)
            started = time.monotonic()
            with pytest.raises(ToolError) as raised:
                await asyncio.wait_for(session.rewind(checkpoint), 30)
            assert time.monotonic() - started < 5
            assert raised.value.metadata["error"] == "checkpoint_log_unusable"

    asyncio.run(main())
    assert (workspace / "a.py").read_text() == "x = 2\n"
