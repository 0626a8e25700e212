"""fetch: download a URL and return it as markdown, plain text or HTML, bounded."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urljoin, urlsplit

from ...errors import TimedOut, ToolError
from ...fsutil.paths import quote_input
from ...fsutil.textio import guess_encoding, looks_binary
from ...progress import PROGRESS_INTERVAL_S
from ...truncate import SpillingBuffer, new_spill_path
from ...vocabulary import tool_name
from ...web.html import to_text
from .context import CallServices
from .contract import Tool, ToolResponse
from .params import param

#: Largest body read, whether announced by Content-Length or counted while streaming.
MAX_BODY_BYTES = 5 * 1024 * 1024
DEFAULT_TIMEOUT_S = 30
MAX_TIMEOUT_S = 120
MAX_REDIRECTS = 10
#: Characters of converted text the model sees; the rest goes to a file.
MAX_OUTPUT_CHARS = 50_000
#: Characters of an error response's body quoted in the error.
ERROR_EXCERPT_CHARS = 500
#: Sent on the one retry after a Cloudflare challenge.
PLAIN_USER_AGENT = "toolsmith"

ACCEPT = {
    "text": "text/plain;q=1.0, text/html;q=0.5",
    "markdown": "text/markdown;q=1.0, text/html;q=0.7",
    "html": "text/html;q=1.0",
}
#: Longer URLs are refused (no server accepts them and they would be echoed in errors).
MAX_URL_CHARS = 8192
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
    title = "Fetch a URL"
    description = DESCRIPTION
    Params = FetchParams
    open_world = True
    read_only = True

    async def run(self, params: FetchParams, ctx: CallServices) -> ToolResponse:
        url = _checked_url(params.url)
        shown = quote_input(url)
        await ctx.require_permission(self.name, "fetch", url, f"fetch {shown}")
        timeout = params.timeout or DEFAULT_TIMEOUT_S
        try:
            # One budget for the download and the conversion: a huge page cannot outlast it.
            async with asyncio.timeout(timeout):
                body = await _download(url, params.format, ctx, timeout)
                text, note = await _convert(body, params.format, ctx)
        except TimeoutError as exc:
            raise TimedOut(f"Fetching {shown} timed out after {timeout} s (download and conversion).", timeout) from exc
        output = SpillingBuffer(MAX_OUTPUT_CHARS, lambda: new_spill_path(ctx.state, ctx.session_id, "fetch"))
        output.write(text.encode("utf-8", "surrogatepass"))
        output.close()
        bounded = output.render()
        content = (note + "\n\n" if note else "") + bounded.text
        if output.spilled:
            content += (
                f"\n\n(The page is {len(text)} characters; the full {params.format} is in {output.path} — "
                f"read it with {tool_name('view')}.)"
            )
        metadata: dict[str, Any] = {
            "url": url,
            "final_url": body.final_url,
            "status": body.status,
            "content_type": body.content_type,
            "bytes": len(body.data),
            "format": params.format,
            "truncated": bounded.truncated,
            "full_output_path": str(output.path) if output.path else None,
        }
        return ToolResponse(content, metadata=metadata)


def _checked_url(url: str) -> str:
    """``url`` if it is an http(s) URL that can be requested; else a clear refusal."""
    shown = quote_input(url)
    if len(url) > MAX_URL_CHARS:
        raise ToolError(
            f"The URL is {len(url)} characters long, over the {MAX_URL_CHARS}-character limit.",
            code="invalid_url",
        )
    parts = urlsplit(url) if url.isprintable() else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ToolError(f"Invalid URL {shown}: only http:// and https:// URLs can be fetched.", code="invalid_url")
    try:
        parts.hostname.encode("idna")
    except UnicodeError:
        raise ToolError(
            f"Invalid URL {shown}: the host name {quote_input(parts.hostname)} is not valid.",
            code="invalid_url",
        ) from None
    return url


async def _download(url: str, fmt: str, ctx: CallServices, timeout: float) -> _Body:
    """GET ``url``, following redirects ourselves so that, with the SSRF guard on, every hop is
    checked (the guarded transport checks each address it connects to)."""
    import httpx  # lazy: the CLI should not pay for httpx unless it fetches

    from ...web.guard import guarded_transport

    headers = {"Accept": ACCEPT[fmt], "User-Agent": ctx.config.user_agent}
    transport = None
    if ctx.config.block_private_networks:
        transport = guarded_transport(frozenset(h.lower() for h in ctx.config.fetch_allowed_hosts))
    async with httpx.AsyncClient(follow_redirects=False, timeout=timeout, transport=transport) as client:
        current = url
        retried = False
        for _hop in range(MAX_REDIRECTS + 1):
            try:
                outcome = await _get(client, current, headers, ctx)
            except httpx.HTTPError as exc:
                raise ToolError(
                    f"Fetching {quote_input(current)} failed: {type(exc).__name__}: {exc}",
                    code="fetch_failed",
                ) from exc
            if outcome == _CHALLENGED and not retried:  # Cloudflare challenge: one retry, plain User-Agent
                headers = {**headers, "User-Agent": PLAIN_USER_AGENT}
                retried = True
                continue
            if outcome == _CHALLENGED:
                break
            if isinstance(outcome, str):
                current = _checked_url(urljoin(current, outcome))
                continue
            return outcome
        else:
            raise ToolError(
                f"Fetching {quote_input(url)} failed: more than {MAX_REDIRECTS} redirects.",
                code="too_many_redirects",
            )
    raise ToolError(
        f"Fetching {quote_input(url)} failed: 403 Forbidden (a bot challenge that a retry did not pass).",
        code="http_error",
    )


_CHALLENGED = "\0challenged"


async def _get(client: Any, url: str, headers: dict[str, str], ctx: CallServices) -> _Body | str:
    """The body, a redirect's Location, or _CHALLENGED."""
    async with client.stream("GET", url, headers=headers) as response:
        if response.is_redirect and response.headers.get("location"):
            return str(response.headers["location"])
        if response.status_code == 403 and response.headers.get("cf-mitigated", "").lower() == "challenge":
            return _CHALLENGED
        declared = response.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
            raise ToolError(
                f"Response is {int(declared)} bytes, over the {MAX_BODY_BYTES} byte (5 MB) limit; not downloaded.",
                code="response_too_large")
        content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type.startswith(BINARY_TYPES):
            raise ToolError(
                f"{quote_input(url)} is binary content ({content_type}); fetch returns text only.",
                code="binary_content",
            )
        data = await _read_capped(response, ctx, int(declared) if declared and declared.isdigit() else None)
        body = _Body(data, content_type, response.charset_encoding, response.status_code, str(response.url))
        if response.status_code >= 400:
            raise ToolError(
                f"Fetching {quote_input(url)} failed with HTTP {response.status_code} {response.reason_phrase}.\n"
                f"{_error_excerpt(body)}", code="http_error")
        return body


def _error_excerpt(body: _Body) -> str:
    """An error page as the model would read it: HTML converted to text, then cut."""
    text = _decode(body)
    if "html" in body.content_type or "<html" in text[:1000].lower():
        text = to_text(text[: 20 * ERROR_EXCERPT_CHARS])
    return text[:ERROR_EXCERPT_CHARS]


async def _read_capped(response: Any, ctx: CallServices, total: int | None) -> bytes:
    """The body, at most MAX_BODY_BYTES; progress reports bytes so far at a bounded rate, and
    always the final count."""
    chunks: list[bytes] = []
    size = 0
    last = 0.0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise ToolError(
                f"Response exceeded the {MAX_BODY_BYTES} byte (5 MB) limit while downloading; stopped.",
                code="response_too_large",
            )
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


async def _convert(body: _Body, fmt: str, ctx: CallServices) -> tuple[str, str]:
    """The text for ``fmt`` and a note about how it was made ("" when nothing to say)."""
    from ...web.convert import convert_page

    if not body.content_type and looks_binary(body.data[:4096]):
        raise ToolError(
            f"{quote_input(body.final_url)} appears to be binary content; fetch returns text only.",
            code="binary_content",
        )
    text = _decode(body)
    is_html = "html" in body.content_type or (not body.content_type and "<html" in text[:1000].lower())
    if fmt == "html" or not is_html:
        return text, ""
    return await convert_page(text, fmt, body.final_url, ctx.state, ctx.cancel)


TOOL = FetchTool()
