"""A worker's side of routing by session: its session ids carry its index, and a request on one
of its connections for another worker's session goes back to the front.

The front hands a worker a connection with its first request; the worker serves the requests
that follow on it (keep-alive). :class:`WorkerSessionIds` (the outermost layer of a worker's app)
(inside the Host/token guard) puts the worker's index in front of every session id it gives
out and takes it off the ids of requests; a request that names another worker's session, or opens a new one after the
connection's first request, is read whole and handed back to the front with its connection
(:class:`HandBack`), which routes it again (new sessions to the worker with the most room).
Clients keep one connection per session as a rule, so a hand-back is rare; it is there so that a
client that shares a connection between sessions is served all the same.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from .http_limits import BODY_READ_TIMEOUT_S, MAX_BODY_BYTES, external_session_id, split_session_id
from .http_sessions import read_body, respond

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Any]]
Send = Callable[[Any], Awaitable[None]]
#: Gives a connection (its descriptor) and the request read from it to the front.
ToFront = Callable[[int, bytes], None]


class HandBack:
    """The connections of one worker by their client address, so that one can be given back to
    the front (``to_front``; None in a worker that is the only one)."""

    def __init__(self, to_front: ToFront | None = None, workers: int = 1) -> None:
        self.to_front = to_front
        #: How many workers there are: an id naming another index is for no one (404 here).
        self.workers = workers
        self.connections: dict[Any, Any] = {}
        #: Connections whose first request (the one the front routed) is not served yet.
        self.fresh: set[Any] = set()

    def served(self, peer: Any, protocol: Any) -> None:
        self.connections[peer] = protocol
        self.fresh.add(peer)

    def closed(self, peer: Any, protocol: Any) -> None:
        if self.connections.get(peer) is protocol:  # not a later connection from the same address
            del self.connections[peer]
            self.fresh.discard(peer)

    def first_request(self, scope: Scope) -> bool:
        """Whether this is the first request of its connection (the one the front routed); every
        request's head has arrived, so its connection's head deadline is lifted."""
        peer = _peer(scope.get("client"))
        protocol = self.connections.get(peer)
        if protocol is not None:
            protocol.head_arrived()
        if peer in self.fresh:
            self.fresh.discard(peer)
            return True
        return False

    async def give_back(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Read the request whole and hand it with its connection to the front; without a front
        to give it to, answer 404 as for any session this worker does not know."""
        protocol = self.connections.get(_peer(scope.get("client")))
        transport = None if protocol is None else protocol.transport
        if self.to_front is None or transport is None:
            await respond(send, 404, "Session not found")
            return
        try:
            body = await asyncio.wait_for(read_body(receive), BODY_READ_TIMEOUT_S)
        except TimeoutError:
            body = None
        if body is None or len(body) > MAX_BODY_BYTES:
            transport.abort()
            return
        sock = transport.get_extra_info("socket")
        transport.pause_reading()
        self.to_front(sock.fileno(), request_bytes(scope, body))
        # The descriptor in flight keeps the connection open; this worker lets go of its own, and
        # uvicorn, seeing the connection gone, sends nothing for this request.
        transport.abort()
        await asyncio.sleep(0)


def request_bytes(scope: Scope, body: bytes) -> bytes:
    """The request of ``scope`` as it came on the wire (its body read whole)."""
    target = scope.get("raw_path") or str(scope.get("path", "/")).encode()
    if scope.get("query_string"):
        target += b"?" + scope["query_string"]
    lines = [scope.get("method", "GET").encode() + b" " + target + b" HTTP/1.1"]
    lines += [
        name + b": " + value
        for name, value in scope.get("headers") or []
        if name not in (b"content-length", b"transfer-encoding")
    ]
    lines.append(b"content-length: " + str(len(body)).encode())
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


class WorkerSessionIds:
    """ASGI middleware: the worker's index on the session ids it gives out, off the
    ids of requests, and requests for other workers' sessions handed back."""

    def __init__(self, app: Any, index: int, hand_back: HandBack) -> None:
        self.app = app
        self.index = index
        self.hand_back = hand_back

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        routed_here = self.hand_back.first_request(scope)
        headers = scope.get("headers") or []
        session = next((i for i, (name, _) in enumerate(headers) if name == b"mcp-session-id"), None)
        if session is None:
            if not routed_here and self.hand_back.to_front is not None:  # a new session: the front balances
                await self.hand_back.give_back(scope, receive, send)
                return
        else:
            index, inner = split_session_id(headers[session][1].decode("latin-1"))
            if index is not None and index != self.index and index < self.hand_back.workers:
                await self.hand_back.give_back(scope, receive, send)
                return
            if index is not None:
                headers[session] = (b"mcp-session-id", inner.encode("latin-1"))

        async def prefixed(message: Any) -> None:
            if message.get("type") == "http.response.start":
                message["headers"] = [
                    (k, external_session_id(self.index, v.decode("latin-1")).encode("latin-1"))
                    if k.lower() == b"mcp-session-id" else (k, v)
                    for k, v in message.get("headers") or []
                ]  # fmt: skip
            await send(message)

        await self.app(scope, receive, prefixed)


def _peer(client: Any) -> Any:
    with contextlib.suppress(TypeError):
        return tuple(client)
    return client
