"""The MCP server: every tool (built-in and custom) for MCP hosts, over stdio or streamable HTTP.

    toolsmith-mcp [--cwd DIR] [--read-only] [--audit-log FILE]                 # stdio
    toolsmith-mcp --http [--host 127.0.0.1] [--port 8765] [--allow-remote]     # streamable HTTP

(``python -m cmd.mcp`` from a checkout is the same.) Built on the official ``mcp`` SDK's
low-level server, so each tool is declared with the one schema the other front doors use.

- **Results**: text first — ``content`` is what the model reads: the tool's text, then its images
  as image blocks. No ``structuredContent`` (the tools declare no ``outputSchema``, and hosts that
  prefer structured content would show the metadata instead of the result); the metadata (diff,
  exit code, paths, error code) rides in ``_meta`` under ``META_KEY``. A tool failure is a result
  with ``isError`` (never a protocol error).
- **Annotations**: ``readOnlyHint``, ``destructiveHint``, ``idempotentHint``, ``openWorldHint``
  (fetch, bash and custom tools) and a title.
- **Progress**: when a call carries a progress token, the tool's progress (bash output, fetch
  bytes, waiting for language servers) becomes ``notifications/progress`` with increasing values.
- **Cancellation**: a cancelled call (``notifications/cancelled`` on stdio, an aborted request on
  HTTP) cancels the tool, which stops its process group; other calls go on.
- **Sessions**: one toolsmith :class:`Session` per MCP session — files read, the shell's
  directory and environment, language servers. On stdio the process is the session; over HTTP
  each ``Mcp-Session-Id`` gets its own, closed when the client deletes the session or after
  ``--session-idle`` without a call (sooner, ``ONE_SHOT_IDLE_S``, for a session that made one
  call); at most ``--max-sessions`` at once. Any session's language servers stop after
  ``lsp.idle_timeout`` without a call and start again on demand. The 2026-07-28 protocol has no
  sessions over HTTP, so this server answers ``server/discover`` over HTTP with the handshake
  versions only (SDK clients then use the initialize handshake) and refuses stateless tool calls
  with an explanation.
- **Language servers** never start on a view's path (a read must not wait seconds for a cold
  server): they start on the session's first change (edit, write, multiedit, patch) or lsp call;
  later views report the diagnostics of servers already running.
- **Workspace**: ``--cwd`` (default: the current directory). The client's roots, when it offers
  them, become ``allowed_dirs``. ``--read-only`` offers only tools that change nothing and denies
  every mutating action.
- **Shutdown**: stdin closing (or SIGTERM/SIGINT) cancels running calls — their process groups
  are stopped — and closes every session's language servers: nothing is left running.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import logging
import os
import signal
import socket
import sys
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, MutableMapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

try:
    import mcp_types as types
    from mcp.server import Server, ServerRequestContext
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
except ModuleNotFoundError as missing:  # the optional `mcp` extra; main() says how to install it
    _MISSING_SDK: str | None = missing.name
else:
    _MISSING_SDK = None

from . import __version__

if TYPE_CHECKING:  # imported when first needed: `initialize` is answered before the tools load
    from .audit import AuditLog
    from .config import Config
    from .llm.tools.tools import ToolInfo, ToolRegistry, ToolResponse
    from .session import Session

log = logging.getLogger("toolsmith")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
HTTP_PATH = "/mcp"
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
#: --profile choices (llm/profiles.PROFILES).
MCP_PROFILES = ("default", "claude", "codex")
#: How long a call waits for the client's roots before going on without them.
ROOTS_TIMEOUT_S = 5.0
#: On shutdown, open HTTP streams get this long to finish before they are closed.
SHUTDOWN_GRACE_S = 3
#: Closing one session's language servers on shutdown waits at most this long.
CLOSE_TIMEOUT_S = 5.0
STDIO_KEY = "stdio"
#: The ``_meta`` key of a result that carries the tool's metadata (a prefixed name, as the MCP
#: spec asks of implementation-specific ``_meta`` keys).
META_KEY = "toolsmith/metadata"

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

Progress = Callable[[str, dict[str, Any]], None]


@dataclass
class _Entry:
    session: Session
    last_used: float = field(default_factory=time.monotonic)
    running: int = 0
    calls: int = 0


class ToolsmithServer:
    """The MCP server for one workspace; :meth:`serve_stdio` or :meth:`serve_http` runs it."""

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
        from .permission import ToolPolicy

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
        )

    @property
    def registry(self) -> ToolRegistry:
        """The tools, loaded on the first listing or call (not before `initialize` is answered)."""
        if self._registry is None:
            from .llm.tools.tools import ToolRegistry

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
        return types.ListToolsResult(tools=[_mcp_tool(info) for info in self.tool_infos()])

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        from .llm.tools.tools import ToolResponse

        key = self._session_key(ctx)
        if key is None:
            return _result(ToolResponse(STATELESS_REFUSAL, is_error=True, metadata={"error": "no_session"}))
        if key not in self.sessions and len(self.sessions) >= self.max_sessions:
            return _result(self._too_many_sessions())
        entry = await self._entry(key, ctx)
        if entry is None:
            return _result(self._too_many_sessions())
        entry.running += 1
        entry.calls += 1
        reporter = _ProgressReporter(ctx)
        try:
            response = await entry.session.run(params.name, params.arguments or {}, progress=reporter.report)
            await reporter.drain()
        finally:
            reporter.close()
            entry.running -= 1
            entry.last_used = time.monotonic()
        return _result(response)

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
        roots = await _client_roots(ctx)
        entry = self.sessions.get(key)
        if entry is None:
            if len(self.sessions) >= self.max_sessions:  # other first calls won the race meanwhile
                return None
            entry = self.sessions[key] = _Entry(self._new_session(roots))
        return entry

    def _new_session(self, roots: list[Path]) -> Session:
        from .permission import allow_all, read_only_policy
        from .session import Session

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
        from .llm.tools.tools import ToolResponse

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

    async def _reap_idle(self) -> None:
        interval = min(REAP_INTERVAL_S, self.session_idle_s / 4)
        while True:
            await asyncio.sleep(interval)
            await self.reap_idle_once()

    # --- transports ---------------------------------------------------------------------------

    async def serve_stdio(self) -> None:
        from mcp.server.stdio import stdio_server

        from .mcp_stdio import event_loop_stdio

        try:
            # Pipes are served on the event loop (no thread hop per message); else as the SDK does.
            async with event_loop_stdio() as streams, stdio_server(*(streams or ())) as (
                read_stream, write_stream
            ), _answer_parse_errors(read_stream, write_stream) as checked:
                await self.server.run(checked, write_stream, self.server.create_initialization_options())
        finally:
            await self.close()

    async def serve_http(
        self,
        sock: socket.socket,
        *,
        remote: bool = False,
        stop: asyncio.Event,
        tokens: list[str] | None = None,
        extra_hosts: list[str] | None = None,
    ) -> None:
        """Serve streamable HTTP on ``sock`` (bound and listening) until ``stop`` is set; every
        request passes :class:`~.mcp_guard.HttpGuard` (Host, Origin, bearer token, session owner)."""
        import uvicorn

        class Uvicorn(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self) -> Iterator[None]:
                yield  # signals are the caller's: they set ``stop``, which shuts down gracefully

        self._http = True
        self.server.add_request_handler("server/discover", types.RequestParams, self._discover)
        host = sock.getsockname()[0]
        app = self.server.streamable_http_app(
            streamable_http_path=HTTP_PATH,
            host=host if not remote else "0.0.0.0",
            session_idle_timeout=self.session_idle_s,
            transport_security=_guarded_transport(),
        )
        guarded = _guard(_DeleteAware(app, self), host, tokens or [], extra_hosts or [])
        config = uvicorn.Config(
            guarded, log_level="warning", lifespan="on", access_log=False,
            timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
        )  # fmt: skip
        reaper = asyncio.ensure_future(self._reap_idle())
        http = Uvicorn(config)

        async def stop_when_asked() -> None:
            await stop.wait()
            http.should_exit = True

        stopper = asyncio.ensure_future(stop_when_asked())
        try:
            await http.serve(sockets=[sock])
        finally:
            stopper.cancel()
            reaper.cancel()
            await self.close()


@contextlib.asynccontextmanager
async def _answer_parse_errors(read_stream: Any, write_stream: Any) -> AsyncIterator[Any]:
    """``read_stream`` without the lines that are not JSON-RPC: each gets an error response
    (-32700 not JSON, -32600 JSON but not a JSON-RPC message, id null) and serving goes on. The
    SDK would otherwise drop it silently and the client would wait forever."""
    import anyio
    from mcp.shared.message import SessionMessage

    sender, receiver = anyio.create_memory_object_stream[Any](0)

    async def forward() -> None:
        async with sender:
            async for item in read_stream:
                if isinstance(item, Exception):
                    await write_stream.send(SessionMessage(_parse_error(item)))
                else:
                    await sender.send(item)

    async with anyio.create_task_group() as group:
        group.start_soon(forward)
        try:
            yield receiver
        finally:
            group.cancel_scope.cancel()


def _parse_error(exc: Exception) -> types.JSONRPCError:
    errors = getattr(exc, "errors", None)
    kinds = {e.get("type") for e in errors()} if callable(errors) else set()
    if "json_invalid" in kinds:
        code, message = types.PARSE_ERROR, "Parse error: the line is not valid JSON"
    else:
        code, message = types.INVALID_REQUEST, "Invalid request: the line is not a JSON-RPC 2.0 message"
    return types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(code=code, message=message))


def _guarded_transport() -> Any:
    """The SDK's own Host/Origin check (on only for 127.0.0.1/localhost/::1) is replaced by
    :class:`~.mcp_guard.HttpGuard`, which covers every binding and the configured extra hosts."""
    from mcp.server.transport_security import TransportSecuritySettings

    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


def _guard(app: Any, host: str, tokens: list[str], extra_hosts: list[str]) -> Any:
    from .mcp_guard import HttpGuard, allowed_hosts

    return HttpGuard(app, hosts=allowed_hosts(host, extra_hosts), tokens=tokens)


class _DeleteAware:
    """Passes every request to the SDK's app; after a client's DELETE of its session, closes
    the toolsmith session that belonged to it."""

    def __init__(self, app: Any, owner: ToolsmithServer) -> None:
        self.app = app
        self.owner = owner

    async def __call__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[Any]],
        send: Callable[[Any], Awaitable[None]],
    ) -> None:
        await self.app(scope, receive, send)
        if scope.get("type") == "http" and scope.get("method") == "DELETE":
            headers = dict(scope.get("headers") or [])
            session_id = headers.get(b"mcp-session-id", b"").decode("latin-1")
            if session_id:
                await self.owner.drop_session(session_id)


class _ProgressReporter:
    """Turns the tool's progress callbacks into ``notifications/progress``, in order, with
    increasing ``progress`` values. A no-op when the call carried no progress token."""

    def __init__(self, ctx: ServerRequestContext[Any]) -> None:
        meta: Any = ctx.meta or {}
        self._session = ctx.session
        self._wanted = meta.get("progress_token", meta.get("progressToken")) is not None
        self._queue: asyncio.Queue[tuple[float, float | None, str] | None] = asyncio.Queue()
        self._sender = asyncio.ensure_future(self._send_all()) if self._wanted else None
        self._progress = 0.0

    def report(self, kind: str, data: dict[str, Any]) -> None:
        if not self._wanted:
            return
        total: float | None = None
        size = data.get("bytes")
        if kind == "download" and isinstance(size, int) and size > self._progress:
            self._progress = float(size)  # fetch: bytes so far, of the total when known
            total = float(data["total"]) if isinstance(data.get("total"), int) else None
            message = f"{size} bytes downloaded"
        else:
            self._progress += 1  # output chunks and other events: counted
            message = str(data.get("text", kind))
        self._queue.put_nowait((self._progress, total, message))

    async def _send_all(self) -> None:
        while (item := await self._queue.get()) is not None:
            progress, total, message = item
            try:
                await self._session.report_progress(progress, total, message)
            except Exception as exc:  # a client that went away must not fail the call
                log.info("progress notification not sent: %s", exc)

    async def drain(self) -> None:
        """Send what is queued before the result goes out."""
        if self._sender is not None:
            self._queue.put_nowait(None)
            await self._sender

    def close(self) -> None:
        if self._sender is not None and not self._sender.done():
            self._sender.cancel()


def _mcp_tool(info: ToolInfo) -> types.Tool:
    annotations = types.ToolAnnotations(
        title=info.title,
        read_only_hint=info.read_only,
        destructive_hint=info.destructive,
        idempotent_hint=info.idempotent,
        open_world_hint=info.open_world,
    )
    return types.Tool(
        name=info.name, title=info.title, description=info.description, input_schema=info.parameters,
        annotations=annotations,
    )  # fmt: skip


def _result(response: ToolResponse) -> types.CallToolResult:
    """Text first, images after; the metadata in ``_meta``, never as ``structuredContent`` (which
    the spec pairs with a declared ``outputSchema`` and which some hosts show instead of content)."""
    content: list[Any] = []
    if response.content or not response.images:
        content.append(types.TextContent(text=response.content))
    content += [types.ImageContent(data=i.data_base64, mime_type=i.media_type) for i in response.images]
    return types.CallToolResult(content=content, is_error=response.is_error, _meta={META_KEY: response.metadata})


async def _client_roots(ctx: ServerRequestContext[Any]) -> list[Path]:
    """The client's file:// roots, when it offers roots (a deprecated capability, still the only
    way a handshake-era client names its folders)."""
    capabilities = ctx.session.client_capabilities
    if capabilities is None or capabilities.roots is None:
        return []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            listed = await asyncio.wait_for(ctx.session.list_roots(), ROOTS_TIMEOUT_S)
    except Exception as exc:  # no roots is a fine answer: the workspace alone
        log.info("the client's roots could not be listed: %s", exc)
        return []
    roots = []
    for root in listed.roots:
        parsed = urlparse(str(root.uri))
        if parsed.scheme == "file" and parsed.path:
            roots.append(Path(os.path.realpath(unquote(parsed.path))))
    return roots


async def _close_quietly(session: Session) -> None:
    try:
        await asyncio.wait_for(session.close(), CLOSE_TIMEOUT_S)
    except (Exception, TimeoutError) as exc:
        log.warning("closing a session failed: %s", exc)


# --- the command line -----------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="toolsmith-mcp", description="Serve the Toolsmith tools over MCP.")
    parser.add_argument("--cwd", default=".", help="workspace root (default: current directory)")
    parser.add_argument("--config", metavar="FILE", help="a config file read after the user's and the workspace's")
    parser.add_argument("--read-only", action="store_true", help="offer only tools that change nothing")
    # The names of llm/profiles' PROFILES, spelled out: the server imports no tool code before
    # a client's initialize (tests/test_profiles.py holds the two lists together).
    parser.add_argument(
        "--profile", choices=MCP_PROFILES, default="default", help="the tool shapes to offer (see docs/profiles.md)"
    )
    parser.add_argument("--no-lsp", action="store_true", help="do not start language servers for diagnostics")
    parser.add_argument("--audit-log", metavar="FILE", help="append one JSON line per tool call to FILE")
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"HTTP address to bind (default {DEFAULT_HOST})")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"HTTP port (default {DEFAULT_PORT}; 0: any)")
    parser.add_argument(
        "--allow-remote", action="store_true", help="allow binding a non-loopback address (requires a bearer token)"
    )
    parser.add_argument(
        "--session-idle", type=_positive_seconds, default=SESSION_IDLE_S, metavar="SECONDS",
        help=f"HTTP: close a session after this long without a call (default {SESSION_IDLE_S}; "
        f"one-shot sessions: at most {ONE_SHOT_IDLE_S})",
    )  # fmt: skip
    parser.add_argument(
        "--max-sessions", type=_at_least_one, default=MAX_SESSIONS, metavar="N",
        help=f"HTTP: at most N sessions at once (default {MAX_SESSIONS})",
    )  # fmt: skip
    parser.add_argument(
        "--token", help="bearer token every HTTP request must carry (or --token-file, or $TOOLSMITH_MCP_TOKEN)"
    )
    parser.add_argument("--token-file", metavar="FILE", help="read the bearer token from FILE")
    parser.add_argument(
        "--allowed-host", action="append", default=[], metavar="NAME",
        help="another Host name clients may use (repeatable; or $TOOLSMITH_MCP_ALLOWED_HOSTS, comma-separated)",
    )  # fmt: skip
    parser.add_argument("--version", action="store_true", help="print the version")
    return parser


def _positive_seconds(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text}")
    return value


def _at_least_one(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not args.http:
        http_only = [f"--{name}" for name in ("host", "port", "allow-remote") if _given(argv, f"--{name}")]
        if http_only:
            verb = "applies" if len(http_only) == 1 else "apply"
            options = " and ".join(http_only)
            parser.error(f"{options} {verb} only to HTTP: add --http (without it, the server speaks stdio)")
    if args.version:
        print(f"toolsmith-mcp {__version__}")
        return 0
    from .audit import AuditLog
    from .config import Config, ConfigError

    if _MISSING_SDK is not None:
        sys.stderr.write(
            f"toolsmith-mcp: the MCP SDK is not installed in this Python ({sys.executable}; missing module "
            f"'{_MISSING_SDK}'). Install the extra: pip install 'agent-toolsmith[mcp]' (a checkout's `make run` "
            "does).\n"
        )
        return 2
    workspace = Path(args.cwd)
    if not workspace.is_dir():
        sys.stderr.write(f"toolsmith-mcp: --cwd {args.cwd} is not a directory\n")
        return 2
    overrides: dict[str, Any] = {}
    if args.no_lsp:
        overrides["lsp_enabled"] = False
    try:
        config = Config.load(workspace, file=args.config, **overrides)
    except ConfigError as exc:
        sys.stderr.write(f"toolsmith-mcp: {exc}\n")
        return 2
    tokens = _tokens(args, config)
    if tokens is None:
        return 2
    if args.http and not is_loopback(args.host) and not (args.allow_remote and tokens):
        sys.stderr.write(
            f"toolsmith-mcp: refusing to listen on {args.host}: whoever reaches this server can run commands and "
            "change files. Bind 127.0.0.1 (the default), or pass --allow-remote with a bearer token (--token, "
            "--token-file, $TOOLSMITH_MCP_TOKEN or [mcp] token_file; at least 16 random characters).\n"
        )
        return 2
    audit_path = Path(args.audit_log).absolute() if args.audit_log else config.audit_log
    audit = AuditLog(audit_path, config.audit_redact_keys) if audit_path else None
    from .state import StateDir, log_to_file

    log_to_file(StateDir(config.state_dir).directory() / "mcp.log", ("toolsmith", "mcp", "pygls"))
    server = ToolsmithServer(
        workspace, replace(config, audit_log=None), read_only=args.read_only, audit=audit,
        session_idle_s=args.session_idle, max_sessions=args.max_sessions, profile=args.profile,
    )  # fmt: skip
    try:
        if args.http:
            try:
                sock = _listen(args.host, args.port)
            except OSError as exc:
                sys.stderr.write(f"toolsmith-mcp: cannot listen on {args.host}:{args.port}: {exc.strerror}\n")
                return 2
            host, port = sock.getsockname()[:2]
            shown = f"[{host}]" if ":" in host else host
            sys.stderr.write(f"toolsmith-mcp: serving {server.workspace} on http://{shown}:{port}{HTTP_PATH}\n")
            sys.stderr.flush()
            asyncio.run(
                _serve_http_until_signalled(
                    server,
                    sock,
                    remote=not is_loopback(args.host),
                    tokens=tokens,
                    extra_hosts=[*args.allowed_host, *config.mcp_allowed_hosts],
                )
            )
        else:
            asyncio.run(_serve_stdio_until_signalled(server))
    except KeyboardInterrupt:
        pass
    return 0


def _given(argv: list[str] | None, option: str) -> bool:
    words = sys.argv[1:] if argv is None else argv
    return any(word == option or word.startswith(option + "=") for word in words)


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock


async def _serve_stdio_until_signalled(server: ToolsmithServer) -> None:
    """SIGTERM or SIGINT cancels serving, so its cleanup runs (nothing left behind)."""
    task = asyncio.ensure_future(server.serve_stdio())
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, task.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        await task


def _tokens(args: argparse.Namespace, config: Config) -> list[str] | None:
    """The bearer tokens from the flags, the environment or the config's ``[mcp] token_file``;
    None (after a message) when unusable."""
    from .mcp_guard import GuardConfigError, read_tokens

    token_file = args.token_file or (str(config.mcp_token_file) if config.mcp_token_file else None)
    try:
        if args.token or args.token_file:
            return read_tokens(args.token, token_file)
        return read_tokens(None, None) or read_tokens(None, token_file)
    except GuardConfigError as exc:
        sys.stderr.write(f"toolsmith-mcp: {exc}\n")
        return None


async def _serve_http_until_signalled(
    server: ToolsmithServer, sock: socket.socket, *, remote: bool, tokens: list[str], extra_hosts: list[str]
) -> None:
    """SIGTERM or SIGINT stops the HTTP server gracefully, then every session is closed."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await server.serve_http(sock, remote=remote, stop=stop, tokens=tokens, extra_hosts=extra_hosts)


if __name__ == "__main__":
    sys.exit(main())
