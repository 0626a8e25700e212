"""The MCP server's core: :class:`ToolsmithServer` answers the protocol's requests (tool
listing, tool calls, discovery) and keeps one toolsmith :class:`Session` per MCP session —
created on its first call, closed when deleted, idle or at shutdown. The transports
(``stdio_transport``, ``http_transport``) serve it."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..logs import logger
from .convert import ProgressReporter, call_result, client_roots, elicit_answers, input_required_result, mcp_tool
from .http_limits import MAX_SESSIONS, ONE_SHOT_IDLE_S, SESSION_IDLE_S
from .sdk import HANDSHAKE_PROTOCOL_VERSIONS, Server, ServerRequestContext, types

if TYPE_CHECKING:  # imported when first needed: `initialize` is answered before the tools load
    from collections.abc import Sequence

    from ..audit import AuditLog
    from ..config import Config
    from ..llm.tools.contract import Tool, ToolInfo, ToolResponse
    from ..llm.tools.registry import ToolRegistry
    from ..permission import Answers, QuestionRequest
    from ..session import Session

log = logger("toolsmith")

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
#: Added to a ``not_read`` error on a session's first call when the same client recently ended
#: sessions after one call (http_front.ClientHistory): the model is told why the file it "just
#: read" is unknown, and the user how to fix the client. The check itself stays.
PER_CALL_NOTE = (
    "\n\nNote: this MCP client opens a new session for every call ({count} of its recent sessions "
    "each ended after one call), so files read in an earlier call are not known to this one, and no "
    "edit that needs a prior read can succeed. The client must keep one MCP session open across calls "
    "(in langchain-mcp-adapters: `async with client.session(name) as s: tools = await load_mcp_tools(s)`); "
    "see docs/mcp.md, \"Clients that open a session per call\"."
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
    #: Made by a call of the 2026-07-28 era (no handshake). Over stdio the connection's era is
    #: fixed by its first request, so this is the connection's era too.
    modern: bool = False


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
        tools: Sequence[Tool] = (),
    ) -> None:
        from ..permission import ToolPolicy

        self.session_idle_s = session_idle_s
        self.one_shot_idle_s: float = ONE_SHOT_IDLE_S
        self.max_sessions = max_sessions
        #: Where the SDK's app serves MCP over HTTP (the transport sets it).
        self.http_path = "/mcp"
        #: How many sessions the client of a session recently ended after one call (over HTTP,
        #: http_sessions.SessionGate.one_call_sessions; the transport sets it).
        self.one_call_sessions: Callable[[str], int] = lambda key: 0

        self.workspace = Path(os.path.realpath(workspace))
        self.config = config
        self.read_only = read_only
        self.audit = audit
        #: The tool shapes offered (see llm/profiles); checked when the tools load.
        self.profile = profile
        #: The embedder's own tools (``--tools MODULE:ATTR``, function_tools.load_tools), in every session.
        self.tools = list(tools)
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
            self._registry.add(self.tools)
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
        try:
            return await self._run_call(ctx, params)
        except Exception as exc:
            return call_result(_failed_call(params.name, exc))

    def has_modern_stdio_session(self) -> bool:
        """The stdio session exists, on a connection of the 2026-07-28 era (the SDK refuses an
        enveloped request on a handshake connection: stdio_fast.py serves none there)."""
        entry = self.sessions.get(STDIO_KEY)
        return not self._http and entry is not None and entry.modern

    async def call_without_dispatch(self, name: str, arguments: dict[str, Any]) -> ToolResponse | None:
        """A tools/call of the stdio session answered without the SDK's dispatch (stdio_fast.py),
        as :meth:`_call_tool` answers it; None when it must take the SDK's way (the session does
        not exist yet: its first call asks the client for its roots)."""
        entry = self.sessions.get(STDIO_KEY)
        if entry is None or self._http:
            return None
        entry.running += 1
        entry.calls += 1
        try:
            return await entry.session.run(name, arguments)
        except Exception as exc:
            return _failed_call(name, exc)
        finally:
            entry.running -= 1
            entry.last_used = time.monotonic()

    async def _run_call(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        from ..cancel import CancelToken
        from .http_sessions import cancel_when_client_leaves

        key = self._session_key(ctx)
        if key is None:
            from ..errors import ToolError
            from ..llm.tools.runner import error_response

            return call_result(error_response(ToolError(STATELESS_REFUSAL, code="no_session")))
        if key not in self.sessions and len(self.sessions) >= self.max_sessions:
            return call_result(self._too_many_sessions())
        entry = await self._entry(key, ctx)
        if entry is None:
            return call_result(self._too_many_sessions())
        entry.running += 1
        entry.calls += 1
        reporter = ProgressReporter(ctx)
        call = _CALL.set((ctx, params.input_responses))
        cancel = CancelToken()
        try:
            with cancel_when_client_leaves(ctx.request, cancel.cancel):
                response = await entry.session.run(
                    params.name, params.arguments or {}, cancel=cancel, progress=reporter.report
                )
            await reporter.drain()
        finally:
            _CALL.reset(call)
            reporter.close()
            entry.running -= 1
            entry.last_used = time.monotonic()
        if response.metadata.get("error") == "input_required":
            return input_required_result(response.metadata)
        if entry.calls == 1 and response.metadata.get("error") == "not_read":
            response = per_call_note(response, self.one_call_sessions(key))
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
            modern = ctx.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS
            entry = self.sessions[key] = _Entry(self._new_session(roots), modern=modern)
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
            tools=self.tools,
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
        from ..errors import ToolError
        from ..llm.tools.runner import error_response

        return error_response(ToolError(
            f"This server already has {len(self.sessions)} open sessions, its limit (--max-sessions "
            f"{self.max_sessions}). Close a session you no longer use (an MCP client's DELETE of its session), "
            f"or retry later: sessions without a call for {self.session_idle_s:.0f} s are closed.",
            {"limit": self.max_sessions},
            code="too_many_sessions",
        ))  # fmt: skip

    def calls_of(self, key: str) -> int:
        entry = self.sessions.get(key)
        return 0 if entry is None else entry.calls

    def idle_limit_s(self, calls: int) -> float:
        """How long a session that made ``calls`` calls may go without one: one-shot sessions (at
        most one call) go sooner."""
        return min(self.session_idle_s, self.one_shot_idle_s) if calls <= 1 else self.session_idle_s


def _failed_call(name: str, exc: Exception) -> ToolResponse:
    """The result of a call that failed outside the tool's own outcomes (logged with its traceback)."""
    from ..errors import InternalError
    from ..llm.tools.runner import error_response

    log.exception("tools/call %s failed", name)
    return error_response(InternalError(f"Internal error in the MCP server answering {name}: {type(exc).__name__}: "
                                        f"{exc}. The server serves on; its log has the details."))  # fmt: skip


def per_call_note(response: ToolResponse, one_call_sessions: int) -> ToolResponse:
    """``response`` with PER_CALL_NOTE when the session's client ended sessions after one call."""
    if one_call_sessions < 1:
        return response
    metadata = {**response.metadata, "per_call_client": True}
    return replace(response, content=response.content + PER_CALL_NOTE.format(count=one_call_sessions),
                   metadata=metadata)  # fmt: skip


async def _close_quietly(session: Session) -> None:
    try:
        await asyncio.wait_for(session.close(), CLOSE_TIMEOUT_S)
    except (Exception, TimeoutError) as exc:
        log.warning("closing a session failed: %s", exc)

