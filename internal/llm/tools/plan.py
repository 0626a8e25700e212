"""plan: the model's todo list for the task, replaced whole at each update, shown to the host."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Literal

from ...plan import MAX_ITEM_CHARS, MAX_PLAN_ITEMS, PlanItem, PlanUpdate, render_plan
from .context import UserServices
from .contract import Tool, ToolResponse
from .params import param

DESCRIPTION = f"""Keeps your plan for the task: a todo list the user sees as you work.

- Send the whole list each time: it replaces the one before. Each item has `content` (what to do)
  and `status`: pending, in_progress, completed or cancelled. `priority` (high, medium, low) and
  `active_form` (the words shown while it runs, e.g. "Running the tests") are optional.
- Use it for tasks of three steps or more, or when the user gives several things to do. Skip it
  for a single quick change.
- Keep one item in_progress at a time; mark items completed as soon as they are done, not in a
  batch at the end. Add items you discover; cancel the ones that no longer apply.
- At most {MAX_PLAN_ITEMS} items of at most {MAX_ITEM_CHARS} characters.
"""


@dataclass(frozen=True)
class PlanItemParams:
    content: str = param("What to do, in a few words", minLength=1, maxLength=MAX_ITEM_CHARS)
    status: Literal["pending", "in_progress", "completed", "cancelled"] = param(
        "pending, in_progress (one at a time), completed or cancelled", "pending"
    )
    priority: Literal["high", "medium", "low"] | None = param("How much it matters", None)
    active_form: str | None = param(
        'The step as it is being done, e.g. "Running the tests"', None, maxLength=MAX_ITEM_CHARS
    )


@dataclass(frozen=True)
class PlanParams:
    todos: list[PlanItemParams] = param("The whole plan, in order: it replaces the one before", maxItems=MAX_PLAN_ITEMS)
    explanation: str | None = param("Why the plan changed (optional)", None, maxLength=MAX_ITEM_CHARS)


class PlanTool(Tool):
    name = "plan"
    title = "Update the plan"
    description = DESCRIPTION
    Params = PlanParams
    read_only = True  # changes nothing on disk: the plan is the session's, shown to the user
    idempotent = True
    needs_event_loop = False

    async def run(self, params: PlanParams, ctx: UserServices) -> ToolResponse:
        items = tuple(PlanItem(t.content, t.status, t.priority, t.active_form) for t in params.todos)
        update = ctx.plan.replace(items, params.explanation)
        summary = plan_summary(update)
        listed = [item.to_json() for item in items]
        ctx.progress("plan", {"text": summary, "items": listed, "explanation": params.explanation})
        metadata = {"plan": listed, "explanation": params.explanation, "counts": dict(_counts(items))}
        return ToolResponse(f"{summary}\n\n{render_plan(items)}", metadata=metadata)


def plan_summary(update: PlanUpdate) -> str:
    """One line on the plan as it now stands: "Plan updated: 5 items (2 completed, 1 in_progress, ...)"."""
    counts = _counts(update.after)
    if not update.after:
        return "Plan cleared."
    parts = ", ".join(f"{counts[status]} {status}" for status in counts)
    return f"Plan updated: {len(update.after)} item(s) ({parts})."


def _counts(items: tuple[PlanItem, ...]) -> Counter[str]:
    order = ("completed", "in_progress", "pending", "cancelled")
    counts: Counter[str] = Counter(item.status for item in items)
    return Counter({status: counts[status] for status in order if counts[status]})


TOOL = PlanTool()
