"""fetch: download a URL and return it as markdown, plain text or HTML, bounded."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from ...errors import ToolError
from ...fsutil.textio import guess_encoding, looks_binary
from ...progress import PROGRESS_INTERVAL_S
from ...truncate import SpillingBuffer, new_spill_path
from .params import param
from .tools import Tool, ToolContext, ToolResponse

#: Largest body read, whether announced by Content-Length or counted while streaming (seed 2.14).
MAX_BODY_BYTES = 5 * 1024 * 1024
DEFAULT_TIMEOUT_S = 30
MAX_TIMEOUT_S = 120
MAX_REDIRECTS = 10
#: Characters of converted text the model sees; the rest goes to a file.
MAX_OUTPUT_CHARS = 50_000
#: Characters of an error response's body quoted in the error.
ERROR_EXCERPT_CHARS = 500
#: Sent on the one retry after a Cloudflare challenge (seed 3.4).
PLAIN_USER_AGENT = "toolsmith"

ACCEPT = {
    "text": "text/plain;q=1.0, text/html;q=0.5",
    "markdown": "text/markdown;q=1.0, text/html;q=0.7",
    "html": "text/html;q=1.0",
}
#: Elements whose content is never useful as page text.
DROPPED_ELEMENTS = ("script", "style", "noscript", "nav", "footer", "iframe", "svg", "template", "head")
BINARY_TYPES = ("image/", "audio/", "video/", "font/", "application/octet-stream", "application/pdf",
                "application/zip", "application/gzip", "application/x-tar", "application/wasm")  # fmt: skip

DESCRIPTION = f"""Fetches a URL and returns its content as markdown (default), plain text, or HTML.

- `url`: an http:// or https:// URL. `format`: "markdown" (HTML converted; scripts, styles,
  navigation and footers dropped), "text" (visible text only) or "html" (the raw page).
- `timeout` in seconds (default {DEFAULT_TIMEOUT_S}, max {MAX_TIMEOUT_S}) bounds the whole download.
- Responses over 5 MB are refused; binary content (images, PDFs, archives) is refused.
- Long results show their beginning and end; the full text is saved to a file you can read with view.
- Read-only: use it to read documentation or an API response, not to change anything.
- IMPORTANT: if another tool is available that offers better web fetching capabilities (such as
  an MCP tool), prefer using that tool instead.
"""


@dataclass(frozen=True)
class FetchParams:
    url: str = param("The URL to fetch (http or https)", minLength=1)
    format: Literal["markdown", "text", "html"] = param("The format to return the content in", "markdown")
    timeout: int | None = param("Timeout in seconds for the whole download", None, minimum=1, maximum=MAX_TIMEOUT_S)


@dataclass
class _Body:
    data: bytes
    content_type: str
    charset: str | None
    status: int
    final_url: str


class FetchTool(Tool):
    name = "fetch"
    description = DESCRIPTION
    Params = FetchParams
    read_only = True

    async def run(self, params: FetchParams, ctx: ToolContext) -> ToolResponse:
        parts = urlsplit(params.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ToolError(f"Invalid URL {params.url!r}: only http:// and https:// URLs can be fetched.")
        if ctx.config.block_private_networks:
            await _refuse_private(parts.hostname)
        await ctx.require_permission(self.name, "fetch", params.url, f"fetch {params.url}")
        timeout = params.timeout or DEFAULT_TIMEOUT_S
        try:
            body = await asyncio.wait_for(_download(params, ctx, timeout), timeout)
        except TimeoutError as exc:
            raise ToolError(f"Fetching {params.url} timed out after {timeout} s.") from exc
        text = _convert(body, params.format)
        output = SpillingBuffer(MAX_OUTPUT_CHARS, lambda: new_spill_path(ctx.state, ctx.session_id, "fetch"))
        output.write(text.encode("utf-8", "surrogatepass"))
        output.close()
        bounded = output.render()
        content = bounded.text
        if output.spilled:
            content += (
                f"\n\n(The page is {len(text)} characters; the full {params.format} is in {output.path} — "
                "read it with view.)"
            )
        metadata: dict[str, Any] = {
            "url": params.url,
            "final_url": body.final_url,
            "status": body.status,
            "content_type": body.content_type,
            "bytes": len(body.data),
            "format": params.format,
            "truncated": bounded.truncated,
            "full_output_path": str(output.path) if output.path else None,
        }
        return ToolResponse(content, metadata=metadata)


async def _refuse_private(host: str) -> None:
    """Optional SSRF guard: refuse hosts that resolve to loopback, private or link-local space."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, None)
    except socket.gaierror as exc:
        raise ToolError(f"Cannot resolve {host}: {exc}") from exc
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        if address.is_private or address.is_loopback or address.is_link_local or address.is_reserved:
            raise ToolError(f"Refusing to fetch {host}: it resolves to the non-public address {address}.")


async def _download(params: FetchParams, ctx: ToolContext, timeout: float) -> _Body:
    import httpx  # lazy: the CLI should not pay for httpx unless it fetches

    headers = {"Accept": ACCEPT[params.format], "User-Agent": ctx.config.user_agent}
    async with httpx.AsyncClient(follow_redirects=True, max_redirects=MAX_REDIRECTS, timeout=timeout) as client:
        try:
            body = await _get(client, params.url, headers, ctx)
            if body is None:  # Cloudflare challenge: one retry with a plain User-Agent
                body = await _get(client, params.url, {**headers, "User-Agent": PLAIN_USER_AGENT}, ctx)
        except httpx.TooManyRedirects as exc:
            raise ToolError(f"Fetching {params.url} failed: more than {MAX_REDIRECTS} redirects.") from exc
        except httpx.HTTPError as exc:
            raise ToolError(f"Fetching {params.url} failed: {type(exc).__name__}: {exc}") from exc
    if body is None:
        raise ToolError(f"Fetching {params.url} failed: 403 Forbidden (a bot challenge that a retry did not pass).")
    return body


async def _get(client: Any, url: str, headers: dict[str, str], ctx: ToolContext) -> _Body | None:
    async with client.stream("GET", url, headers=headers) as response:
        challenged = response.status_code == 403 and response.headers.get("cf-mitigated", "").lower() == "challenge"
        if challenged and headers.get("User-Agent") != PLAIN_USER_AGENT:
            return None
        declared = response.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
            raise ToolError(
                f"Response is {int(declared)} bytes, over the {MAX_BODY_BYTES} byte (5 MB) limit; not downloaded."
            )
        content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type.startswith(BINARY_TYPES):
            raise ToolError(f"{url} is binary content ({content_type}); fetch returns text only.")
        data = await _read_capped(response, ctx, int(declared) if declared and declared.isdigit() else None)
        if response.status_code >= 400:
            excerpt = data[:2000].decode("utf-8", "replace")[:ERROR_EXCERPT_CHARS]
            raise ToolError(
                f"Fetching {url} failed with HTTP {response.status_code} {response.reason_phrase}.\n{excerpt}"
            )
        return _Body(data, content_type, response.charset_encoding, response.status_code, str(response.url))


async def _read_capped(response: Any, ctx: ToolContext, total: int | None) -> bytes:
    """The body, at most MAX_BODY_BYTES; progress reports bytes so far at a bounded rate, and
    always the final count."""
    chunks: list[bytes] = []
    size = 0
    last = 0.0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise ToolError(f"Response exceeded the {MAX_BODY_BYTES} byte (5 MB) limit while downloading; stopped.")
        chunks.append(chunk)
        now = time.monotonic()
        if now - last >= PROGRESS_INTERVAL_S:
            last = now
            ctx.progress("download", {"tool": "fetch", "bytes": size, "total": total})
    ctx.progress("download", {"tool": "fetch", "bytes": size, "total": total, "done": True})
    return b"".join(chunks)


def _decode(body: _Body) -> str:
    if body.charset:
        try:
            return body.data.decode(body.charset, "replace")
        except LookupError:
            pass
    encoding = guess_encoding(body.data) or "utf-8"
    return body.data.decode(encoding, "replace")


def _convert(body: _Body, fmt: str) -> str:
    if not body.content_type and looks_binary(body.data[:4096]):
        raise ToolError(f"{body.final_url} appears to be binary content; fetch returns text only.")
    text = _decode(body)
    is_html = "html" in body.content_type or (not body.content_type and "<html" in text[:1000].lower())
    if fmt == "html" or not is_html:
        return text
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(text, "html.parser")
    for element in soup(list(DROPPED_ELEMENTS)):
        element.decompose()
    if fmt == "text":
        lines = (line.strip() for line in soup.get_text("\n").splitlines())
        return "\n".join(line for line in lines if line)
    from markdownify import MarkdownConverter

    markdown: str = MarkdownConverter(heading_style="ATX").convert_soup(soup)
    return "\n".join(line.rstrip() for line in markdown.strip().splitlines()).replace("\n\n\n", "\n\n")


TOOL = FetchTool()
