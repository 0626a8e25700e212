"""The embedding API: a :class:`Session` owns one agent session's context and runs tools in it.

    async with Session(workspace="/repo") as session:
        response = await session.run("view", {"file_path": "README.md"})

A session's state (files read and when, the shell's cwd and environment) can be saved to and
loaded from a state directory, which is how the CLI carries a ``--session`` across processes.

asyncio is imported where a session needs it (idle timers, worker threads), not at the top: the
CLI runs a one-shot view without an event loop and must not pay for importing it.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .cancel import CancelToken
from .config import Config
from .errors import ToolCancelled, ToolNotOffered
from .event_loop import off_loop
from .file_tracker import FileTracker
from .fsutil.locks import PathLocks
from .llm.tools.context import ToolContext, WebPrompt
from .llm.tools.contract import DiagnosticsSource, Progress, Tool, ToolInfo, ToolResponse
from .llm.tools.registry import ToolRegistry
from .llm.tools.runner import error_response, run_tool
from .logs import logger
from .lsp.api import KeepsOldTexts
from .permission import Asker, PermissionService, ToolPolicy, UserAsker, allow_all, refusing_writes
from .state import PRIVATE_FILE_MODE, check_session_id, read_state_file

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable, Sequence

    from .audit import AuditLog
    from .checkpoints import ChangeLog, FileChange, RewindResult
    from .plan import PlanItem

log = logger("toolsmith")

#: The largest session state file loaded (files read with their digests, the shell's cwd and
#: environment, language-server health); a larger one is not read.
MAX_STATE_FILE_BYTES = 32 * 1024 * 1024


class Session:
    """One agent session: the tools, their services, and the state calls share.

    ``await session.run(tool, params)`` runs one call and always returns a ToolResponse (a
    failure is a response with ``is_error`` and a ``metadata["error"]`` code, see
    docs/error-codes.md); ``await session.close()`` stops the language servers and every process
    the session's calls started. One Session per conversation: what it remembers (which files
    were read, the shell's cwd and environment, background jobs, checkpoints) belongs to it.

    Arguments (all but ``workspace`` by keyword):

    - ``workspace``: the directory the tools work in; paths are resolved from it, and writes are
      confined to it and ``config.allowed_dirs`` (unless ``config.confine_writes`` is off).
    - ``session_id``: names the session's state (spill files, shell state, change log) under the
      state directory; a new random id by default. Reusing an id continues that state.
    - ``config``: the settings (config.py; ``Config.load`` reads the TOML files); defaults otherwise.
    - ``asker``: called for every permission request that no rule decides; ``allow_all`` by
      default (an embedder with a user in the loop passes its own).
    - ``ask_user``: puts the question tool's questions to the user (a ``QuestionRequest`` in,
      ``Answers`` out; see permission/). None: the host cannot ask, and the question tool says so
      at once.
    - ``web_prompt``: the host's model for the profile tools that run one on a fetched page
      (claude's WebFetch, gemini's web_fetch): ``(prompt, url, page text) -> answer``. None: the
      page itself comes back with the prompt restated.
    - ``progress``: called with ``(kind, data)`` while a call runs (output lines, diagnostics
      status); per-call ``progress`` in :meth:`run` overrides it.
    - ``lsp``: the diagnostics source; None starts the configured language servers on demand
      (when ``config.lsp_enabled``), or pass an embedder's own source.
    - ``locks``: path locks to share with other sessions on the same files, so two sessions
      never interleave a read-modify-write of one file (the session's own set by default).
    - ``tool_policy``: which tools this session offers (``ToolPolicy(read_only=True)`` offers only
      the read-only ones and refuses writes).
    - ``audit``: an audit log shared with other sessions (the owner closes it); None writes one to
      ``config.audit_log`` when that is set.
    - ``profile``: the tool shapes the model sees: ``default``, ``claude``, ``codex`` or ``gemini``
      (llm/profiles/); every profile runs the same engine tools.
    - ``tools``: the embedder's own tools, offered beside the others: plain Python functions (sync
      or async; schema from the type hints, description from the docstring, see
      llm/tools/function_tools.py and the ``tool`` decorator) or :class:`Tool` objects. One named
      like a built-in replaces it. TypeError or ValueError here for one that cannot be a tool.
    """

    def __init__(
        self,
        workspace: str | os.PathLike[str] = ".",
        *,
        session_id: str | None = None,
        config: Config | None = None,
        asker: Asker = allow_all,
        progress: Progress | None = None,
        lsp: DiagnosticsSource | None = None,
        locks: PathLocks | None = None,
        tool_policy: ToolPolicy | None = None,
        audit: AuditLog | None = None,
        profile: str = "default",
        ask_user: UserAsker | None = None,
        web_prompt: WebPrompt | None = None,
        tools: Sequence[Tool | Callable[..., Any]] = (),
    ) -> None:
        from .llm.profiles import check_profile

        check_profile(profile)
        root = Path(os.path.realpath(workspace))
        if not root.is_dir():
            what = "is not a directory" if root.exists() else "does not exist"
            raise ValueError(f"Session workspace {os.fspath(workspace)!r} {what}: give an existing directory.")
        config = config or Config()
        registry = ToolRegistry.for_workspace(root, config, profile)
        if tools:
            from .llm.tools.function_tools import as_tools

            registry.add(as_tools(tools))
        ctx = ToolContext(
            workspace=root,
            session_id=check_session_id(session_id) if session_id is not None else os.urandom(16).hex(),
            config=config,
            # A read-only session refuses the writes of tools it offers (lsp's rename).
            permissions=PermissionService(
                refusing_writes(asker) if tool_policy and tool_policy.read_only else asker, ask_user
            ),
            lsp=lsp,
            locks=locks or PathLocks(),
            tools=registry,
            web_prompt=web_prompt,
        )
        #: The tools this session offers and runs (all by default).
        self.tool_policy = tool_policy or ToolPolicy()
        #: Where each call is recorded: the one given (shared, the owner closes it), else one
        #: for ``config.audit_log`` (this session's own), else none.
        self.audit = audit
        self._owns_audit = audit is None and config.audit_log is not None
        if self._owns_audit and config.audit_log is not None:
            from .audit import AuditLog

            self.audit = AuditLog(config.audit_log, config.audit_redact_keys)
        if progress is not None:
            ctx.progress = progress
        self.ctx = ctx
        ctx.on_commit = self._record_commit
        if lsp is None and ctx.config.lsp_enabled:
            ctx.lsp = _default_lsp(ctx)
        #: Calls running now, and when the last one ended (monotonic): what idleness is.
        self.running = 0
        self.last_call = time.monotonic()
        self._idle_timer: asyncio.TimerHandle | None = None
        self._idle_stop: asyncio.Future[None] | None = None

    @property
    def session_id(self) -> str:
        return self.ctx.session_id

    async def run(
        self,
        tool: str,
        params: Any,
        *,
        cancel: CancelToken | None = None,
        progress: Progress | None = None,
        lsp: bool = True,
        audit: AuditLog | None = None,
    ) -> ToolResponse:
        """Run one tool call. ``cancel`` stops it early (as does cancelling the awaiting task).
        ``lsp=False`` runs this call without language-server diagnostics (the CLI's ``--no-lsp``
        through a session host); ``audit`` records this call there instead of in the session's
        audit log.

        First, commits in this workspace that a killed process left half done are rolled back
        (or finished); see fsutil/commit.py. Every call, cancelled ones too, goes to the audit
        log when there is one.
        """
        started = time.time()
        audit = audit or self.audit
        try:
            await self._call_starts()  # inside the try: a cancel while it waits still ends the call
            response = await self._run(tool, params, cancel, progress, lsp)
        except BaseException:
            aborted = error_response(ToolCancelled("Tool call was aborted"), aborted=True)
            self._audit(audit, started, tool, params, aborted)
            raise
        finally:
            self._call_ends()
        self._audit(audit, started, tool, params, response)
        return response

    # --- idleness: language servers stop after config.lsp_idle_s without a call ---

    async def _call_starts(self) -> None:
        self.running += 1
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        if self._idle_stop is not None:  # servers being stopped: let that finish, then restart
            import asyncio

            with contextlib.suppress(Exception):
                await asyncio.shield(self._idle_stop)
            self._idle_stop = None

    def _call_ends(self) -> None:
        self.running -= 1
        self.last_call = time.monotonic()
        idle_s = self.ctx.config.lsp_idle_s
        if self.running == 0 and idle_s > 0 and self.ctx.lsp is not None:
            import asyncio

            self._idle_timer = asyncio.get_running_loop().call_later(idle_s, self._on_idle)

    def _on_idle(self) -> None:
        import asyncio

        self._idle_timer = None
        if self.running == 0 and self._idle_stop is None:
            log.info("session %s idle for %s s: stopping its language servers", self.session_id,
                     self.ctx.config.lsp_idle_s)  # fmt: skip
            self._idle_stop = asyncio.ensure_future(self.stop_language_servers())

    async def stop_language_servers(self) -> None:
        """Stop this session's language servers now; the next call that needs one starts it."""
        if self.ctx.lsp is not None:
            await self.ctx.lsp.close()

    def _audit(self, audit: AuditLog | None, started: float, tool: str, params: Any, response: ToolResponse) -> None:
        if audit is not None:
            audit.record(
                started=started, session=self.session_id, tool=tool, params=params,
                is_error=response.is_error, metadata=response.metadata, content=response.content,
            )  # fmt: skip

    async def _run(
        self, tool: str, params: Any, cancel: CancelToken | None, progress: Progress | None, lsp: bool = True
    ) -> ToolResponse:
        refused = self._refusal(tool)
        if refused is not None:
            return refused
        self._recover()
        ctx = self.ctx
        if cancel is not None or progress is not None:
            ctx = replace(ctx, cancel=cancel or CancelToken(), progress=progress or ctx.progress)
        if not lsp and ctx.lsp is not None:
            ctx = replace(ctx, lsp=None)
        return await run_tool(tool, params, ctx)

    def _recover(self) -> None:
        journal_dir = self.ctx.state.location() / "journal"
        try:
            with os.scandir(journal_dir) as journals:
                if next(journals, None) is None:
                    return  # no journal at all (the usual case): nothing to recover, nothing to import
        except OSError:
            return  # no journal directory
        from .fsutil.journal import recover

        for line in recover(journal_dir, self.ctx.workspace):
            log.warning("recovered an interrupted change: %s", line)

    # --- checkpoints: undo what this session's file tools changed (see checkpoints.py) ---

    @functools.cached_property
    def _change_log(self) -> ChangeLog:
        """Made when first needed: a session whose tools change nothing never loads checkpoints.py."""
        from .checkpoints import ChangeLog

        ctx = self.ctx
        return ChangeLog(
            lambda: ctx.state.location() / "sessions" / ctx.session_id / "changes",
            lambda: ctx.state.directory("sessions", ctx.session_id, "changes"),
        )

    def _record_commit(self, changes: Sequence[Any]) -> None:
        self._change_log.record(changes)
        lsp = self.ctx.lsp
        if isinstance(lsp, KeepsOldTexts):  # what other files' diagnostics before the change are taken from
            lsp.remember_old_texts(
                {c.path: (c.expect, c.data) for c in changes if c.kind == "write" and c.data is not None}
            )

    def checkpoint(self) -> str:
        """Mark this point of the session; :meth:`rewind` to the id returned puts back every file
        the session's file tools create, change, move or delete from now on. Kept in the state
        directory, so a ``--session`` carries it across CLI processes."""
        return self._change_log.checkpoint()

    def changes(self, since: str) -> list[FileChange]:
        """The files the session's tools changed since checkpoint ``since`` (net, one per path)."""
        return self._change_log.changes(since)

    async def rewind(self, checkpoint_id: str, force: bool = False) -> RewindResult:
        """Put back every file the session's tools changed since ``checkpoint_id``, in one
        all-or-nothing commit. A file someone else changed since the session's tools last did is
        reported in ``conflicts`` and left alone, unless ``force``. Raises :class:`ToolError` for
        an unknown checkpoint or a failed commit (then nothing was changed)."""
        import asyncio

        from .checkpoints import RewindResult
        from .errors import NoChange
        from .llm.change.pipeline import ChangeRequest, apply_change

        self._recover()
        change_log = self._change_log
        targets, conflicts, kept = await asyncio.to_thread(change_log.rewind_targets, checkpoint_id, force=force)
        restored: list[Path] = []
        if targets:
            request = ChangeRequest("rewind", targets, lambda _planned: f"rewind to checkpoint {checkpoint_id}",
                                    ask=False)  # fmt: skip
            try:
                applied = await apply_change(self.ctx, request)
                restored = [p.target.path for p in applied.planned if p.target is not None]
            except NoChange:
                pass  # every file is as the checkpoint had it, or changed by someone else
        await asyncio.to_thread(change_log.rewound, checkpoint_id, kept)
        return RewindResult(checkpoint_id, restored, conflicts)

    def plan(self) -> tuple[PlanItem, ...]:
        """The model's plan as it last sent it (the plan tool; empty until then). Each update is
        also sent to the progress callback as kind ``"plan"``."""
        return self.ctx.plan.items()

    def tools(self, policy: ToolPolicy | None = None) -> list[ToolInfo]:
        """What to declare to the model: the session's tools (built-in and custom) that
        ``policy`` (default: the session's own) offers."""
        policy = policy or self.tool_policy
        tools = self.ctx.tools.tools()
        return [tool.info() for tool in tools if policy.permits(tool.name, tool.in_read_only_sessions())]

    def prompt_section(self, policy: ToolPolicy | None = None) -> str:
        """A tools section for the host's system prompt (markdown): each tool ``policy`` (default:
        the session's own) offers, by name with its description's first sentence, then each custom
        tool's guidance (its ``.md`` body) and each function tool's (its docstring after the
        summary). See llm/tools/prompt_section.py."""
        from .llm.tools.prompt_section import prompt_section

        policy = policy or self.tool_policy
        offered = [t for t in self.ctx.tools.tools() if policy.permits(t.name, t.in_read_only_sessions())]
        return prompt_section(offered)

    def _refusal(self, name: str) -> ToolResponse | None:
        try:
            tool = self.ctx.tools.get(name)
        except KeyError:
            return None  # the runner says "Unknown tool" with the list and a suggestion
        why = self.tool_policy.refusal(name, tool.in_read_only_sessions())
        if why is None:
            return None
        offered = ", ".join(info.name for info in self.tools()) or "none"
        return error_response(ToolNotOffered(f"The {name} tool is not available: {why}. Available tools: {offered}."))

    def available_skills_xml(self) -> str:
        """The ``<available_skills>`` block for the system prompt (see internal/skills.py)."""
        from .skills import available_skills_xml

        return available_skills_xml(self.ctx.workspace, list(self.ctx.config.skill_paths))

    async def close(self) -> None:
        # Only what calls made (MadeOnFirstUse): closing a session that ran no process, no job,
        # does not import the modules behind them.
        made = self.ctx.made_on_first_use
        # Kill first, synchronously: a close given a deadline (the MCP server's) still stops
        # every process even if the waits below are cut short.
        if made.processes is not None:
            made.processes.kill_all_now()
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        if self._idle_stop is not None:
            with contextlib.suppress(Exception):
                await self._idle_stop
        if made.jobs is not None:
            await made.jobs.close()
        if made.processes is not None:
            await made.processes.close()
        if self.ctx.lsp is not None:
            await self.ctx.lsp.close()
        if self._owns_audit and self.audit is not None:
            await off_loop(self.audit.close)

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- persistence, for front doors that live one call at a time (the CLI) ---

    def state_file(self) -> Path:
        return self.ctx.config.state_dir / "sessions" / self.session_id / "state.json"

    def load_state(self) -> None:
        """Load the state file. None yet, or one that is not a regular file of this user's alone
        (a FIFO, a symbolic link, another's), larger than :data:`MAX_STATE_FILE_BYTES` or not
        JSON: the session starts fresh, and the next save replaces it."""
        try:
            data = json.loads(read_state_file(self.state_file(), MAX_STATE_FILE_BYTES))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            log.warning("session state %s not loaded: %s", self.state_file(), exc)
            return
        if not isinstance(data, dict):
            return
        if isinstance(data.get("files"), dict):
            self.ctx.files = FileTracker.from_json(data["files"])
        if isinstance(data.get("shell"), dict):
            from .shell.state import ShellState

            self.ctx.shell = ShellState.from_json(data["shell"])
        if self.ctx.lsp is not None and "lsp" in data:
            self.ctx.lsp.load_json(data["lsp"])
        if isinstance(data.get("plan"), dict):
            from .plan import Plan

            self.ctx.plan = Plan.from_json(data["plan"])

    def save_state(self) -> None:
        """Write the state file (0600: it holds the shell's exported environment). Without a
        usable state directory nothing is kept; ``ctx.state.problem`` says why."""
        directory = self.ctx.state.directory("sessions", self.session_id)
        if not self.ctx.state.usable:
            return
        data: dict[str, Any] = {"files": self.ctx.files.to_json(), "shell": self.ctx.shell.to_json()}
        if self.ctx.plan.items():
            data["plan"] = self.ctx.plan.to_json()
        if self.ctx.lsp is not None:
            data["lsp"] = self.ctx.lsp.to_json()
        from .fsutil.atomic import atomic_write

        try:
            atomic_write(directory / "state.json", json.dumps(data).encode("utf-8"), mode=PRIVATE_FILE_MODE)
        except OSError as exc:
            self.ctx.state.problem = f"toolsmith: could not save the session state in {directory}: {exc.strerror}."


def _default_lsp(ctx: ToolContext) -> DiagnosticsSource:
    """The LSP layer. Cheap to create: servers start on the first file of their type."""
    from .lsp.manager import LspManager

    return LspManager(ctx.workspace, ctx.config, ctx.state)
