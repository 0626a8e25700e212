"""Serving MCP over streamable HTTP: the front (``http_front``: request heads within a deadline,
routing by session) and the workers (``http_workers``) that serve the SDK's app behind
:class:`~.http_guard.HttpGuard` (Host, Origin, bearer token, session owner), ``WorkerSessionIds``
(the worker's session ids; requests for another worker handed back), ``RequestLimits`` (the
body's deadline and size, the client watch) and ``SessionGate`` (the session limit, idle
sessions). :func:`serve_http` runs it all in one
process (embedding; ``--workers 1``); :func:`serve_http_workers` with worker processes."""

from __future__ import annotations

import asyncio
import ipaddress
import signal
import socket
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported when serving: the command line loads this module for its constants
    from .http_workers import AppWorker
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
) -> AppWorker:
    """The ASGI app one worker serves (its sessions: ``share`` of ``total``), with its gate and
    its hand-back (``to_front`` is set by whoever runs the worker with a front)."""
    from .http_guard import HttpGuard, allowed_hosts
    from .http_limits import external_session_id
    from .http_routing import HandBack, WorkerSessionIds
    from .http_sessions import RequestLimits, SessionGate
    from .http_workers import AppWorker

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
    server.one_call_sessions = gate.one_call_sessions
    hand_back = HandBack()
    # The guard first: nothing of a request without the token is read, not even to hand it back.
    # It sees the session ids as clients do (with the worker's index).
    routed = WorkerSessionIds(RequestLimits(gate), index, hand_back)
    guard = HttpGuard(routed, hosts=allowed_hosts(host, extra_hosts or []), tokens=tokens or [])
    gate.on_closed.append(lambda session_id: guard.forget(external_session_id(index, session_id)))
    return AppWorker(server, guard, index=index, gate=gate, hand_back=hand_back)


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
    worker = worker_app(
        server, host, index=0, share=server.max_sessions, total=server.max_sessions, remote=remote, tokens=tokens,
        extra_hosts=extra_hosts,
    )  # fmt: skip
    front = Front(sock, [worker])
    await worker.start()
    try:
        await front.serve(stop)
    finally:
        await worker.stop()


async def serve_http_workers(sock: socket.socket, spec: dict[str, Any], *, workers: int, total: int,
                             stop: asyncio.Event) -> None:  # fmt: skip
    """Serve on ``sock`` with ``workers`` worker processes, each started from ``spec`` (the
    command line's settings) with its share of ``total`` sessions, until ``stop`` is set."""
    from .http_front import Front
    from .http_workers import ProcessWorker

    shares = [total // workers + (1 if i < total % workers else 0) for i in range(workers)]
    started = [ProcessWorker(i, {**spec, "workers": workers}, share) for i, share in enumerate(shares)]
    front = Front(sock, started)
    try:
        for worker in started:
            worker.front = front
            await worker.start()
        await front.serve(stop)
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
    # IPPROTO_TCP, not 0: accepted sockets inherit it, and asyncio sets TCP_NODELAY only on
    # sockets that say TCP (without it, Nagle and delayed ACKs stall keep-alive calls ~40 ms).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(LISTEN_BACKLOG)
    return sock
