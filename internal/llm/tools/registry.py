"""The tools one session offers: the built-ins or a profile's tools over them, and custom tools."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from pathlib import Path

from ...config import WORKSPACE_TOOLS_DIR, Config, user_tools_dir
from ...logs import logger
from .builtins import TOOL_MODULES, get_tool
from .contract import Tool

log = logger("toolsmith")

__all__ = ["ToolRegistry"]


class ToolRegistry:
    """The tools one session offers: the built-ins (or a profile's tools over them, see
    llm/profiles), and custom tools found for its workspace (see custom.py). A custom tool
    replaces a built-in only where the user allows it; ``removed`` names tools the user took
    away for this session (``--tool NAME=``)."""

    def __init__(
        self,
        custom: Mapping[str, Tool] | None = None,
        problems: list[str] | None = None,
        *,
        profile: str = "default",
        removed: Collection[str] = (),
    ) -> None:
        self._custom = dict(custom or {})
        #: Why a custom tool was left out (a name clash, an invalid name) or a workspace's request
        #: refused, one line each.
        self.problems = list(problems or [])
        self.profile = profile
        self._removed = set(removed)
        self._profile_tools: dict[str, Tool] | None = None
        if profile != "default":
            from ..profiles import profile_tools

            self._profile_tools = profile_tools(profile)

    @classmethod
    def for_workspace(cls, workspace: Path, config: Config, profile: str = "default") -> ToolRegistry:
        """The tools for ``workspace``. ValueError when ``config.tool_programs`` names no usable
        program or removes a tool that does not exist."""
        directories = (workspace / WORKSPACE_TOOLS_DIR, user_tools_dir())
        discover = config.custom_tools and any(d.is_dir() for d in directories)
        registry = cls(profile=profile)
        if not (discover or config.tool_programs or config.workspace_refused):
            return registry  # the common case, without importing the custom-tool machinery
        from .custom import custom_tools

        # A profile's tools and the engine's are both built-ins: no custom tool takes either name unasked.
        builtin = dict.fromkeys([*registry._own_names(), *TOOL_MODULES])
        found = custom_tools(workspace, config, builtin, discover=discover)
        registry._custom = dict(found.tools)
        registry.problems = found.problems
        registry._removed = found.removed
        return registry

    def add(self, tools: Iterable[Tool]) -> None:
        """The embedder's own tools (``Session(tools=...)``, function_tools.py), offered beside
        the others. One named like a built-in or a custom tool replaces it: the embedder is the
        user, and naming it is the consent a workspace's program needs ``[tools] override`` for."""
        for tool in tools:
            if tool.name in self._custom or tool.name in self._own_names():
                log.info("the embedder's tool %s replaces the tool of that name", tool.name)
            self._custom[tool.name] = tool
            self._removed.discard(tool.name)

    def _own_names(self) -> list[str]:
        return list(self._profile_tools) if self._profile_tools is not None else list(TOOL_MODULES)

    def names(self) -> list[str]:
        own = self._own_names()
        names = [*own, *(name for name in self._custom if name not in own)]
        return [name for name in names if name not in self._removed] if self._removed else names

    def get(self, name: str) -> Tool:
        if name in self._removed:
            raise KeyError(name)
        custom = self._custom.get(name)
        if custom is not None:
            return custom
        if self._profile_tools is not None:
            return self._profile_tools[name]
        return get_tool(name)

    def tools(self) -> list[Tool]:
        return [self.get(name) for name in self.names()]
