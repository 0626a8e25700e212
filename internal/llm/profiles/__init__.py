"""Tool profiles: the tool shapes a model family was trained on, over the same engine.

``default`` is the engine's own tools (view, edit, grep, ...). ``claude`` offers Read, Write,
Edit, MultiEdit, Glob, Grep, Bash, BashOutput, KillShell, NotebookEdit, WebFetch and LS with
those tools' parameter names and conventions; ``codex`` offers apply_patch (a free-form grammar
tool for the OpenAI Responses API), exec_command, write_stdin, read_file, list_dir and
grep_files.

A profile tool is a thin adapter: it validates its own parameters, maps them onto one engine
tool's, runs that tool (the same checks, permission, commit and diagnostics) and adjusts only
the wording where the family's convention differs (1-based line offsets, say). No behaviour is
forked: the file a profile's Edit leaves is the file the engine's edit leaves.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from ..tools.tools import Tool, ToolContext, ToolResponse, run_engine_tool

PROFILES = ("default", "claude", "codex")

__all__ = ["PROFILES", "ProfileTool", "check_profile", "one_based_offsets", "profile_tools"]


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


def check_profile(name: str) -> str:
    if name not in PROFILES:
        raise ValueError(f"unknown profile {name!r}: use one of {', '.join(PROFILES)}")
    return name


def profile_tools(profile: str) -> dict[str, Tool]:
    """The tools of ``profile`` (not "default": the engine's own tools need no adapter)."""
    check_profile(profile)
    if profile == "claude":
        from .claude import TOOLS
    elif profile == "codex":
        from .codex import TOOLS
    else:
        raise ValueError("the default profile is the engine's own tools")
    return {tool.name: tool for tool in TOOLS}
