"""Toolsmith to MCP: a tool's listing, a call's result, its progress as notifications, and the
client's roots as directories."""

from __future__ import annotations

import asyncio
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..fsutil.uris import is_file_uri, uri_to_path
from ..logs import logger
from .sdk import ServerRequestContext, types

if TYPE_CHECKING:
    from ..llm.tools.contract import FileAttachment, ToolInfo, ToolResponse

log = logger("toolsmith")

#: How long a call waits for the client's roots before going on without them.
ROOTS_TIMEOUT_S = 5.0
#: The ``_meta`` key of a result that carries the tool's metadata (a prefixed name, as the MCP
#: spec asks of implementation-specific ``_meta`` keys).
META_KEY = "toolsmith/metadata"


class ProgressReporter:
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


def mcp_tool(info: ToolInfo) -> types.Tool:
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


def call_result(response: ToolResponse) -> types.CallToolResult:
    """Text first, images after, then attached files (an embedded resource with the content, or a
    resource link to the file); the metadata in ``_meta``, never as ``structuredContent`` (which
    the spec pairs with a declared ``outputSchema`` and which some hosts show instead of content)."""
    content: list[Any] = []
    if response.content or not response.images:
        content.append(types.TextContent(text=response.content))
    content += [types.ImageContent(data=i.data_base64, mime_type=i.media_type) for i in response.images]
    content += [_attached(f) for f in response.files]
    return types.CallToolResult(content=content, is_error=response.is_error, _meta={META_KEY: response.metadata})


def _attached(file: FileAttachment) -> Any:
    resource: Any
    if file.text is not None:
        resource = types.TextResourceContents(uri=file.uri, mime_type=file.media_type, text=file.text)
    elif file.data_base64 is not None:
        resource = types.BlobResourceContents(uri=file.uri, mime_type=file.media_type, blob=file.data_base64)
    else:
        return types.ResourceLink(uri=file.uri, name=file.name, mime_type=file.media_type, size=file.size)
    return types.EmbeddedResource(resource=resource)


async def client_roots(ctx: ServerRequestContext[Any]) -> list[Path]:
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
        uri = str(root.uri)
        if is_file_uri(uri) and str(uri_to_path(uri)) not in ("", "."):
            roots.append(Path(os.path.realpath(uri_to_path(uri))))
    return roots
