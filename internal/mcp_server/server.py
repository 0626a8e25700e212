"""The MCP server's core: :class:`ToolsmithServer` answers the protocol's requests (tool
listing, tool calls, discovery) and keeps one toolsmith :class:`Session` per MCP session —
created on its first call, closed when deleted, idle or at shutdown. The transports
(``stdio_transport``, ``http_transport``) serve it."""

from __future__ import annotations

import asyncio
import json
import os
import time
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..logs import logger
from .convert import ProgressReporter, call_result, client_roots, elicit_answers, input_required_result, mcp_tool
from .sdk import HANDSHAKE_PROTOCOL_VERSIONS, Server, ServerRequestContext, types

if TYPE_CHECKING:  # imported when first needed: `initialize` is answered before the tools load
    from ..audit import AuditLog
    from ..config import Config
    from ..llm.tools.contract import ToolInfo, ToolResponse
    from ..llm.tools.registry import ToolRegistry
    from ..permission import Answers, QuestionRequest
    from ..session import Session

log = logger("toolsmith")

#: An HTTP session with no call for this long is closed (its shells and language servers too);
#: ``--session-idle`` sets it. A session with a call running is never closed.
SESSION_IDLE_S = 10 * 60
#: A session that made at most one call (a one-shot client that never sends DELETE) is closed
#: after this long without a call, when that is sooner than the session idle time.
ONE_SHOT_IDLE_S = 2 * 60
#: Idle HTTP sessions are looked for this often (or four times per idle time, when shorter).
REAP_INTERVAL_S = 60.0
#: At most this many toolsmith sessions at once (``--max-sessions``): each holds a shell state
#: and may hold language servers. A call that would open one more is refused, saying why.
MAX_SESSIONS = 64
#: Closing one session's language servers on shutdown waits at most this long.
CLOSE_TIMEOUT_S = 5.0
STDIO_KEY = "stdio"
#: The resource that shows the calling session's plan (the plan tool's list) as JSON.
PLAN_URI = "toolsmith://plan"

#: The tool call being run (its context and, over 2026-07-28, the user's answers it carries), so a
#: question its tool asks goes to the client that made the call.
_CALL: ContextVar[tuple[ServerRequestContext[Any], dict[str, Any] | None] | None] = ContextVar(
    "toolsmith_mcp_call", default=None
)

INSTRUCTIONS = (
    "Coding tools for the workspace {workspace}: read files with view, search with grep and glob, "
    "change files with edit, multiedit, write or patch (view a file before changing it), run "
    "commands with bash."
)
STATELESS_REFUSAL = (
    "This server keeps state per MCP session (files read, the shell's directory and environment, "
    "language servers), and protocol 2026-07-28 has no sessions over HTTP. Connect with the "
    "initialize handshake (protocol 2025-11-25), or run the server over stdio."
)


@dataclass
class _Entry:
    session: Session
    last_used: float = field(default_factory=time.monotonic)
    running: int = 0
    calls: int = 0


class ToolsmithServer:
    """The MCP server for one workspace; ``stdio_transport.serve_stdio`` or ``http_transport.serve_http``
    runs it."""

    def __init__(
        self,
        workspace: Path,
        config: Config,
        *,
        read_only: bool = False,
        audit: AuditLog | None = None,
        session_idle_s: float = SESSION_IDLE_S,
        max_sessions: int = MAX_SESSIONS,
        profile: str = "default",
    ) -> None:
        from ..permission import ToolPolicy

        self.session_idle_s = session_idle_s
        self.max_sessions = max_sessions

        self.workspace = Path(os.path.realpath(workspace))
        self.config = config
        self.read_only = read_only
        self.audit = audit
        #: The tool shapes offered (see llm/profiles); checked when the tools load.
        self.profile = profile
        self.policy = ToolPolicy(read_only=read_only)
        self._registry: ToolRegistry | None = None
        self.sessions: dict[str, _Entry] = {}
        self._http = False
        self.server: Server[Any] = Server(
            "toolsmith",
            version=__version__,
            title="Toolsmith",
            instructions=INSTRUCTIONS.format(workspace=self.workspace),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_read_resource=self._read_resource,
        )

    @property
    def registry(self) -> ToolRegistry:
        """The tools, loaded on the first listing or call (not before `initialize` is answered)."""
        if self._registry is None:
            from ..llm.tools.registry import ToolRegistry

            self._registry = ToolRegistry.for_workspace(self.workspace, self.config, self.profile)
            for problem in self._registry.problems:
                log.warning("%s", problem)
        return self._registry

    # --- the protocol -------------------------------------------------------------------------

    def tool_infos(self) -> list[ToolInfo]:
        return [t.info() for t in self.registry.tools() if self.policy.permits(t.name, t.in_read_only_sessions())]

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[mcp_tool(info) for info in self.tool_infos()])

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        """One call's failure is its own: the runner answers a tool's errors, and anything that
        escapes it or the server's own steps (a session that cannot be made) becomes this call's
        error result, so the session and the server serve on. (A native crash cannot be caught:
        parsing, the one place hostile input meets native code, runs in a child first when the
        input looks hostile, syntax/probe.py.)"""
        from ..llm.tools.contract import ToolResponse

        try:
            return await self._run_call(ctx, params)
        except Exception as exc:
            log.exception("tools/call %s failed", params.name)
            failed = ToolResponse(f"Internal error in the MCP server answering {params.name}: {type(exc).__name__}: "
                                  f"{exc}. The server serves on; its log has the details.", is_error=True)  # fmt: skip
            return call_result(failed)

    async def _run_call(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        from ..llm.tools.contract import ToolResponse

        key = self._session_key(ctx)
        if key is None:
            return call_result(ToolResponse(STATELESS_REFUSAL, is_error=True, metadata={"error": "no_session"}))
        if key not in self.sessions and len(self.sessions) >= self.max_sessions:
            return call_result(self._too_many_sessions())
        entry = await self._entry(key, ctx)
        if entry is None:
            return call_result(self._too_many_sessions())
        entry.running += 1
        entry.calls += 1
        reporter = ProgressReporter(ctx)
        call = _CALL.set((ctx, params.input_responses))
        try:
            response = await entry.session.run(params.name, params.arguments or {}, progress=reporter.report)
            await reporter.drain()
        finally:
            _CALL.reset(call)
            reporter.close()
            entry.running -= 1
            entry.last_used = time.monotonic()
        if response.metadata.get("error") == "input_required":
            return input_required_result(response.metadata)
        return call_result(response)

    async def _ask_user(self, request: QuestionRequest) -> Answers:
        """The question tool's questions, put to the user by the client that made the call."""
        from ..errors import CannotAsk

        call = _CALL.get()
        if call is None:
            raise CannotAsk("No MCP call is running to ask the user through.")
        ctx, responses = call
        return await elicit_answers(ctx, request, responses)

    async def _list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        plan = types.Resource(
            uri=PLAN_URI, name="plan", title="The plan",
            description="The model's plan in this session (the plan tool's list), as JSON.",
            mime_type="application/json",
        )  # fmt: skip
        return types.ListResourcesResult(resources=[plan])

    async def _read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        if str(params.uri) != PLAN_URI:
            from mcp.shared.exceptions import MCPError

            unknown = f"Unknown resource {params.uri}: this server offers {PLAN_URI}."
            raise MCPError(code=types.INVALID_PARAMS, message=unknown)
        key = self._session_key(ctx)
        entry = self.sessions.get(key) if key is not None else None
        plan = entry.session.ctx.plan.to_json() if entry is not None else {"items": []}
        contents = types.TextResourceContents(uri=PLAN_URI, mime_type="application/json", text=json.dumps(plan))
        return types.ReadResourceResult(contents=[contents])

    def accept_http_sessions(self) -> None:
        """Serving HTTP: a session is the client's ``Mcp-Session-Id``, and ``server/discover``
        advertises the handshake versions only (see :meth:`_discover`)."""
        self._http = True
        self.server.add_request_handler("server/discover", types.RequestParams, self._discover)

    async def _discover(self, ctx: ServerRequestContext[Any], params: types.RequestParams) -> types.DiscoverResult:
        """Over HTTP: advertise the handshake versions only, so clients open a session."""
        return types.DiscoverResult(
            supported_versions=list(HANDSHAKE_PROTOCOL_VERSIONS),
            capabilities=self.server.get_capabilities(),
            instructions=self.server.instructions,
        )

    def _session_key(self, ctx: ServerRequestContext[Any]) -> str | None:
        if not self._http:
            return STDIO_KEY
        headers = getattr(ctx.request, "headers", None)
        session_id = headers.get("mcp-session-id") if headers is not None else None
        return session_id or None

    # --- sessions -----------------------------------------------------------------------------

    async def _entry(self, key: str, ctx: ServerRequestContext[Any]) -> _Entry | None:
        """The session of ``key``, created on its first call; None when that would pass the limit."""
        entry = self.sessions.get(key)
        if entry is not None:
            return entry
        # Asking the client for its roots may take up to ROOTS_TIMEOUT_S: no lock is held
        # meanwhile, so other sessions' calls go on. Two first calls of one session may both
        # ask; the first to finish creates the session (no await between the check and the set).
        roots = await client_roots(ctx)
        entry = self.sessions.get(key)
        if entry is None:
            if len(self.sessions) >= self.max_sessions:  # other first calls won the race meanwhile
                return None
            entry = self.sessions[key] = _Entry(self._new_session(roots))
        return entry

    def _new_session(self, roots: list[Path]) -> Session:
        from ..permission import allow_all, read_only_policy
        from ..session import Session

        extra = [r for r in roots if r != self.workspace and r not in self.config.allowed_dirs]
        # A view never waits for a language server to start (seconds, for a read): servers
        # start on the first change (or an lsp call), and views then report what they know.
        config = replace(self.config, allowed_dirs=[*self.config.allowed_dirs, *extra], lsp_on_view=False)
        return Session(
            self.workspace,
            config=config,
            asker=read_only_policy if self.read_only else allow_all,
            tool_policy=self.policy,
            audit=self.audit,
            profile=self.profile,
            ask_user=self._ask_user,
        )

    async def drop_session(self, key: str) -> None:
        entry = self.sessions.pop(key, None)
        if entry is not None:
            await _close_quietly(entry.session)

    async def close(self) -> None:
        entries = list(self.sessions.values())
        self.sessions.clear()
        await asyncio.gather(*(_close_quietly(e.session) for e in entries))
        if self.audit is not None:
            await asyncio.to_thread(self.audit.close)

    def _too_many_sessions(self) -> ToolResponse:
        from ..llm.tools.contract import ToolResponse

        return ToolResponse(
            f"This server already has {len(self.sessions)} open sessions, its limit (--max-sessions "
            f"{self.max_sessions}). Close a session you no longer use (an MCP client's DELETE of its session), "
            f"or retry later: sessions without a call for {self.session_idle_s:.0f} s are closed.",
            is_error=True,
            metadata={"error": "too_many_sessions", "limit": self.max_sessions},
        )

    def idle_limit_s(self, entry: _Entry) -> float:
        """How long ``entry`` may go without a call: one-shot sessions (at most one call) go sooner."""
        return min(self.session_idle_s, ONE_SHOT_IDLE_S) if entry.calls <= 1 else self.session_idle_s

    async def reap_idle_once(self) -> None:
        now = time.monotonic()
        for key, entry in list(self.sessions.items()):
            if entry.running == 0 and now - entry.last_used > self.idle_limit_s(entry):
                log.info("closing MCP session %s: idle for %.0f s", key, now - entry.last_used)
                await self.drop_session(key)

    async def reap_idle(self) -> None:
        """Close idle sessions, every REAP_INTERVAL_S (sooner for a short idle time), until cancelled."""
        interval = min(REAP_INTERVAL_S, self.session_idle_s / 4)
        while True:
            await asyncio.sleep(interval)
            await self.reap_idle_once()


async def _close_quietly(session: Session) -> None:
    try:
        await asyncio.wait_for(session.close(), CLOSE_TIMEOUT_S)
    except (Exception, TimeoutError) as exc:
        log.warning("closing a session failed: %s", exc)

