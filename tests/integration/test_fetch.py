"""fetch against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.llm.tools.fetch import MAX_BODY_BYTES
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import make_session
from tests.helpers import processes_with

HTML = b"""<html><head><title>T</title><style>.x{color:red}</style><script>var secret=1;</script></head>
<body><nav>Home | About</nav><h1>Guide</h1><p>Install with <code>pip</code>. See <a href="/docs">docs</a>.</p>
<footer>Copyright</footer></body></html>"""
SJIS_TEXT = "日本語のテキストです。これはシフトJISでエンコードされた文書です。" * 20
LATIN1_HTML = "<html><body><p>Café crème brûlée à la française, déjà vu, naïveté, façade.</p></body></html>" * 5
DRIP_MAX_SECONDS = 30
DOC_HTML = b"""<html><body><nav>menu</nav><h2>Setup</h2><p>Run the <code>make</code> target, then
<em>check</em> the <a href="/log">log</a>.</p><ul><li>first <b>step</b></li><li>second</li></ul>
<pre>def main():
    return 0
</pre><p>Done.</p></body></html>"""
#: Cheap to serve, slow to convert: hundreds of thousands of tiny elements (under the 5 MB cap).
HEAVY_HTML = b"<html><body><p>" + b"<b>x</b><i>y</i>" * 300_000 + b"</p></body></html>"
#: Just under the markdown converter's size limit, so it takes the slow markdown path: many
#: seconds of parsing and converting in calls that cannot be interrupted from inside.
HEAVY_MARKDOWN_HTML = b"<html><body><p>" + b"<b>x</b><i>y</i>" * 60_000 + b"</p></body></html>"
#: A hang guard for a call whose timeout is 1 s: the conversion it cuts short takes far longer.
TIMEOUT_CALL_GUARD_S = 15
LONG_MARKDOWN = "".join(f"line {i}: lorem ipsum dolor sit amet\n" for i in range(10_000))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def send(self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        path = self.path
        if path == "/html":
            self.send(200, HTML, "text/html; charset=utf-8")
        elif path == "/md":
            self.send(200, b"# Title\n\n* item\n", "text/markdown")
        elif path == "/long":
            self.send(200, LONG_MARKDOWN.encode(), "text/markdown")
        elif path == "/plain":
            self.send(200, b"just text\n", "text/plain")
        elif path == "/accept":
            self.send(200, self.headers.get("Accept", "").encode(), "text/plain")
        elif path == "/latin1":
            self.send(200, LATIN1_HTML.encode("latin-1"), "text/html")
        elif path == "/sjis":
            self.send(200, SJIS_TEXT.encode("shift_jis"), "text/plain")
        elif path == "/big-declared":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(6 * 1024 * 1024))
            self.end_headers()
            self._write_quietly(b"x" * 65536)
        elif path == "/big-undeclared":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            for _ in range(6 * 16):
                if not self._write_quietly(b"y" * 65536):
                    return
        elif path == "/drip":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            deadline = time.monotonic() + DRIP_MAX_SECONDS
            while time.monotonic() < deadline and self._write_quietly(b"."):
                time.sleep(0.1)
        elif path == "/loop":
            self.send(302, b"", "text/plain", {"Location": "/loop"})
        elif path == "/cf":
            if self.headers.get("User-Agent") == "toolsmith":
                self.send(200, b"passed the challenge", "text/plain")
            else:
                self.send(403, b"<html>challenge</html>", "text/html", {"cf-mitigated": "challenge"})
        elif path == "/image":
            self.send(200, b"\x89PNG\r\n\x1a\n" + b"\x00" * 100, "image/png")
        elif path == "/missing":
            self.send(404, b"<html><body><h1>Not here</h1><p>sorry, <b>gone</b></p></body></html>", "text/html")
        elif path == "/doc":
            self.send(200, DOC_HTML, "text/html; charset=utf-8")
        elif path == "/moved":
            self.send(301, b"", "text/plain", {"Location": "/guide/intro/page.html"})
        elif path == "/guide/intro/page.html":
            self.send(200, b'<p>See <a href="next.html">next</a> and <img src="../img/a.png" alt="a"></p>', "text/html")
        elif path == "/to-localhost":
            port = self.server.server_address[1]
            self.send(302, b"", "text/plain", {"Location": f"http://localhost:{port}/plain"})
        elif path == "/heavy":
            self.send(200, HEAVY_HTML, "text/html")
        elif path == "/heavy-markdown":
            self.send(200, HEAVY_MARKDOWN_HTML, "text/html")
        elif path == "/deep":
            self.send(200, b"<div>" * 20000 + b"deep text" + b"</div>" * 20000, "text/html")
        elif path == "/broken":
            self.send(500, b"database exploded", "text/plain")
        else:
            self.send(404, b"unknown", "text/plain")

    def _write_quietly(self, data: bytes) -> bool:
        try:
            self.wfile.write(data)
            self.wfile.flush()
            return True
        except (BrokenPipeError, ConnectionResetError):
            return False


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def fetch(workspace: Path, **params: Any) -> Any:
    session = make_session(workspace)
    return asyncio.run(session.run("fetch", params))


def test_html_to_markdown_drops_scripts_nav_footer(workspace: Path, server: str) -> None:
    r = fetch(workspace, url=f"{server}/html")
    assert not r.is_error, r.content
    assert "# Guide" in r.content and f"[docs]({server}/docs)" in r.content and "`pip`" in r.content
    for junk in ("secret", "color:red", "Home | About", "Copyright"):
        assert junk not in r.content
    text = fetch(workspace, url=f"{server}/html", format="text")
    assert "Guide" in text.content and "<h1>" not in text.content and "secret" not in text.content
    html = fetch(workspace, url=f"{server}/html", format="html")
    assert "<h1>Guide</h1>" in html.content


def test_markdown_and_plain_pass_through(workspace: Path, server: str) -> None:
    assert fetch(workspace, url=f"{server}/md").content == "# Title\n\n* item\n"
    assert fetch(workspace, url=f"{server}/plain", format="text").content == "just text\n"


@pytest.mark.parametrize(
    ("fmt", "accept"),
    [("text", "text/plain;q=1.0, text/html;q=0.5"), ("markdown", "text/markdown;q=1.0, text/html;q=0.7"),
     ("html", "text/html;q=1.0")],
)  # fmt: skip
def test_accept_header_per_format(workspace: Path, server: str, fmt: str, accept: str) -> None:
    assert fetch(workspace, url=f"{server}/accept", format=fmt).content == accept


def test_charsets_detected_without_headers(workspace: Path, server: str) -> None:
    latin = fetch(workspace, url=f"{server}/latin1")
    assert "Café crème brûlée" in latin.content
    sjis = fetch(workspace, url=f"{server}/sjis", format="text")
    assert "日本語のテキストです" in sjis.content


def test_size_limits(workspace: Path, server: str) -> None:
    declared = fetch(workspace, url=f"{server}/big-declared")
    assert declared.is_error and "not downloaded" in declared.content
    undeclared = fetch(workspace, url=f"{server}/big-undeclared")
    assert undeclared.is_error and f"exceeded the {MAX_BODY_BYTES} byte" in undeclared.content


def test_slow_drip_is_cut_off_by_the_timeout(workspace: Path, server: str) -> None:
    started = time.monotonic()
    r = fetch(workspace, url=f"{server}/drip", timeout=1)
    assert r.is_error and "timed out after 1 s" in r.content
    assert time.monotonic() - started < TIMEOUT_CALL_GUARD_S  # the drip goes on for DRIP_MAX_SECONDS


def test_redirect_loop(workspace: Path, server: str) -> None:
    r = fetch(workspace, url=f"{server}/loop")
    assert r.is_error and "more than 10 redirects" in r.content


def test_cloudflare_challenge_retried_once(workspace: Path, server: str) -> None:
    r = fetch(workspace, url=f"{server}/cf")
    assert not r.is_error and r.content == "passed the challenge"


def test_binary_and_http_errors(workspace: Path, server: str) -> None:
    image = fetch(workspace, url=f"{server}/image")
    assert image.is_error and "binary content (image/png)" in image.content
    missing = fetch(workspace, url=f"{server}/missing")
    assert missing.is_error and "HTTP 404" in missing.content
    assert "Not here\n\nsorry, gone" in missing.content and "<" not in missing.content.split("\n", 1)[1]
    broken = fetch(workspace, url=f"{server}/broken")
    assert broken.is_error and "HTTP 500" in broken.content and "database exploded" in broken.content


def test_bad_urls_and_ssrf_guard(workspace: Path, server: str) -> None:
    assert "only http:// and https://" in fetch(workspace, url="file:///etc/passwd").content
    assert "only http:// and https://" in fetch(workspace, url="not a url").content
    guarded = make_session(workspace, config=Config(lsp_enabled=False, block_private_networks=True))
    r = asyncio.run(guarded.run("fetch", {"url": f"{server}/plain"}))
    assert r.is_error and "non-public address 127.0.0.1" in r.content


def test_long_page_spills_to_file(workspace: Path, server: str) -> None:
    r = fetch(workspace, url=f"{server}/long")
    assert not r.is_error and r.metadata["truncated"]
    assert r.content.startswith("line 0: lorem") and "lines truncated] ..." in r.content
    assert "line 9999: lorem" in r.content
    assert len(r.content) < 52_000
    assert Path(r.metadata["full_output_path"]).read_text(encoding="utf-8") == LONG_MARKDOWN


def test_progress_reported(workspace: Path, server: str) -> None:
    events: list[dict[str, Any]] = []
    session = make_session(workspace, progress=lambda message, data: events.append(data))
    asyncio.run(session.run("fetch", {"url": f"{server}/long"}))
    assert events and events[0]["tool"] == "fetch" and events[0]["bytes"] > 0


def test_text_format_reads_like_the_page(workspace: Path, server: str) -> None:
    text = fetch(workspace, url=f"{server}/doc", format="text").content
    assert text == (
        "Setup\n\nRun the make target, then check the log.\n\n- first step\n- second\n\n"
        "def main():\n    return 0\n\nDone."
    )


def test_links_resolve_against_the_final_url(workspace: Path, server: str) -> None:
    r = fetch(workspace, url=f"{server}/moved")
    assert r.metadata["final_url"] == f"{server}/guide/intro/page.html"
    assert f"[next]({server}/guide/intro/next.html)" in r.content and f"({server}/guide/img/a.png)" in r.content


def _conversion_children() -> list[int]:
    """Live page-conversion processes (web/html.py run as a script) started by this process."""
    return processes_with(b"web/html.py", parent=os.getpid())


@pytest.mark.parametrize(("page", "fmt"), [("heavy", "text"), ("heavy-markdown", "markdown")])
def test_the_timeout_covers_conversion(workspace: Path, server: str, page: str, fmt: str) -> None:
    """The timeout ends the conversion too: the answer comes, the converting process is gone,
    and the same session's next call is not slowed by work still running."""
    session = make_session(workspace)
    (workspace / "a.txt").write_text("hello\n")

    async def main() -> tuple[Any, Any, list[int]]:
        timed_out = await session.run("fetch", {"url": f"{server}/{page}", "format": fmt, "timeout": 1})
        left = _conversion_children()
        after = await session.run("view", {"file_path": "a.txt"})
        return timed_out, after, left

    started = time.monotonic()
    timed_out, after, left = asyncio.run(main())
    assert timed_out.is_error and "timed out after 1 s (download and conversion)" in timed_out.content
    assert left == []
    assert not after.is_error and "hello" in after.content
    assert time.monotonic() - started < TIMEOUT_CALL_GUARD_S


def test_the_timeout_ends_the_cli_process(workspace: Path, server: str) -> None:
    """The CLI process exits once the call has timed out: no conversion outlives it."""
    repo = Path(__file__).resolve().parents[2]
    params = json.dumps({"url": f"{server}/heavy-markdown", "timeout": 1})
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "cmd.tools", "--no-lsp", "fetch", params],
        cwd=repo, capture_output=True, text=True, timeout=TIMEOUT_CALL_GUARD_S * 2,
    )
    elapsed = time.monotonic() - started
    assert "timed out after 1 s" in done.stdout + done.stderr
    assert elapsed < TIMEOUT_CALL_GUARD_S
    assert _conversion_children() == []


@given(html=st.text(alphabet="<>/ab &;#x\"=!-pre\n", max_size=400), feed=st.integers(1, 40))
def test_text_conversion_is_the_same_fed_in_pieces(html: str, feed: int) -> None:
    """Feeding the streaming parser in chunks (so a stop check can run between them) changes nothing."""
    from agent_toolsmith.web import html as html_module

    whole = html_module.to_text(html)
    original = html_module.FEED_CHARS
    html_module.FEED_CHARS = feed
    try:
        assert html_module.to_text(html) == whole
    finally:
        html_module.FEED_CHARS = original


def test_conversion_checks_for_a_stop_while_it_works() -> None:
    from agent_toolsmith.errors import ToolCancelled
    from agent_toolsmith.web.html import convert

    page = "<p>" + "<b>x</b>" * 20_000 + "</p>"
    for fmt in ("text", "markdown"):
        calls = 0

        def check() -> None:
            nonlocal calls
            calls += 1
            if calls > 3:
                raise ToolCancelled("stop")

        with pytest.raises(ToolCancelled):
            convert(page, fmt, "http://example.test/", check)


def test_deeply_nested_html_falls_back_to_text(workspace: Path, server: str) -> None:
    r = fetch(workspace, url=f"{server}/deep")
    assert not r.is_error and "deep text" in r.content and "nested too deeply" in r.content


def test_the_ssrf_guard_checks_every_hop(workspace: Path, server: str) -> None:
    allowed = Config(lsp_enabled=False, block_private_networks=True, fetch_allowed_hosts=["127.0.0.1"])
    session = make_session(workspace, config=allowed)
    direct = asyncio.run(session.run("fetch", {"url": f"{server}/plain"}))
    assert not direct.is_error and direct.content == "just text\n"
    hop = asyncio.run(session.run("fetch", {"url": f"{server}/to-localhost"}))
    assert hop.is_error and "Refusing to fetch from localhost" in hop.content and "non-public address" in hop.content


def test_the_guard_connects_to_the_address_it_checked(server: str) -> None:
    """One resolution per connection; the socket goes to that very address (no second lookup
    that DNS rebinding could answer differently)."""
    import httpx
    from agent_toolsmith.web.guard import guarded_transport

    port = int(server.rsplit(":", 1)[1])
    answers = [["127.0.0.1"], ["10.9.9.9"]]  # a rebinding resolver: first answer checked, second never used
    asked: list[str] = []

    async def resolver(host: str, _port: int) -> list[str]:
        asked.append(host)
        return answers[len(asked) - 1]

    async def main() -> str:
        transport = guarded_transport(frozenset({"docs.internal"}), resolver)
        async with httpx.AsyncClient(transport=transport) as client:
            response = await client.get(f"http://docs.internal:{port}/plain")
            return response.text

    assert asyncio.run(main()) == "just text\n"
    assert asked == ["docs.internal"]

    async def refused() -> None:
        transport = guarded_transport(frozenset(), resolver)
        async with httpx.AsyncClient(transport=transport) as client:
            await client.get(f"http://elsewhere.example:{port}/plain")

    from agent_toolsmith.errors import ToolError

    asked.clear()
    answers[0] = ["127.0.0.1"]
    with pytest.raises(ToolError, match=r"non-public address 127\.0\.0\.1"):
        asyncio.run(refused())
