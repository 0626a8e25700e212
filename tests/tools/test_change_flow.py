"""The change flow's one worker hop: plan, then the permission ask on the event loop while the
worker waits, then the commit — and cancellation at each point."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent_toolsmith.cancel import CancelToken
from agent_toolsmith.config import Config
from agent_toolsmith.permission import Decision, PermissionRequest
from agent_toolsmith.session import Session

#: Bound on every wait in these tests.
WAIT_S = 30.0


def test_cancelling_while_the_permission_prompt_is_open_answers_and_writes_nothing(workspace: Path) -> None:
    target = workspace / "f.txt"
    target.write_text("original\n")
    asked = asyncio.Event()
    prompt_closed: list[str] = []

    async def ask(request: PermissionRequest) -> Decision:
        if request.tool == "view":
            return Decision.ALLOW_ONCE
        asked.set()
        try:
            await asyncio.sleep(WAIT_S)  # the user never answers
        except asyncio.CancelledError:
            prompt_closed.append(request.tool)
            raise
        return Decision.ALLOW_ONCE

    async def main() -> None:
        session = Session(workspace, asker=ask, config=Config(lsp_enabled=False))
        await session.run("view", {"file_path": "f.txt"})
        token = CancelToken()
        call = asyncio.ensure_future(
            session.run("edit", {"file_path": "f.txt", "old_string": "original", "new_string": "mine"}, cancel=token)
        )
        await asyncio.wait_for(asked.wait(), WAIT_S)
        token.cancel()
        response = await asyncio.wait_for(call, WAIT_S)
        assert response.is_error and response.metadata.get("aborted") is True, response.content
        for _ in range(100):  # the prompt's cancellation is delivered on the next loop turns
            if prompt_closed:
                break
            await asyncio.sleep(0)

    asyncio.run(main())
    assert target.read_text() == "original\n"
    assert prompt_closed == ["edit"]  # the open prompt was withdrawn, not left waiting


def test_the_plan_is_committed_after_the_prompt_and_a_denial_writes_nothing(workspace: Path) -> None:
    target = workspace / "f.txt"
    target.write_text("a\nb\n")
    answers = {"first": Decision.ALLOW_ONCE, "second": Decision.DENY}
    asked: list[str] = []

    async def ask(request: PermissionRequest) -> Decision:
        if request.tool == "view":
            return Decision.ALLOW_ONCE
        asked.append(target.read_text())  # what the file holds while the prompt is open
        return answers["first"] if len(asked) == 1 else answers["second"]

    async def main() -> None:
        session = Session(workspace, asker=ask, config=Config(lsp_enabled=False))
        await session.run("view", {"file_path": "f.txt"})
        edits = [{"old_string": "a", "new_string": "A"}, {"old_string": "b", "new_string": "B"}]
        response = await session.run("multiedit", {"file_path": "f.txt", "edits": edits})
        assert not response.is_error, response.content
        refused = await session.run("edit", {"file_path": "f.txt", "old_string": "A", "new_string": "Z"})
        assert refused.is_error and refused.metadata.get("error") == "denied", refused.metadata

    asyncio.run(main())
    assert asked == ["a\nb\n", "A\nB\n"]  # nothing written before each answer
    assert target.read_text() == "A\nB\n"


def test_a_write_allowed_for_the_session_commits_without_asking_again(workspace: Path) -> None:
    # The worker skips the hop to the event loop only when the answer is known without asking:
    # the edit allowed for the session is not asked again; another file, or another tool, is.
    target, other = workspace / "f.txt", workspace / "g.txt"
    target.write_text("a\n")
    other.write_text("b\n")
    asked: list[tuple[str, str]] = []

    async def ask(request: PermissionRequest) -> Decision:
        if request.tool == "view":
            return Decision.ALLOW_ONCE
        asked.append((request.tool, Path(request.target).name))
        return Decision.ALLOW_SESSION if request.target == str(target) and request.tool == "edit" else Decision.DENY

    async def main() -> None:
        session = Session(workspace, asker=ask, config=Config(lsp_enabled=False))
        for name in ("f.txt", "g.txt"):
            await session.run("view", {"file_path": name})
        for old, new in (("a", "b"), ("b", "c"), ("c", "d")):
            response = await session.run("edit", {"file_path": "f.txt", "old_string": old, "new_string": new})
            assert not response.is_error, response.content
        refused = await session.run("edit", {"file_path": "g.txt", "old_string": "b", "new_string": "x"})
        assert refused.metadata.get("error") == "denied", refused.content
        edits = [{"old_string": "d", "new_string": "e"}]
        refused = await session.run("multiedit", {"file_path": "f.txt", "edits": edits})
        assert refused.metadata.get("error") == "denied", refused.content

    asyncio.run(main())
    assert asked == [("edit", "f.txt"), ("edit", "g.txt"), ("multiedit", "f.txt")]
    assert target.read_text() == "d\n" and other.read_text() == "b\n"
