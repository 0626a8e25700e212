"""A session's plan: the todo list the model keeps while it works (the plan tool writes it).

The model replaces the whole list at each update, as the products' plan tools do (Claude Code's
TodoWrite, Codex's update_plan, Gemini CLI's write_todos): no item ids to keep in step, and the
list the host shows is always the one the model last sent. The host reads it with
``Session.plan()``, is told of each update through the progress callback (kind ``"plan"``), and
over MCP reads it as a resource (mcp_server/server.py).
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass
from typing import Any, Literal

Status = Literal["pending", "in_progress", "completed", "cancelled"]
Priority = Literal["high", "medium", "low"]
STATUSES: tuple[Status, ...] = ("pending", "in_progress", "completed", "cancelled")
PRIORITIES: tuple[Priority, ...] = ("high", "medium", "low")
#: A plan holds at most this many items: a list longer than this is a transcript, not a plan.
MAX_PLAN_ITEMS = 100
#: One item's text is at most this long (characters).
MAX_ITEM_CHARS = 1000

_MARKS: dict[str, str] = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]", "cancelled": "[-]"}


@dataclass(frozen=True)
class PlanItem:
    """One step: what to do, how far it is, and optionally its priority and the words a host shows
    while it runs ("Running the tests" for "Run the tests")."""

    content: str
    status: Status = "pending"
    priority: Priority | None = None
    active_form: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {key: value for key, value in asdict(self).items() if value is not None}

    @classmethod
    def from_json(cls, data: Any) -> PlanItem | None:
        """The item ``data`` describes, or None when it is not one (a damaged state file)."""
        if not isinstance(data, dict) or not isinstance(data.get("content"), str):
            return None
        status = data.get("status", "pending")
        priority = data.get("priority")
        active_form = data.get("active_form")
        return cls(
            data["content"],
            status if status in STATUSES else "pending",
            priority if priority in PRIORITIES else None,
            active_form if isinstance(active_form, str) else None,
        )


@dataclass(frozen=True)
class PlanUpdate:
    """What one update changed: the list before and after, and the model's note on why."""

    before: tuple[PlanItem, ...]
    after: tuple[PlanItem, ...]
    explanation: str | None = None


class Plan:
    """One session's plan. Replaced whole; read by the host at any time (from any thread)."""

    def __init__(self, items: tuple[PlanItem, ...] = ()) -> None:
        self._items = items
        self._explanation: str | None = None
        self._lock = threading.Lock()

    def items(self) -> tuple[PlanItem, ...]:
        with self._lock:
            return self._items

    @property
    def explanation(self) -> str | None:
        return self._explanation

    def replace(self, items: tuple[PlanItem, ...], explanation: str | None = None) -> PlanUpdate:
        with self._lock:
            before, self._items, self._explanation = self._items, items, explanation
        return PlanUpdate(before, items, explanation)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"items": [item.to_json() for item in self.items()]}
        if self._explanation:
            data["explanation"] = self._explanation
        return data

    @classmethod
    def from_json(cls, data: Any) -> Plan:
        raw = data.get("items") if isinstance(data, dict) else None
        parsed = (PlanItem.from_json(item) for item in raw) if isinstance(raw, list) else ()
        plan = cls(tuple(item for item in parsed if item is not None))
        explanation = data.get("explanation") if isinstance(data, dict) else None
        plan._explanation = explanation if isinstance(explanation, str) else None
        return plan


def render_plan(items: tuple[PlanItem, ...]) -> str:
    """The plan as the model reads it back: one line per item, its state in brackets."""
    if not items:
        return "(the plan is empty)"
    lines = []
    for item in items:
        priority = f" ({item.priority})" if item.priority else ""
        lines.append(f"{_MARKS[item.status]} {item.content}{priority}")
    return "\n".join(lines)
