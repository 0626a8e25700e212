"""What every profile tool is: a thin adapter over one engine tool (see the package docstring)."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from ..tools.context import ToolContext
from ..tools.contract import Tool, ToolResponse
from ..tools.runner import run_engine_tool

__all__ = ["ProfileTool", "one_based_offsets"]


class ProfileTool(Tool):
    """A profile's tool: its own name, description and ``Params``, run by the engine tool
    ``engine`` with the parameters :meth:`to_engine` makes."""

    engine: ClassVar[str]

    def to_engine(self, params: Any) -> dict[str, Any]:
        raise NotImplementedError

    def render(self, response: ToolResponse, params: Any) -> ToolResponse:
        """The engine's response in this family's conventions (unchanged by default)."""
        return response

    async def run(self, params: Any, ctx: ToolContext) -> ToolResponse:
        response = await run_engine_tool(self.engine, self.to_engine(params), ctx)
        return self.render(response, params)


_VIEW_CONTINUE = re.compile(r"Use offset=(\d+) to continue reading")


def one_based_offsets(response: ToolResponse) -> ToolResponse:
    """view's footer names the 0-based offset to continue at; profiles whose ``offset`` is a
    1-based line number name that line instead."""
    content = _VIEW_CONTINUE.sub(lambda m: f"Use offset={int(m.group(1)) + 1} to continue reading", response.content)
    return ToolResponse(content, response.is_error, response.metadata, response.images)
