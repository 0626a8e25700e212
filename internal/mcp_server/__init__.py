"""The MCP server: every tool (built-in and custom) for MCP hosts, over stdio or streamable HTTP.

    toolsmith-mcp [--cwd DIR] [--read-only] [--audit-log FILE]                 # stdio
    toolsmith-mcp --http [--host 127.0.0.1] [--port 8765] [--allow-remote]     # streamable HTTP

(``python -m cmd.mcp`` from a checkout is the same.) Built on the official ``mcp`` SDK's
low-level server, so each tool is declared with the one schema the other front doors use.

The modules: ``server`` (:class:`ToolsmithServer`: the protocol's handlers and the toolsmith
session of each MCP session), ``convert`` (toolsmith to MCP: tool listings, call results,
progress notifications, the client's roots), ``stdio_transport`` and ``stdio_streams`` (serving
over stdio; stdin/stdout pipes read and written on the event loop), ``http_transport`` (serving
over streamable HTTP: ``http_front`` reads request heads and routes connections by session to
``http_workers``, whose apps sit behind ``http_guard`` (who may talk to it), ``http_routing``
(session ids by worker, requests for another worker handed back) and ``http_sessions`` (body
deadline, the client watch, the session limit and idle sessions); ``http_limits`` holds the
limits), ``sdk`` (the optional ``mcp`` SDK, imported once) and ``cli`` (the
``toolsmith-mcp`` command line).

- **Results**: text first — ``content`` is what the model reads: the tool's text, then its images
  as image blocks. No ``structuredContent`` (the tools declare no ``outputSchema``, and hosts that
  prefer structured content would show the metadata instead of the result); the metadata (diff,
  exit code, paths, error code) rides in ``_meta`` under ``META_KEY``. A tool failure is a result
  with ``isError`` (never a protocol error).
- **Annotations**: ``readOnlyHint``, ``destructiveHint``, ``idempotentHint``, ``openWorldHint``
  (fetch, bash and custom tools) and a title.
- **Progress**: when a call carries a progress token, the tool's progress (bash output, fetch
  bytes, waiting for language servers) becomes ``notifications/progress`` with increasing values.
- **Cancellation**: a cancelled call (``notifications/cancelled``; over HTTP also a client that
  closes the call's stream or times out) cancels the tool, which stops its process group; other
  calls go on.
- **Sessions**: one toolsmith :class:`Session` per MCP session — files read, the shell's
  directory and environment, language servers. On stdio the process is the session; over HTTP
  each ``Mcp-Session-Id`` gets its own, on one worker process, closed when the client deletes
  the session or after ``--session-idle`` without a request (sooner, ``ONE_SHOT_IDLE_S``, for a
  session that made at most one call); at most ``--max-sessions`` at once, counted from their
  initialize. The 2026-07-28 protocol has no sessions over HTTP, so this server answers
  ``server/discover`` over HTTP with the handshake versions only (SDK clients then use the
  initialize handshake) and refuses stateless tool calls with an explanation.
- **Language servers** never start on a view's path (a read must not wait seconds for a cold
  server): they start on the session's first change (edit, write, multiedit, patch) or lsp call;
  later views report the diagnostics of servers already running.
- **Workspace**: ``--cwd`` (default: the current directory). The client's roots, when it offers
  them, become ``allowed_dirs``. ``--read-only`` offers only tools that change nothing and denies
  every mutating action.
- **Shutdown**: stdin closing (or SIGTERM/SIGINT) cancels running calls — their process groups
  are stopped — and closes every session's language servers: nothing is left running.
"""

from typing import TYPE_CHECKING, Any

from .cli import main

if TYPE_CHECKING:
    from .server import ToolsmithServer


def __getattr__(name: str) -> Any:
    """``ToolsmithServer`` is imported on first use: the HTTP front never loads the SDK."""
    if name == "ToolsmithServer":
        from .server import ToolsmithServer

        return ToolsmithServer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ToolsmithServer", "main"]
