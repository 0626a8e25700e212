"""Toolsmith: tools for coding agents. The public surface, imported lazily on first use:

from agent_toolsmith import Session, Config, CancelToken, Decision, PermissionRequest, ToolPolicy, ToolResponse
from agent_toolsmith import tool, Tool   # your own functions (or Tool subclasses) as tools
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import logs


def _null_handler() -> None:
    import logging

    logging.getLogger("toolsmith").addHandler(logging.NullHandler())


# A library logs, the application decides where to: without this, warnings of ours (and of pygls,
# which the LSP client forwards to "toolsmith.lsp") would reach stderr through Python's
# last-resort handler in an embedding process that configured no logging. Given to logs, so that
# logging is not imported until something logs.
logs.configure(_null_handler)

__version__ = "0.3.0"

_EXPORTS = {
    "Session": ".session",
    "Config": ".config",
    "CancelToken": ".cancel",
    "ToolError": ".errors",
    "Decision": ".permission",
    "PermissionRequest": ".permission",
    "allow_all": ".permission",
    "read_only_policy": ".permission",
    "ToolPolicy": ".permission",
    "Tool": ".llm.tools.contract",
    "ToolResponse": ".llm.tools.contract",
    "tool": ".llm.tools.function_tools",
    "ToolInfo": ".llm.tools.contract",
    "available_skills_xml": ".skills",
    "ToolCall": ".llm.providers",
    "declarations": ".llm.providers",
    "parse_tool_call": ".llm.providers",
    "tool_result_for": ".llm.providers",
}

__all__ = [
    "CancelToken",
    "Config",
    "Decision",
    "PermissionRequest",
    "Session",
    "Tool",
    "ToolCall",
    "ToolError",
    "ToolInfo",
    "ToolPolicy",
    "ToolResponse",
    "allow_all",
    "available_skills_xml",
    "declarations",
    "parse_tool_call",
    "read_only_policy",
    "tool",
    "tool_result_for",
]

if TYPE_CHECKING:
    from .cancel import CancelToken
    from .config import Config
    from .errors import ToolError
    from .llm.providers import ToolCall, declarations, parse_tool_call, tool_result_for
    from .llm.tools.contract import Tool, ToolInfo, ToolResponse
    from .llm.tools.function_tools import tool
    from .permission import Decision, PermissionRequest, ToolPolicy, allow_all, read_only_policy
    from .session import Session
    from .skills import available_skills_xml


def __getattr__(name: str) -> Any:
    # Lazy, so `python -m cmd.tools view` does not import what it does not use.
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    raise AttributeError(f"module 'agent_toolsmith' has no attribute {name!r}")
