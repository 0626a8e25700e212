"""Serving MCP over streamable HTTP: the front (``http_front``: request heads within a deadline,
routing by session) and the workers (``http_workers``) that serve the SDK's app behind
:class:`~.http_guard.HttpGuard` (Host, Origin, bearer token, session owner), ``RequestLimits``
(the body's deadline and size, the client watch) and ``SessionGate`` (the session limit, idle
sessions). :func:`serve_http` runs it all in one
process (embedding; ``--workers 1``); :func:`serve_http_workers` with worker processes."""

from __future__ import annotations

import asyncio
import ipaddress
import signal
import socket
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from .http_workers import AppWorker, ProcessWorker

if TYPE_CHECKING:
    from .http_sessions import SessionGate
    from .server import ToolsmithServer

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
HTTP_PATH = "/mcp"
#: Connections the kernel queues before the front accepts them.
LISTEN_BACKLOG = 1024


def worker_app(
    server: ToolsmithServer,
    host: str,
    *,
    index: int,
    share: int,
    total: int,
    remote: bool = False,
    tokens: list[str] | None = None,
    extra_hosts: list[str] | None = None,
) -> tuple[Any, SessionGate]:
    """The ASGI app one worker serves (its sessions: ``share`` of ``total``), and its gate."""
    from .http_guard import HttpGuard, allowed_hosts
    from .http_sessions import RequestLimits, SessionGate, WorkerSessionIds

    server.accept_http_sessions()
    server.http_path = HTTP_PATH
    sdk_app = server.server.streamable_http_app(
        streamable_http_path=HTTP_PATH,
        host=host if not remote else "0.0.0.0",
        # SessionGate closes idle sessions (an open event stream does not keep one alive); the
        # SDK's own timer, later, is a backstop.
        session_idle_timeout=2 * server.session_idle_s,
        max_sessions=share,
        transport_security=_guarded_transport(),
    )
    gate = SessionGate(sdk_app, server, share=share, total=total)
    guard = HttpGuard(RequestLimits(gate), hosts=allowed_hosts(host, extra_hosts or []), tokens=tokens or [])
    gate.on_closed.append(guard.forget)
    return WorkerSessionIds(guard, index), gate


async def serve_http(
    server: ToolsmithServer,
    sock: socket.socket,
    *,
    remote: bool = False,
    stop: asyncio.Event,
    tokens: list[str] | None = None,
    extra_hosts: list[str] | None = None,
) -> None:
    """Serve streamable HTTP on ``sock`` (bound and listening) in this process until ``stop`` is
    set; then every session is closed."""
    from .http_front import Front

    host = sock.getsockname()[0]
    app, gate = worker_app(
        server, host, index=0, share=server.max_sessions, total=server.max_sessions, remote=remote, tokens=tokens,
        extra_hosts=extra_hosts,
    )  # fmt: skip
    worker = AppWorker(server, app, index=0, gate=gate)
    await worker.start()
    try:
        await Front(sock, [worker]).serve(stop)
    finally:
        await worker.stop()


async def serve_http_workers(sock: socket.socket, spec: dict[str, Any], *, workers: int, total: int,
                             stop: asyncio.Event) -> None:  # fmt: skip
    """Serve on ``sock`` with ``workers`` worker processes, each started from ``spec`` (the
    command line's settings) with its share of ``total`` sessions, until ``stop`` is set."""
    from .http_front import Front

    shares = [total // workers + (1 if i < total % workers else 0) for i in range(workers)]
    started = [ProcessWorker(i, spec, share) for i, share in enumerate(shares)]
    try:
        for worker in started:
            await worker.start()
        await Front(sock, started).serve(stop)
    finally:
        await asyncio.gather(*(worker.stop() for worker in started))


async def until_signalled(serve: Callable[[asyncio.Event], Awaitable[None]]) -> None:
    """Run ``serve(stop)``; SIGTERM or SIGINT sets ``stop`` (a graceful stop)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await serve(stop)


def _guarded_transport() -> Any:
    """The SDK's own Host/Origin check (on only for 127.0.0.1/localhost/::1) is replaced by
    :class:`~.http_guard.HttpGuard`, which covers every binding and the configured extra hosts."""
    from mcp.server.transport_security import TransportSecuritySettings

    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


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
    sock.listen(LISTEN_BACKLOG)
    return sock
