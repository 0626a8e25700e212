"""Toolsmith: tools for coding agents. The public surface, imported lazily on first use:

from internal import Session, Config, CancelToken, Decision, PermissionRequest, ToolResponse
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "Session": "internal.session",
    "Config": "internal.config",
    "CancelToken": "internal.cancel",
    "ToolError": "internal.errors",
    "Decision": "internal.permission",
    "PermissionRequest": "internal.permission",
    "allow_all": "internal.permission",
    "read_only_policy": "internal.permission",
    "ToolResponse": "internal.llm.tools.tools",
    "ToolInfo": "internal.llm.tools.tools",
    "available_skills_xml": "internal.skills",
}

__all__ = [
    "CancelToken",
    "Config",
    "Decision",
    "PermissionRequest",
    "Session",
    "ToolError",
    "ToolInfo",
    "ToolResponse",
    "allow_all",
    "available_skills_xml",
    "read_only_policy",
]

if TYPE_CHECKING:
    from internal.cancel import CancelToken
    from internal.config import Config
    from internal.errors import ToolError
    from internal.llm.tools.tools import ToolInfo, ToolResponse
    from internal.permission import Decision, PermissionRequest, allow_all, read_only_policy
    from internal.session import Session
    from internal.skills import available_skills_xml


def __getattr__(name: str) -> Any:
    # Lazy, so `python -m cmd.tools view` does not import what it does not use.
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'internal' has no attribute {name!r}")
