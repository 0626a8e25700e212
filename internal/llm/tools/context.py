"""What a call gets: the session's services, and the narrow views tools declare.

:class:`ToolContext` holds one session's services (one per agent session; tools keep no state
of their own). A tool does not need all of it: each tool's ``run`` names the narrow protocol it
uses — :class:`CallServices` for what every call has (cancel, progress, config),
:class:`PathServices` for reading files inside the workspace, :class:`FileServices` for changing
them, :class:`ProcessServices` for running programs, :class:`LspServices` for the language
servers — and the type checker holds the tool to it.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from ...cancel import CancelToken
from ...config import Config, skill_tiers
from ...file_tracker import FileTracker
from ...fsutil import paths as fspaths
from ...fsutil.locks import PathLocks
from ...logs import logger
from ...permission import Answers, PermissionRequest, PermissionService, QuestionRequest
from ...plan import Plan
from ...state import StateDir
from .builtins import BuiltinTools
from .contract import DiagnosticsSource, Progress, ToolSet

if TYPE_CHECKING:
    from ...fsutil.line_index import LineIndexCache
    from ...proc import ProcessSupervisor
    from ...ripgrep.query import ReadableRoots
    from ...shell.jobs import JobTable
    from ...shell.state import ShellState
    from ...syntax.parse import SyntaxCache

T = TypeVar("T")

log = logger("toolsmith")

__all__ = [
    "CallServices", "FileServices", "LspServices", "PathServices", "ProcessServices", "ToolContext", "UserServices",
    "WebPrompt",
]  # fmt: skip


def _no_progress(message: str, data: dict[str, Any]) -> None:
    return None


#: A host's model applied to a fetched page: ``(prompt, url, page text) -> answer``, for the
#: product tools whose fetch runs a model (claude's WebFetch, gemini's web_fetch).
WebPrompt = Callable[[str, str, str], Awaitable[str]]


class CallServices(Protocol):
    """What every call has: its workspace and settings, cancellation, progress, state, asking."""

    @property
    def workspace(self) -> Path: ...
    @property
    def session_id(self) -> str: ...
    @property
    def config(self) -> Config: ...
    @property
    def cancel(self) -> CancelToken: ...
    @property
    def progress(self) -> Progress: ...
    @property
    def state(self) -> StateDir: ...

    async def require_permission(
        self, tool: str, action: str, target: str, description: str = "", params: dict[str, Any] | None = None
    ) -> None: ...


class UserServices(CallServices, Protocol):
    """What the session shares with its user: the plan the model keeps (plan) and questions put
    to the user through the host (question)."""

    @property
    def plan(self) -> Plan: ...

    async def ask_user(self, request: QuestionRequest) -> Answers: ...


class PathServices(CallServices, Protocol):
    """Reading files in (or, when the user allows, outside) the workspace: view, grep, glob, ls,
    outline, read_many. Reads are recorded so a later edit can tell the file changed."""

    @property
    def permissions(self) -> PermissionService: ...
    @property
    def files(self) -> FileTracker: ...
    @property
    def line_indexes(self) -> LineIndexCache: ...

    def resolve(self, file_path: str) -> Path: ...
    def display(self, path: Path) -> str: ...
    def variant(
        self, *, config: Config | None = None, permissions: PermissionService | None = None, lsp: bool = True
    ) -> PathServices:
        """This context with other settings, another permission service, or without language
        servers: how a tool uses a shared service on other terms (read_many shows each file as view
        does, through llm/pages, with its own read approvals and without language servers)."""
        ...

    def read_roots(self, approved: Path) -> list[Path]: ...
    def readable_for(self, approved: Path) -> ReadableRoots: ...
    def read_guard(self, approved: Path) -> Callable[[Path], bool]: ...
    async def require_read_permission(self, tool: str, path: Path) -> Path: ...
    async def ask_user(self, request: QuestionRequest) -> Answers:
        """The user's answers, through the host (see permission.PermissionService.ask_user)."""
        return await self.permissions.ask_user(request)

    async def diagnostics_after_view(self, path: Path) -> str: ...


class FileServices(PathServices, Protocol):
    """Changing files: write, edit, multiedit, patch, notebook_edit, symbol_edit."""

    @property
    def locks(self) -> PathLocks: ...
    @property
    def syntax_trees(self) -> SyntaxCache: ...
    @property
    def on_commit(self) -> Callable[[Sequence[Any]], None] | None: ...

    def writable_roots(self) -> list[Path]: ...
    def check_writable(self, path: Path, *, follow: bool = True) -> Path: ...
    def check_writable_together(self, paths: Sequence[Path]) -> None: ...
    async def diagnostics_after_change(self, paths: list[Path]) -> str: ...


class LspServices(FileServices, Protocol):
    """The lsp tool: navigation through the language servers, and rename (a change)."""

    @property
    def lsp(self) -> DiagnosticsSource | None: ...


class ProcessServices(CallServices, Protocol):
    """Running programs: bash, the job tools, custom tools."""

    @property
    def shell(self) -> ShellState: ...
    @property
    def processes(self) -> ProcessSupervisor: ...
    @property
    def jobs(self) -> JobTable: ...


class MadeOnFirstUse:
    """The services many calls never touch (the shell's state, background jobs, process trees,
    syntax trees, line indexes of large files), made when a call first asks: a one-shot view
    does not import the modules behind them. One per session, shared by every copy of its
    context (:meth:`ToolContext.for_call`, :meth:`ToolContext.variant`); ``None`` until made."""

    def __init__(self) -> None:
        self.shell: ShellState | None = None
        self.jobs: JobTable | None = None
        self.processes: ProcessSupervisor | None = None
        self.syntax_trees: SyntaxCache | None = None
        self.line_indexes: LineIndexCache | None = None
        # Calls run in worker threads: two first uses at once must still make one of each.
        self._lock = threading.Lock()

    def _made(self, name: str, make: Callable[[], T]) -> T:
        """The service in attribute ``name``, made by ``make`` on its first use."""
        with self._lock:
            made = getattr(self, name)
            if made is None:
                made = make()
                setattr(self, name, made)
            return cast(T, made)

    def get_shell(self) -> ShellState:
        from ...shell.state import ShellState

        return self._made("shell", ShellState)

    def get_jobs(self) -> JobTable:
        from ...shell.jobs import JobTable

        return self._made("jobs", JobTable)

    def get_processes(self) -> ProcessSupervisor:
        from ...proc import ProcessSupervisor

        return self._made("processes", ProcessSupervisor)

    def get_syntax_trees(self) -> SyntaxCache:
        from ...syntax.parse import SyntaxCache

        return self._made("syntax_trees", SyntaxCache)

    def get_line_indexes(self) -> LineIndexCache:
        from ...fsutil.line_index import LineIndexCache

        return self._made("line_indexes", LineIndexCache)


@dataclass
class ToolContext:
    """One session's services, all of them: the runner holds this; a tool sees the narrow
    protocol its ``run`` names (above). One per agent session; tools keep no state of their own."""

    workspace: Path
    session_id: str = "default"
    config: Config = field(default_factory=Config)
    permissions: PermissionService = field(default_factory=PermissionService)
    files: FileTracker = field(default_factory=FileTracker)
    cancel: CancelToken = field(default_factory=CancelToken)
    progress: Progress = _no_progress
    lsp: DiagnosticsSource | None = None
    locks: PathLocks = field(default_factory=PathLocks)
    #: The state directory (spill files, shell state, logs); from ``config.state_dir``.
    state: StateDir = field(default=None)  # type: ignore[assignment]
    #: The tools this session offers (built-ins unless a front door found custom ones).
    tools: ToolSet = field(default_factory=BuiltinTools)
    #: The model's plan (the plan tool), read by the host through ``Session.plan()``.
    plan: Plan = field(default_factory=Plan)
    #: The host's model for a fetched page's prompt (see WebPrompt); None: the page is returned.
    web_prompt: WebPrompt | None = None
    #: Told of every commit the file tools made (its fsutil.commit.Change list), right after it
    #: succeeded: the session's checkpoints record before-images here (see checkpoints.py).
    on_commit: Callable[[Sequence[Any]], None] | None = None
    #: The shell's state, jobs, process trees, syntax trees and line indexes: the properties below.
    made_on_first_use: MadeOnFirstUse = field(default_factory=MadeOnFirstUse, repr=False, compare=False)

    #: The readable roots, resolved as a call needs them and at most once per call (see
    #: :meth:`for_call`).
    _readable_roots: _ReadableRoots | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.state is None:
            self.state = StateDir(self.config.state_dir)

    @property
    def shell(self) -> ShellState:
        """The shell's directory and exported variables, as bash left them."""
        return self.made_on_first_use.get_shell()

    @shell.setter
    def shell(self, state: ShellState) -> None:
        self.made_on_first_use.shell = state

    @property
    def jobs(self) -> JobTable:
        """Background jobs (bash ``run_in_background``), read by job_output, fed by job_input."""
        return self.made_on_first_use.get_jobs()

    @property
    def processes(self) -> ProcessSupervisor:
        """Every process tree this session's calls started; closing the session kills them."""
        return self.made_on_first_use.get_processes()

    @property
    def syntax_trees(self) -> SyntaxCache:
        """The last syntax tree of files this session changed, for incremental reparsing."""
        return self.made_on_first_use.get_syntax_trees()

    @property
    def line_indexes(self) -> LineIndexCache:
        """Where view found line starts in large files (see fsutil/line_index.py)."""
        return self.made_on_first_use.get_line_indexes()

    def for_call(self) -> ToolContext:
        """This context for one call: the same services, with what a call may remember for its own
        duration (the resolved readable roots) starting empty. The runner makes one per call, so
        a root re-pointed between calls is seen by the next call."""
        return replace(self)

    def resolve(self, file_path: str) -> Path:
        return fspaths.resolve(self.workspace, file_path)

    def variant(
        self, *, config: Config | None = None, permissions: PermissionService | None = None, lsp: bool = True
    ) -> ToolContext:
        changed = replace(
            self,
            config=config or self.config,
            permissions=permissions or self.permissions,
            lsp=self.lsp if lsp else None,
        )
        new = changed.config
        if (new.allowed_dirs, new.skill_paths) == (self.config.allowed_dirs, self.config.skill_paths):
            changed._readable_roots = self._roots()  # the same call, the same roots: resolved once
        return changed

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

    def check_writable_together(self, paths: Sequence[Path]) -> None:
        """What :meth:`check_writable` cannot see path by path: several files written by one change
        (a patch) that together would make a git directory (see fsutil.paths.check_no_new_git_dir)."""
        roots = fspaths.writable_roots(self.workspace, self.config.allowed_dirs)
        fspaths.check_no_new_git_dir([fspaths.real_path(p) for p in paths], roots)

    def readable_roots(self) -> list[Path]:
        """Where read-only tools read without asking: the workspace, the allowed dirs, the state
        dir (spilled outputs the tools point to) and the skill directories."""
        return self._roots().all()

    def _roots(self) -> _ReadableRoots:
        if self._readable_roots is None:
            self._readable_roots = _ReadableRoots(self._root_candidates())
        return self._readable_roots

    def _root_candidates(self) -> Iterator[Path]:
        """The readable roots as configured (not resolved), the workspace first: most reads are
        inside it, and the rest (the skill directories among them) need not be resolved then."""
        for directory in (self.workspace, *self.config.allowed_dirs, self.state.location()):
            yield fspaths.from_workspace(self.workspace, directory)
        for directory in skill_tiers(self.workspace, list(self.config.skill_paths)):
            yield fspaths.from_workspace(self.workspace, directory)

    async def require_read_permission(self, tool: str, path: Path) -> Path:
        """Ask before reading outside :meth:`readable_roots` (symlinks resolved first); returns
        the real path that may be read (see :meth:`read_guard`)."""
        real = fspaths.real_path(path)
        if not self._roots().cover(real):
            await self.require_permission(tool, "read", str(real), f"read {real} (outside the workspace)")
        return real

    def read_roots(self, approved: Path) -> list[Path]:
        """Roots for anchored reads: the readable roots, plus ``approved`` when the user allowed
        reading it outside them."""
        return self.readable_for(approved).all()

    def readable_for(self, approved: Path) -> ApprovedRoots:
        """:meth:`read_roots`, resolved only as far as the questions asked of it need."""
        return ApprovedRoots(self._roots(), approved)

    def read_guard(self, approved: Path) -> Callable[[Path], bool]:
        """Whether a file actually opened (its descriptor's real path) may be read: the path that
        was approved, or anything inside the readable roots. A swap between the check and the
        open cannot turn an inside read into an outside one."""
        roots = self._roots()
        return lambda real: real == approved or roots.cover(real)

    async def require_permission(
        self, tool: str, action: str, target: str, description: str = "", params: dict[str, Any] | None = None
    ) -> None:
        await self.permissions.require(PermissionRequest(tool, action, target, description, params or {}))

    async def ask_user(self, request: QuestionRequest) -> Answers:
        """The user's answers, through the host (see permission.PermissionService.ask_user)."""
        return await self.permissions.ask_user(request)

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


class _ReadableRoots:
    """The readable roots of one call, each resolved (symlinks followed) only when a check gets
    to it, and at most once: a read inside the workspace resolves the workspace alone."""

    def __init__(self, candidates: Iterator[Path]) -> None:
        self._pending = candidates
        self._resolved: list[Path] = []

    def _next(self) -> Path | None:
        candidate = next(self._pending, None)
        if candidate is None:
            return None
        root = fspaths.real_path(candidate)
        self._resolved.append(root)
        return root

    def cover(self, real: Path) -> bool:
        """``real`` (a resolved path) is inside one of the roots."""
        if fspaths.within_any(real, self._resolved):
            return True
        while (root := self._next()) is not None:
            if fspaths.is_within(real, root):
                return True
        return False

    def all(self) -> list[Path]:
        while self._next() is not None:
            pass
        return list(self._resolved)


class ApprovedRoots:
    """The readable roots and a path approved outside them (see ToolContext.read_roots)."""

    def __init__(self, roots: _ReadableRoots, approved: Path) -> None:
        self._roots = roots
        self._approved = approved

    def cover(self, real: Path) -> bool:
        return self._roots.cover(real) or fspaths.is_within(real, self._approved)

    def all(self) -> list[Path]:
        roots = self._roots.all()
        return roots if fspaths.within_any(self._approved, roots) else [*roots, self._approved]


def _satisfies_every_view(ctx: ToolContext) -> tuple[LspServices, ProcessServices, UserServices]:
    """Never called: the type checker proves here that the context satisfies every narrow view."""
    return ctx, ctx, ctx
