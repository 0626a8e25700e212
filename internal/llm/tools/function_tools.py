"""Function tools: an embedder's own Python function, offered to the model like any other tool.

    def add(a: int, b: int = 2) -> int:
        \"\"\"Adds two integers.\"\"\"
        return a + b

    Session(workspace, tools=[add])

- **Parameters**: a dataclass is made from the signature, so params.py gives the one JSON Schema
  and the one validation every tool has; bad parameters are ``invalid_params`` before the
  function runs. Types: ``str``, ``int``, ``float``, ``bool``, ``Literal[...]``, ``list[...]`` and
  ``dict[str, ...]`` of these, a dataclass, and ``X | None``. A parameter's description comes from
  ``Annotated[int, "..."]`` or the docstring's ``Args:`` section (or reST ``:param x:``).
- **Description**: the docstring without its ``Args``/``Returns``/``Raises`` sections, or the
  decorator's ``description``. Its first paragraph is the one-line summary; what follows is the
  tool's guidance (``Session.prompt_section``).
- **Injected, never in the schema**: a parameter annotated ``CancelToken`` receives the call's
  token; a parameter named ``progress`` receives ``progress(text)``, which reports to the caller
  (the ``progress`` callback of ``Session.run``, MCP progress notifications).
- **Running**: an async function runs on the session's event loop and is cancelled when the call
  is (the token fires or the awaiting task is cancelled); a sync function runs in a worker thread
  — an abort answers at once, and the thread ends when the function returns (take a
  ``CancelToken`` and check ``.cancelled`` to stop early).
- **Permission and policy**: a tool not declared ``read_only`` asks the session's permission
  service (action ``call``, target the tool's name) before every call, and a read-only session
  does not offer it; one declared ``read_only`` runs without asking.
- **Result**: a ``str`` as is, a :class:`ToolResponse` as is, ``None`` as "(no output)", anything
  else as JSON (also in ``metadata["result"]``), bounded at :data:`MAX_RESULT_CHARS` with the
  full text in a spill file. An exception becomes ``function_error`` naming its type and message
  (the traceback goes to the log); raise ``ToolError`` for a message and code of your own.

Function tools come only from the embedder (``Session(tools=...)``, ``toolsmith-mcp --tools``):
a workspace cannot add one. One named like a built-in replaces it, as the embedder asked.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Any, TypeVar, overload

from ...cancel import CancelToken, in_thread, race_cancel
from ...errors import ToolError
from ...event_loop import loop_running
from ...logs import logger
from ...truncate import SpillingBuffer, new_spill_path
from .context import CallServices
from .contract import Tool, ToolResponse
from .docstrings import read_docstring, split_description
from .params import schema_for

log = logger("toolsmith")

__all__ = ["MAX_RESULT_CHARS", "FunctionTool", "as_tools", "load_tools", "tool"]

#: A function's result text longer than this shows its beginning and end; the whole text goes
#: to a spill file the model can page with view.
MAX_RESULT_CHARS = 30_000
#: Names every provider accepts (Anthropic and OpenAI: [A-Za-z0-9_-]{1,64}; Gemini: starts with
#: a letter or underscore), the same rule as custom tools'.
FUNCTION_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
#: The parameter name that receives ``progress(text)``.
PROGRESS_PARAMETER = "progress"
#: The permission action a function tool asks for.
CALL_ACTION = "call"
#: The arguments shown in a permission request are cut here.
MAX_SHOWN_ARGUMENTS_CHARS = 200

F = TypeVar("F", bound=Callable[..., Any])


class FunctionTool(Tool):
    """A Python function as a tool (see the module's docstring). Calling the tool object calls
    the function, so a decorated function stays usable as a function."""

    open_world = False

    def __init__(
        self,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        read_only: bool = False,
        title: str | None = None,
    ) -> None:
        self.function = function
        self.name = _tool_name(function, name)
        summary, guidance, documented = read_docstring(inspect.getdoc(function) or "")
        if description is not None:
            summary, guidance = split_description(description)
        if not summary:
            raise TypeError(
                f"function tool {self.name}: no description. Give the function a docstring (what it does, for the "
                "model) or pass description= to @tool."
            )
        self.description = summary + (f"\n\n{guidance}" if guidance else "")
        self.guidance = guidance
        self.read_only = read_only
        self.title = title or self.name
        self._signature = inspect.signature(function)
        self.Params, self._injected = _params_class(self.name, function, self._signature, documented)
        self._is_async = _is_async(function)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)

    def __repr__(self) -> str:
        return f"FunctionTool({self.name!r}, read_only={self.read_only})"

    async def run(self, params: Any, ctx: CallServices) -> ToolResponse:
        arguments = {f.name: getattr(params, f.name) for f in dataclasses.fields(params)}
        if not self.read_only:
            shown = json.dumps(dataclasses.asdict(params), ensure_ascii=False, default=str)
            if len(shown) > MAX_SHOWN_ARGUMENTS_CHARS:
                shown = shown[:MAX_SHOWN_ARGUMENTS_CHARS] + "…"
            await ctx.require_permission(
                self.name, CALL_ACTION, self.name, f"call {self.name} with {shown}", dataclasses.asdict(params)
            )
        try:
            value = await self._call(arguments, ctx)
        except ToolError:
            raise
        except Exception as exc:
            log.exception("function tool %s raised", self.name)
            raise ToolError(f"{self.name} failed: {type(exc).__name__}: {exc}", code="function_error") from None
        return _response(value, self.name, ctx)

    async def _call(self, arguments: dict[str, Any], ctx: CallServices) -> Any:
        if self._is_async:
            positional, named = self._bind(arguments, ctx, ctx.progress)
            return await race_cancel(self.function(*positional, **named), ctx.cancel)
        # The function runs in a worker thread: its progress reaches the caller's callbacks (MCP's
        # queue, a UI) on the event loop, never from the thread.
        report = _on_loop(ctx.progress)
        positional, named = self._bind(arguments, ctx, report)
        value = await in_thread(lambda check: self.function(*positional, **named), ctx.cancel)
        if inspect.isawaitable(value):  # a plain function that returned a coroutine
            value = await race_cancel(value, ctx.cancel)
        return value

    def _bind(
        self, arguments: dict[str, Any], ctx: CallServices, report: Callable[[str, dict[str, Any]], None]
    ) -> tuple[list[Any], dict[str, Any]]:
        """The function's arguments: the model's, and the injected token and progress."""
        tool_name = self.name

        def progress(text: str) -> None:
            report("progress", {"tool": tool_name, "text": str(text)})

        values = dict(arguments)
        for parameter_name, kind in self._injected.items():
            values[parameter_name] = ctx.cancel if kind == "cancel" else progress
        positional: list[Any] = []
        named: dict[str, Any] = {}
        for parameter in self._signature.parameters.values():
            if parameter.name not in values:
                continue
            if parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
                positional.append(values[parameter.name])
            else:
                named[parameter.name] = values[parameter.name]
        return positional, named


@overload
def tool(function: F, /) -> FunctionTool: ...
@overload
def tool(
    *, name: str | None = None, description: str | None = None, read_only: bool = False, title: str | None = None
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    title: str | None = None,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Make a function a tool: ``@tool``, or ``@tool(name=..., description=..., read_only=True)``
    to override what the function itself says. The result is still callable as the function."""

    def make(target: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(target, name=name, description=description, read_only=read_only, title=title)

    return make(function) if function is not None else make


def as_tools(items: Iterable[Tool | Callable[..., Any]]) -> list[Tool]:
    """Each item as a tool: a :class:`Tool` as is, a function as a :class:`FunctionTool`.
    TypeError for anything else or a function that cannot be one; ValueError for two of one name."""
    tools: list[Tool] = []
    for item in items:
        if isinstance(item, Tool):
            tools.append(item)
        elif callable(item):
            tools.append(FunctionTool(item))
        else:
            raise TypeError(f"tools takes functions and Tool objects, got {type(item).__name__}: {item!r}")
    names = [t.name for t in tools]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"two tools are named {twice[0]!r}: give one another name (@tool(name=...))")
    return tools


def load_tools(spec: str) -> list[Tool]:
    """The tools named by ``spec``, ``package.module:attr`` (``attr`` may be dotted): a function,
    a :class:`Tool`, or a list or tuple of them — how a command line (``toolsmith-mcp --tools``)
    names an embedder's tools. The current directory is searched for the module first, as
    ``python -m`` would. ValueError (or TypeError, for a function that cannot be a tool) saying
    what is wrong."""
    import importlib
    import os
    import sys

    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name or not attribute:
        raise ValueError(f"--tools {spec!r}: expected MODULE:ATTR, e.g. mytools:TOOLS or mypackage.tools:add")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        value: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"--tools {spec!r}: cannot import {module_name} ({exc}); run from the directory that "
                         "holds it, or put it on PYTHONPATH") from None  # fmt: skip
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise ValueError(f"--tools {spec!r}: {module_name} has no attribute {attribute!r}")
        value = getattr(value, part)
    items = list(value) if isinstance(value, list | tuple) else [value]
    if not items or not all(isinstance(item, Tool) or callable(item) for item in items):
        raise ValueError(f"--tools {spec!r}: {attribute} is not a function, a Tool, or a list of them")
    return as_tools(items)


# --- the function's signature as a Params dataclass ------------------------------------------


def _tool_name(function: Callable[..., Any], name: str | None) -> str:
    chosen = name if name is not None else getattr(function, "__name__", "")
    if not isinstance(chosen, str) or not FUNCTION_NAME_RE.match(chosen):
        raise TypeError(
            f"{chosen!r} cannot be a tool name: 1-64 characters of A-Z a-z 0-9 _ -, starting with a letter or _ "
            "(a lambda or a callable object needs @tool(name=...))"
        )
    return chosen


def _is_async(function: Callable[..., Any]) -> bool:
    if inspect.isasyncgenfunction(function):
        raise TypeError(f"{function!r} is an async generator: a tool returns one result (report steps with progress)")
    call = inspect.getattr_static(function, "__call__", None)  # a callable object's async __call__ counts too
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(call)


def _params_class(
    tool_name: str, function: Callable[..., Any], signature: inspect.Signature, documented: dict[str, str]
) -> tuple[type, dict[str, str]]:
    """The dataclass of the model's parameters, and the injected ones (name → "cancel"/"progress")."""
    hints = _parameter_hints(tool_name, function, signature)
    fields: list[tuple[str, Any, Any]] = []
    injected: dict[str, str] = {}
    for parameter in signature.parameters.values():
        where = f"function tool {tool_name}, parameter {parameter.name!r}"
        if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise TypeError(f"{where}: *args and **kwargs cannot be declared to a model; name each parameter")
        hint = hints.get(parameter.name, inspect.Parameter.empty)
        if CancelToken in (hint, *typing.get_args(hint)):
            injected[parameter.name] = "cancel"
            continue
        if parameter.name == PROGRESS_PARAMETER:
            injected[parameter.name] = "progress"
            continue
        if hint is inspect.Parameter.empty:
            raise TypeError(f"{where} has no type annotation: annotate it (str, int, float, bool, list[str], ...)")
        kind, description = _strip_annotated(hint)
        metadata = {"description": description or documented.get(parameter.name, "")}
        if not metadata["description"]:
            metadata = {}
        if parameter.default is inspect.Parameter.empty:
            field = dataclasses.field(metadata=metadata)
        elif isinstance(parameter.default, list):
            field = dataclasses.field(default_factory=_copies(parameter.default), metadata=metadata)
        else:
            field = dataclasses.field(default=parameter.default, metadata=metadata)
        fields.append((parameter.name, kind, field))
    # Keyword-only: the signature's order stays (a required parameter may follow one with a default).
    params = dataclasses.make_dataclass(f"{tool_name}_params", fields, frozen=True, kw_only=True)
    try:
        json.dumps(schema_for(params))
    except TypeError as exc:
        raise TypeError(
            f"function tool {tool_name}: {exc}. Parameters take str, int, float, bool, a Literal, a list or a "
            "dict[str, ...] of these, a dataclass, or one of these or None; defaults must be JSON values"
        ) from None
    return params, injected


def _parameter_hints(tool_name: str, function: Callable[..., Any], signature: inspect.Signature) -> dict[str, Any]:
    """The parameters' annotations, resolved (``from __future__ import annotations`` makes them
    strings); the return annotation is not needed, so a type it names need not be importable."""
    annotated = {p.name: p.annotation for p in signature.parameters.values() if p.annotation is not p.empty}
    holder = types.SimpleNamespace(__annotations__=annotated)
    namespace = getattr(inspect.unwrap(function), "__globals__", None)
    if namespace is None:  # a callable object: its __call__'s module
        namespace = getattr(inspect.getattr_static(function, "__call__", None), "__globals__", {})
    try:
        return typing.get_type_hints(holder, globalns=namespace, include_extras=True)
    except Exception as exc:  # an annotation that names something undefined
        raise TypeError(f"function tool {tool_name}: its parameters' type hints cannot be resolved ({exc})") from None


def _copies(default: list[Any]) -> Callable[[], list[Any]]:
    """A list default, copied for each call (as params.param does)."""
    return lambda: list(default)


def _strip_annotated(hint: Any) -> tuple[Any, str]:
    """``Annotated[int, "the count"]`` → (int, "the count"); other hints as they are."""
    if typing.get_origin(hint) is Annotated:
        base, *extras = typing.get_args(hint)
        description = next((e for e in extras if isinstance(e, str)), "")
        return base, description
    return hint, ""


# --- the result -------------------------------------------------------------------------------


def _on_loop(progress: Callable[[str, dict[str, Any]], None]) -> Callable[[str, dict[str, Any]], None]:
    """``progress`` callable from a worker thread: each report is handed to the event loop."""
    if not loop_running():
        return progress
    import asyncio

    loop = asyncio.get_running_loop()

    def report(kind: str, data: dict[str, Any]) -> None:
        loop.call_soon_threadsafe(progress, kind, data)

    return report


def _json_default(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    if isinstance(value, Path):
        return str(value)
    return repr(value)


def _response(value: Any, name: str, ctx: CallServices) -> ToolResponse:
    if isinstance(value, ToolResponse):
        return value
    metadata: dict[str, Any] = {}
    if value is None:
        text = "(no output)"
    elif isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, ensure_ascii=False, default=_json_default)
        metadata["result"] = json.loads(text)
    output = SpillingBuffer(MAX_RESULT_CHARS, lambda: new_spill_path(ctx.state, ctx.session_id, name))
    output.write(text.encode("utf-8", "surrogatepass"))
    output.close()
    bounded = output.render()
    content = bounded.text
    if output.spilled:
        metadata.pop("result", None)  # as large as the text: the spill file has it
        content += f"\n\n(The result is {len(text)} characters; all of it is in {output.path} — read it with view.)"
    metadata.update(truncated=bounded.truncated, full_output_path=str(output.path) if output.path else None)
    return ToolResponse(content, metadata=metadata)
