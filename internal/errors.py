"""The one exception type whose message is meant for the model.

Tools and mechanisms raise :class:`ToolError` (or a subclass) with a message the model can act
on; the tool runner turns it into an error response. Any other exception is a bug: the runner
logs its traceback and returns a short error instead.
"""

from __future__ import annotations

from typing import Any


class ToolError(Exception):
    """A failure explained to the model. ``message`` is the whole response text."""

    def __init__(self, message: str, metadata: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.metadata = dict(metadata or {})


class PermissionDenied(ToolError):
    """The permission service refused the action."""


class ToolCancelled(ToolError):
    """The call's cancellation token fired before the tool finished."""
