"""Serving MCP over streamable HTTP: the SDK's app behind :class:`~.http_guard.HttpGuard`
(Host, Origin, bearer token, session owner), a session per ``Mcp-Session-Id`` (closed on the
client's DELETE, or idle), uvicorn on a socket the command line bound."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import signal
import socket
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .server import ToolsmithServer

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
HTTP_PATH = "/mcp"
#: On shutdown, open HTTP streams get this long to finish before they are closed.
SHUTDOWN_GRACE_S = 3


async def serve_http(
    server: ToolsmithServer,
    sock: socket.socket,
    *,
    remote: bool = False,
    stop: asyncio.Event,
    tokens: list[str] | None = None,
    extra_hosts: list[str] | None = None,
) -> None:
    """Serve streamable HTTP on ``sock`` (bound and listening) until ``stop`` is set; every
    request passes :class:`~.http_guard.HttpGuard` (Host, Origin, bearer token, session owner)."""
    import uvicorn

    class Uvicorn(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield  # signals are the caller's: they set ``stop``, which shuts down gracefully

    server.accept_http_sessions()
    host = sock.getsockname()[0]
    app = server.server.streamable_http_app(
        streamable_http_path=HTTP_PATH,
        host=host if not remote else "0.0.0.0",
        session_idle_timeout=server.session_idle_s,
        transport_security=_guarded_transport(),
    )
    guarded = _guard(_DeleteAware(app, server), host, tokens or [], extra_hosts or [])
    config = uvicorn.Config(
        guarded, log_level="warning", lifespan="on", access_log=False,
        timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
    )  # fmt: skip
    reaper = asyncio.ensure_future(server.reap_idle())
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
        await server.close()


async def serve_http_until_signalled(
    server: ToolsmithServer, sock: socket.socket, *, remote: bool, tokens: list[str], extra_hosts: list[str]
) -> None:
    """SIGTERM or SIGINT stops the HTTP server gracefully, then every session is closed."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await serve_http(server, sock, remote=remote, stop=stop, tokens=tokens, extra_hosts=extra_hosts)


def _guarded_transport() -> Any:
    """The SDK's own Host/Origin check (on only for 127.0.0.1/localhost/::1) is replaced by
    :class:`~.http_guard.HttpGuard`, which covers every binding and the configured extra hosts."""
    from mcp.server.transport_security import TransportSecuritySettings

    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


def _guard(app: Any, host: str, tokens: list[str], extra_hosts: list[str]) -> Any:
    from .http_guard import HttpGuard, allowed_hosts

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


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock
