"""The runner: validation → the tool's run → one outcome, for every front door.

Front doors (CLI, MCP, the Python API) call :func:`run_tool`. It parses and validates the
params against the tool's typed ``Params``, runs the tool, and turns every failure into an
error :class:`ToolResponse`: a :class:`ToolError` (errors.py: typed, with a stable code in
``metadata["error"]``) becomes its message, anything else is logged with its traceback and
reported in one line. Nothing raises to the caller except ``asyncio.CancelledError`` (task
cancellation belongs to the caller). Policy and permission are the tools' own steps: each asks
the session's permission service for what it is about to do (context.py).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from ...errors import InternalError, InvalidParams, MissingDependency, ToolCancelled, ToolError, UnknownTool
from ...logs import logger
from .builtins import get_tool
from .context import ToolContext
from .contract import Tool, ToolResponse
from .params import ParamsError, parse_params

log = logger("toolsmith")

__all__ = ["run_engine_tool", "run_tool"]


def error_response(error: ToolError, **extra: Any) -> ToolResponse:
    """The response for a failure: its message, its metadata (with its code) and ``extra``."""
    return ToolResponse(content=error.message, is_error=True, metadata={**error.metadata, **extra})


async def run_tool(name: str, raw_params: Any, ctx: ToolContext) -> ToolResponse:
    """Run tool ``name`` with ``raw_params`` (parsed JSON, or a JSON string). Never raises."""
    started = time.perf_counter()
    response = await _run(name, raw_params, ctx.for_call())
    response.metadata.setdefault("duration_ms", round((time.perf_counter() - started) * 1000, 3))
    return response


async def run_engine_tool(name: str, raw_params: Any, ctx: ToolContext) -> ToolResponse:
    """Run built-in tool ``name`` whatever the session's registry offers: a profile's tool
    (llm/profiles) calls the engine tool it maps onto this way. Never raises."""
    return await _run_tool(get_tool(name), name, raw_params, ctx)


async def _run(name: str, raw_params: Any, ctx: ToolContext) -> ToolResponse:
    try:
        tool = ctx.tools.get(name)
    except KeyError:
        return error_response(UnknownTool(_unknown_tool(name, ctx.tools.names())))
    return await _run_tool(tool, name, raw_params, ctx)


async def _run_tool(tool: Tool, name: str, raw_params: Any, ctx: ToolContext) -> ToolResponse:
    if isinstance(raw_params, str | bytes):
        try:
            raw_params = json.loads(raw_params)
        except (ValueError, RecursionError) as exc:
            return error_response(InvalidParams(f"Invalid parameters for {name}: not valid JSON ({exc})."))
    params: Any
    try:
        params = parse_params(tool.Params, raw_params)
    except ParamsError as exc:
        return error_response(InvalidParams(f"Invalid parameters for {name}: {exc}."))
    except RecursionError:
        return error_response(InvalidParams(f"Invalid parameters for {name}: nested too deeply."))
    try:
        return await tool.run(params, ctx)
    except ToolCancelled as exc:
        return error_response(exc, aborted=True)
    except ToolError as exc:
        return error_response(exc)
    # asyncio.CancelledError is a BaseException: it passes the handlers below to the caller.
    except ModuleNotFoundError as exc:
        log.exception("tool %s is missing a dependency", name)
        return error_response(MissingDependency(
            f"The {name} tool cannot run: its dependency '{exc.name}' is not installed in this Python "
            f"({sys.executable}). Install the project first (pip install agent-toolsmith, or `make run` in a "
            "checkout)."
        ))  # fmt: skip
    except Exception as exc:
        log.exception("tool %s failed", name)
        return error_response(InternalError(f"Internal error in {name}: {type(exc).__name__}: {exc}"))


def _unknown_tool(name: str, available: list[str]) -> str:
    import difflib  # for a misspelt name only

    shown = name if len(name) <= 60 else name[:60] + "…"
    close = difflib.get_close_matches(name.lower(), available, n=1, cutoff=0.5)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    return f"Unknown tool {shown!r}.{hint} Available tools: {', '.join(available)}."
