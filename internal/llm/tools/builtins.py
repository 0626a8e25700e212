"""The built-in tools, by name. Each lives in its own module here (``view`` in view.py) and is
imported on first use, so the CLI loads only the tool it runs."""

from __future__ import annotations

import importlib

from .contract import Tool

#: The built-in tools. Modules are imported on first use so the CLI loads only the tool it runs.
BUILTIN_TOOL_NAMES = (
    *("bash", "job_output", "job_input", "job_kill"),
    *("view", "read_many", "attach", "write", "edit", "multiedit", "patch", "notebook_edit"),
    *("glob", "grep", "ls", "lsp", "fetch", "skill", "outline", "symbol_edit"),
    *("plan", "question"),
)
TOOL_MODULES: dict[str, str] = {name: f"{__package__}.{name}" for name in BUILTIN_TOOL_NAMES}


def tool_names() -> list[str]:
    """The built-in tools' names (a session's own list: ``ToolRegistry.names``)."""
    return list(TOOL_MODULES)


def get_tool(name: str) -> Tool:
    """A built-in tool; ``KeyError`` for any other name."""
    tool = _imported.get(name)
    if tool is None:
        if name not in TOOL_MODULES:
            raise KeyError(name)
        tool = _imported[name] = importlib.import_module(TOOL_MODULES[name]).TOOL
    return tool


#: The tools imported so far (each module's TOOL, which keeps no state): every call looks its
#: tool up, and import_module's lookup goes through importlib's Python code each time.
_imported: dict[str, Tool] = {}


def all_tools() -> list[Tool]:
    return [get_tool(name) for name in tool_names()]




class BuiltinTools:
    """The built-in tools as a :class:`~.contract.ToolSet` (a context made without a registry)."""

    def names(self) -> list[str]:
        return tool_names()

    def get(self, name: str) -> Tool:
        return get_tool(name)

    def tools(self) -> list[Tool]:
        return all_tools()
