"""The plan and question tools: the session's plan (API, progress, state file) and questions
put to the user through the host's ask_user (a host that cannot ask is told so at once)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from agent_toolsmith import Session
from agent_toolsmith.config import Config
from agent_toolsmith.permission import MAX_QUESTION_WAIT_S, Answer, Answers, QuestionRequest
from agent_toolsmith.plan import MAX_PLAN_ITEMS, PlanItem

#: Every wait in these tests is bounded by this.
WAIT_S = 20.0


def _config(tmp_path: Path) -> Config:
    return Config(lsp_enabled=False, state_dir=tmp_path / "state")


def _run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, WAIT_S))


TODOS = [
    {"content": "Read the parser", "status": "completed"},
    {"content": "Fix the off-by-one", "status": "in_progress", "active_form": "Fixing the off-by-one",
     "priority": "high"},
    {"content": "Add a regression test", "status": "pending"},
]  # fmt: skip


def test_plan_replaces_the_whole_list_and_the_host_sees_it(tmp_path: Path) -> None:
    events: list[tuple[str, dict[str, Any]]] = []

    async def main() -> tuple[Any, Any, tuple[PlanItem, ...], tuple[PlanItem, ...]]:
        async with Session(tmp_path, config=_config(tmp_path), progress=lambda k, d: events.append((k, d))) as s:
            first = await s.run("plan", {"todos": TODOS})
            after_first = s.plan()
            second = await s.run("plan", {"todos": [{"content": "Ship it", "status": "pending"}],
                                          "explanation": "the fix landed"})  # fmt: skip
            return first, second, after_first, s.plan()

    first, second, after_first, after_second = _run(main())
    assert not first.is_error
    assert first.content.startswith("Plan updated: 3 item(s) (1 completed, 1 in_progress, 1 pending).")
    assert "[x] Read the parser\n[~] Fix the off-by-one (high)\n[ ] Add a regression test" in first.content
    assert after_first[1] == PlanItem("Fix the off-by-one", "in_progress", "high", "Fixing the off-by-one")
    assert after_second == (PlanItem("Ship it"),)  # replaced, not merged
    assert second.metadata["plan"] == [{"content": "Ship it", "status": "pending"}]
    assert second.metadata["explanation"] == "the fix landed"
    plans = [data for kind, data in events if kind == "plan"]
    assert [len(p["items"]) for p in plans] == [3, 1] and plans[1]["text"].startswith("Plan updated: 1 item(s)")


def test_plan_refuses_bad_items_and_keeps_the_plan(tmp_path: Path) -> None:
    async def main() -> tuple[list[Any], tuple[PlanItem, ...]]:
        async with Session(tmp_path, config=_config(tmp_path)) as s:
            await s.run("plan", {"todos": TODOS})
            bad = [
                await s.run("plan", {"todos": [{"content": "x", "status": "done"}]}),
                await s.run("plan", {"todos": [{"content": ""}]}),
                await s.run("plan", {"todos": [{"content": f"step {i}"} for i in range(MAX_PLAN_ITEMS + 1)]}),
            ]
            return bad, s.plan()

    bad, plan = _run(main())
    assert all(r.is_error and r.metadata["error"] == "invalid_params" for r in bad)
    assert "'todos[0].status' must be one of" in bad[0].content
    assert f"at most {MAX_PLAN_ITEMS} item(s)" in bad[2].content
    assert len(plan) == 3  # a refused update leaves the plan as it was


def test_the_plan_survives_in_the_session_state(tmp_path: Path) -> None:
    config = _config(tmp_path)

    async def write() -> None:
        async with Session(tmp_path, session_id="planned", config=config) as s:
            await s.run("plan", {"todos": TODOS, "explanation": "why"})
            s.save_state()

    _run(write())
    again = Session(tmp_path, session_id="planned", config=config)
    again.load_state()
    assert [item.content for item in again.plan()] == [t["content"] for t in TODOS]
    assert again.ctx.plan.explanation == "why"


def test_a_host_that_cannot_ask_is_told_so_at_once(tmp_path: Path) -> None:
    async def main() -> Any:
        async with Session(tmp_path, config=_config(tmp_path)) as s:
            return await s.run("question", {"questions": [{"question": "Which database?"}]})

    response = _run(main())
    assert response.is_error and response.metadata["error"] == "cannot_ask"
    assert "cannot ask the user" in response.content and "what you assumed" in response.content


def test_questions_reach_the_host_and_answers_come_back(tmp_path: Path) -> None:
    asked: list[QuestionRequest] = []

    async def ask_user(request: QuestionRequest) -> Answers:
        asked.append(request)
        return Answers((Answer(("PostgreSQL",)), Answer((), "next Tuesday")))

    async def main() -> Any:
        async with Session(tmp_path, config=_config(tmp_path), ask_user=ask_user) as s:
            return await s.run("question", {"questions": [
                {"question": "Which database?", "header": "Database", "options": [
                    {"label": "PostgreSQL", "description": "the server one"}, {"label": "SQLite"}]},
                {"question": "When should it ship?"},
            ]})  # fmt: skip

    response = _run(main())
    assert not response.is_error
    assert response.content == (
        "The user answered:\n1. Which database?\n   → PostgreSQL\n2. When should it ship?\n   → next Tuesday"
    )
    (request,) = asked
    assert [c.label for c in request.questions[0].choices] == ["PostgreSQL", "SQLite"]
    assert request.questions[0].header == "Database" and request.questions[1].choices == ()
    second = response.metadata["answers"][1]
    assert second == {"question": "When should it ship?", "selected": [], "text": "next Tuesday"}


def test_a_declined_question_and_a_failing_host_say_what_to_do(tmp_path: Path) -> None:
    async def declines(request: QuestionRequest) -> Answers:
        return Answers(declined=True)

    async def breaks(request: QuestionRequest) -> Answers:
        raise ConnectionError("the UI went away")

    async def main(ask_user: Any) -> Any:
        async with Session(tmp_path, config=_config(tmp_path), ask_user=ask_user) as s:
            return await s.run("question", {"questions": [{"question": "Go on?"}]})

    declined = _run(main(declines))
    assert not declined.is_error and declined.metadata["declined"] is True
    assert "declined to answer" in declined.content
    broken = _run(main(breaks))
    assert broken.is_error and broken.metadata["error"] == "cannot_ask" and "the UI went away" in broken.content


def test_a_question_nobody_answers_ends_with_no_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import agent_toolsmith.permission as permission

    monkeypatch.setattr(permission, "MAX_QUESTION_WAIT_S", 0.2)
    never = asyncio.Event()

    async def waits(request: QuestionRequest) -> Answers:
        await never.wait()
        raise AssertionError("unreachable")

    async def main() -> Any:
        async with Session(tmp_path, config=_config(tmp_path), ask_user=waits) as s:
            return await s.run("question", {"questions": [{"question": "Still there?"}]})

    response = _run(main())
    assert response.is_error and response.metadata["error"] == "no_answer"
    assert MAX_QUESTION_WAIT_S >= 60  # the real limit is for people, not tests


def test_plan_and_question_are_in_the_default_set(tmp_path: Path) -> None:
    names = [info.name for info in Session(tmp_path, config=_config(tmp_path)).tools()]
    assert "plan" in names and "question" in names
    read_only = [info.name for info in Session(tmp_path, config=_config(tmp_path)).tools() if info.read_only]
    assert {"plan", "question"} <= set(read_only)
    json.dumps([info.parameters for info in Session(tmp_path, config=_config(tmp_path)).tools()])
