"""Serving MCP over stdio: the process is the one session; a line that is not JSON-RPC gets an
error response instead of silence; SIGTERM or SIGINT cancels serving so its cleanup runs."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from .sdk import types

if TYPE_CHECKING:
    from .server import ToolsmithServer


async def serve_stdio(server: ToolsmithServer) -> None:
    """Serve on stdin/stdout until stdin closes; then every session is closed."""
    from mcp.server.stdio import stdio_server

    from .stdio_fast import FastLane
    from .stdio_streams import event_loop_stdio

    lane: FastLane | None = None
    try:
        # Pipes are served on the event loop (no thread hop per message); else as the SDK does.
        async with event_loop_stdio() as streams, stdio_server(*(streams or ())) as (
            read_stream, write_stream
        ), _answer_parse_errors(read_stream, write_stream) as checked:
            if streams is not None:  # the calls agents make most skip the SDK's dispatch
                reader, writer = streams
                lane = FastLane(server, writer)
                reader.take = lane.take
            try:
                await server.server.run(checked, write_stream, server.server.create_initialization_options())
            finally:
                if lane is not None:  # while stdout is open: its running calls are answered
                    await lane.close()
    finally:
        if lane is not None:
            await lane.close()
        await server.close()


async def serve_stdio_until_signalled(server: ToolsmithServer) -> None:
    """SIGTERM or SIGINT cancels serving, so its cleanup runs (nothing left behind)."""
    task = asyncio.ensure_future(serve_stdio(server))
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, task.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        await task


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
