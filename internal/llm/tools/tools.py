"""The tool contract: what a tool is, what it gets, what it returns, and the runner.

Front doors (CLI, MCP, the Python API) call :func:`run_tool`. It parses and validates the
params against the tool's typed ``Params``, runs the tool, and turns every failure into an
error :class:`ToolResponse`: a :class:`ToolError` becomes its message, anything else is logged
with its traceback and reported in one line. Nothing raises to the caller except
``asyncio.CancelledError`` (task cancellation belongs to the caller).
"""

from __future__ import annotations

import asyncio
import difflib
import importlib
import json
import logging
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from ...cancel import CancelToken
from ...config import WORKSPACE_TOOLS_DIR, Config, user_tools_dir
from ...errors import ToolCancelled, ToolError
from ...file_tracker import FileTracker
from ...fsutil import paths as fspaths
from ...fsutil.line_index import LineIndexCache
from ...fsutil.locks import PathLocks
from ...permission import PermissionRequest, PermissionService
from ...proc import ProcessSupervisor
from ...shell.jobs import JobTable
from ...shell.state import ShellState
from ...state import StateDir
from ...syntax.parse import SyntaxCache
from .params import ParamsError, parse_params, schema_for

log = logging.getLogger("toolsmith")

__all__ = [
    "DiagnosticsSource",
    "ImageAttachment",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolInfo",
    "ToolRegistry",
    "ToolResponse",
    "all_tools",
    "get_tool",
    "run_tool",
    "tool_names",
]


@dataclass(frozen=True)
class ImageAttachment:
    media_type: str
    data_base64: str


@dataclass
class ToolResponse:
    """``content`` is what the model reads; ``metadata`` is for UIs and logs."""

    content: str
    is_error: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    images: list[ImageAttachment] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"content": self.content, "is_error": self.is_error, "metadata": self.metadata}
        if self.images:
            out["images"] = [{"media_type": i.media_type, "data": i.data_base64} for i in self.images]
        return out


@dataclass(frozen=True)
class ToolInfo:
    """What a front door declares about a tool: the model's name, description and JSON Schema,
    and hints for hosts (MCP's tool annotations)."""

    name: str
    description: str
    parameters: dict[str, Any]
    read_only: bool
    title: str = ""
    #: Reaches beyond the workspace: the network (fetch), or any program (bash, custom tools).
    open_world: bool = False
    #: May overwrite or delete what is there (only meaningful when not read-only).
    destructive: bool = False
    #: Calling again with the same arguments changes nothing more.
    idempotent: bool = False
    #: A Lark grammar for the tool's one free-form input (its single string parameter), for
    #: providers that take free-form tools (OpenAI Responses ``custom`` tools); None for most.
    grammar: str | None = None


class DiagnosticsSource(Protocol):
    """What tools need from the LSP layer. ``""`` means nothing worth appending."""

    async def after_view(self, path: Path) -> str: ...

    async def after_change(self, paths: list[Path]) -> str:
        """Errors in ``paths`` after a change, and in other files that gained errors with it."""
        ...

    async def close(self) -> None: ...

    def to_json(self) -> dict[str, Any]:
        """What to keep across CLI invocations (which servers are unavailable, until when)."""
        ...

    def load_json(self, data: Any) -> None: ...


Progress = Callable[[str, dict[str, Any]], None]


def _no_progress(message: str, data: dict[str, Any]) -> None:
    return None


@dataclass
class ToolContext:
    """Everything a call needs. One per agent session; tools keep no state of their own."""

    workspace: Path
    session_id: str = "default"
    config: Config = field(default_factory=Config)
    permissions: PermissionService = field(default_factory=PermissionService)
    files: FileTracker = field(default_factory=FileTracker)
    cancel: CancelToken = field(default_factory=CancelToken)
    progress: Progress = _no_progress
    lsp: DiagnosticsSource | None = None
    locks: PathLocks = field(default_factory=PathLocks)
    shell: ShellState = field(default_factory=ShellState)
    #: The state directory (spill files, shell state, logs); from ``config.state_dir``.
    state: StateDir = field(default=None)  # type: ignore[assignment]
    #: Where view found line starts in large files (see fsutil/line_index.py).
    line_indexes: LineIndexCache = field(default_factory=LineIndexCache)
    #: The last syntax tree of files this session changed, for incremental reparsing.
    syntax_trees: SyntaxCache = field(default_factory=SyntaxCache)
    #: The tools this session offers (built-ins unless a front door found custom ones).
    tools: ToolRegistry = field(default_factory=lambda: ToolRegistry())
    #: Told of every commit the file tools made (its fsutil.commit.Change list), right after it
    #: succeeded: the session's checkpoints record before-images here (see checkpoints.py).
    on_commit: Callable[[Sequence[Any]], None] | None = None
    #: Every process tree this session's calls started; closing the session kills them.
    processes: ProcessSupervisor = field(default_factory=ProcessSupervisor)
    #: Background jobs (bash ``run_in_background``), read by job_output, fed by job_input.
    jobs: JobTable = field(default_factory=JobTable)

    def __post_init__(self) -> None:
        if self.state is None:
            self.state = StateDir(self.config.state_dir)

    def resolve(self, file_path: str) -> Path:
        return fspaths.resolve(self.workspace, file_path)

    def display(self, path: Path) -> str:
        return fspaths.display_path(path, self.workspace)

    def writable_roots(self) -> list[Path]:
        """Where writes are anchored: the workspace and allowed dirs, or "/" when not confined."""
        if not self.config.confine_writes:
            return [Path("/")]
        return fspaths.writable_roots(self.workspace, self.config.allowed_dirs)

    def check_writable(self, path: Path, *, follow: bool = True) -> Path:
        """The real path a change to ``path`` writes (see fsutil.paths.check_writable)."""
        return fspaths.check_writable(
            path,
            workspace=self.workspace,
            allowed_dirs=self.config.allowed_dirs,
            protected_dirs=self.config.protected_dirs,
            confine=self.config.confine_writes,
            follow=follow,
        )

    def readable_roots(self) -> list[Path]:
        """Where read-only tools read without asking: the workspace, the allowed dirs, the state
        dir (spilled outputs the tools point to) and the skill directories."""
        from ...skills import skill_tiers

        dirs = [self.workspace, *self.config.allowed_dirs, self.state.location()]
        dirs += skill_tiers(self.workspace, list(self.config.skill_paths))
        return [fspaths.real_path(fspaths.from_workspace(self.workspace, d)) for d in dirs]

    async def require_read_permission(self, tool: str, path: Path) -> Path:
        """Ask before reading outside :meth:`readable_roots` (symlinks resolved first); returns
        the real path that may be read (see :meth:`read_guard`)."""
        real = fspaths.real_path(path)
        if not fspaths.within_any(real, self.readable_roots()):
            await self.require_permission(tool, "read", str(real), f"read {real} (outside the workspace)")
        return real

    def read_roots(self, approved: Path) -> list[Path]:
        """Roots for anchored reads: the readable roots, plus ``approved`` when the user allowed
        reading it outside them."""
        roots = self.readable_roots()
        return roots if fspaths.within_any(approved, roots) else [*roots, approved]

    def read_guard(self, approved: Path) -> Callable[[Path], bool]:
        """Whether a file actually opened (its descriptor's real path) may be read: the path that
        was approved, or anything inside the readable roots. A swap between the check and the
        open cannot turn an inside read into an outside one."""
        roots = self.readable_roots()
        return lambda real: real == approved or fspaths.within_any(real, roots)

    async def require_permission(
        self, tool: str, action: str, target: str, description: str = "", params: dict[str, Any] | None = None
    ) -> None:
        await self.permissions.require(PermissionRequest(tool, action, target, description, params or {}))

    async def diagnostics_after_view(self, path: Path) -> str:
        if self.lsp is None:
            return ""
        try:
            return await self.lsp.after_view(path)
        except Exception:  # diagnostics are extra: a failing server must not fail a good read
            log.exception("diagnostics after view of %s failed", path)
            return ""

    async def diagnostics_after_change(self, paths: list[Path]) -> str:
        if self.lsp is None:
            return ""
        self.progress("diagnostics", {"text": "checking with the language servers"})
        try:
            return await self.lsp.after_change(paths)
        except Exception:  # the change is already written: report it as done, without diagnostics
            log.exception("diagnostics after changing %s failed", paths)
            return "(Diagnostics unavailable: the language server failed; see the log.)"


class Tool(ABC):
    """A tool module defines one subclass: ``name``, ``description``, ``Params`` and ``run``.
    (Custom tools set ``name`` and ``description`` per instance.)"""

    name: str
    description: str
    #: A short human label (MCP hosts show it); defaults to the name.
    title: str = ""
    Params: ClassVar[type]
    read_only: ClassVar[bool] = False
    #: Offered in read-only sessions although it can write (lsp: navigation, and rename): its
    #: writes ask for action "write", which read-only sessions refuse.
    offered_read_only: ClassVar[bool] = False
    #: Reaches beyond the workspace (the network, or any program): MCP's ``openWorldHint``.
    open_world: ClassVar[bool] = False
    #: Calling again with the same arguments changes nothing more (read-only tools always are).
    idempotent: ClassVar[bool] = False
    #: See ToolInfo.grammar.
    grammar: ClassVar[str | None] = None

    def in_read_only_sessions(self) -> bool:
        return self.read_only or self.offered_read_only

    def info(self) -> ToolInfo:
        return ToolInfo(
            self.name,
            self.description,
            schema_for(self.Params),
            self.read_only,
            title=self.title or self.name,
            open_world=self.open_world,
            destructive=not self.read_only,
            idempotent=self.read_only or self.idempotent,
            grammar=self.grammar,
        )

    @abstractmethod
    async def run(self, params: Any, ctx: ToolContext) -> ToolResponse: ...


#: The built-in tools. Modules are imported on first use so the CLI loads only the tool it runs.
BUILTIN_TOOL_NAMES = (
    *("bash", "job_output", "job_input", "job_kill"),
    *("view", "read_many", "write", "edit", "multiedit", "patch", "notebook_edit"),
    *("glob", "grep", "ls", "lsp", "fetch", "skill", "outline", "symbol_edit"),
)
TOOL_MODULES: dict[str, str] = {name: f".{name}" for name in BUILTIN_TOOL_NAMES}


def tool_names() -> list[str]:
    """The built-in tools' names (a session's own list: ``ToolRegistry.names``)."""
    return list(TOOL_MODULES)


def get_tool(name: str) -> Tool:
    """A built-in tool; ``KeyError`` for any other name."""
    if name not in TOOL_MODULES:
        raise KeyError(name)
    tool: Tool = importlib.import_module(TOOL_MODULES[name], __package__).TOOL
    return tool


def all_tools() -> list[Tool]:
    return [get_tool(name) for name in tool_names()]


class ToolRegistry:
    """The tools one session offers: the built-ins (or a profile's tools over them, see
    llm/profiles), and custom tools found for its workspace (see custom.py). A custom tool
    replaces a built-in only where the config allows it."""

    def __init__(
        self,
        custom: dict[str, Tool] | None = None,
        problems: list[str] | None = None,
        *,
        profile: str = "default",
    ) -> None:
        self._custom = dict(custom or {})
        #: Why a custom tool was left out (a name clash, an invalid name), one line each.
        self.problems = list(problems or [])
        self.profile = profile
        self._profile_tools: dict[str, Tool] | None = None
        if profile != "default":
            from ..profiles import profile_tools

            self._profile_tools = profile_tools(profile)

    @classmethod
    def for_workspace(cls, workspace: Path, config: Config, profile: str = "default") -> ToolRegistry:
        directories = (workspace / WORKSPACE_TOOLS_DIR, user_tools_dir())
        if not config.custom_tools or not any(d.is_dir() for d in directories):
            return cls(profile=profile)  # the common case, without importing the custom-tool machinery
        from .custom import discover_custom_tools

        found, problems = discover_custom_tools(workspace, config)
        return cls(found, problems, profile=profile)

    def _own_names(self) -> list[str]:
        return list(self._profile_tools) if self._profile_tools is not None else list(TOOL_MODULES)

    def names(self) -> list[str]:
        own = self._own_names()
        return [*own, *(name for name in self._custom if name not in own)]

    def get(self, name: str) -> Tool:
        custom = self._custom.get(name)
        if custom is not None:
            return custom
        if self._profile_tools is not None:
            return self._profile_tools[name]
        return get_tool(name)

    def tools(self) -> list[Tool]:
        return [self.get(name) for name in self.names()]


def _error(message: str, **metadata: Any) -> ToolResponse:
    return ToolResponse(content=message, is_error=True, metadata=metadata)


async def run_tool(name: str, raw_params: Any, ctx: ToolContext) -> ToolResponse:
    """Run tool ``name`` with ``raw_params`` (parsed JSON, or a JSON string). Never raises."""
    started = time.perf_counter()
    response = await _run(name, raw_params, ctx)
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
        return _error(_unknown_tool(name, ctx.tools.names()), error="unknown_tool")
    return await _run_tool(tool, name, raw_params, ctx)


async def _run_tool(tool: Tool, name: str, raw_params: Any, ctx: ToolContext) -> ToolResponse:
    if isinstance(raw_params, str | bytes):
        try:
            raw_params = json.loads(raw_params)
        except (ValueError, RecursionError) as exc:
            return _error(f"Invalid parameters for {name}: not valid JSON ({exc}).", error="invalid_params")
    params: Any
    try:
        params = parse_params(tool.Params, raw_params)
    except ParamsError as exc:
        return _error(f"Invalid parameters for {name}: {exc}.", error="invalid_params")
    except RecursionError:
        return _error(f"Invalid parameters for {name}: nested too deeply.", error="invalid_params")
    try:
        return await tool.run(params, ctx)
    except ToolCancelled as exc:
        return _error(exc.message, aborted=True, **exc.metadata)
    except ToolError as exc:
        return _error(exc.message, **exc.metadata)
    except asyncio.CancelledError:
        raise
    except ModuleNotFoundError as exc:
        log.exception("tool %s is missing a dependency", name)
        return _error(
            f"The {name} tool cannot run: its dependency '{exc.name}' is not installed in this Python "
            f"({sys.executable}). Install the project first (pip install agent-toolsmith, or `make run` in a "
            "checkout).",
            error="missing_dependency",
        )
    except Exception as exc:
        log.exception("tool %s failed", name)
        return _error(f"Internal error in {name}: {type(exc).__name__}: {exc}")


def _unknown_tool(name: str, available: list[str]) -> str:
    shown = name if len(name) <= 60 else name[:60] + "…"
    close = difflib.get_close_matches(name.lower(), available, n=1, cutoff=0.5)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    return f"Unknown tool {shown!r}.{hint} Available tools: {', '.join(available)}."
