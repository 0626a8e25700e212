"""The front of ``toolsmith-mcp --http``: accepts every connection, reads its request head within
a deadline, and hands the connection to the worker that holds its MCP session.

A worker (``http_workers``) serves the MCP app for its share of the sessions; a session's every
request reaches the worker that created it, because the session ids a worker gives out carry its
index (``<index>-<id>``). The front does no HTTP serving of its own beyond that head:

- **Deadlines and caps**: a connection whose request head has not arrived within
  ``HEADER_READ_TIMEOUT_S`` of its accept is closed; a head over ``MAX_HEADER_BYTES`` is refused
  (431). At most ``MAX_PENDING_CONNECTIONS`` connections wait for their heads: one more closes
  the one that has waited longest (a flood of half-sent requests cannot keep out a client that
  sends its request at once).
- **Routing**: by the ``Mcp-Session-Id``'s worker index; a request without one (an initialize)
  goes to the worker with the most free session slots. The head is passed on with the
  session id as the worker knows it, and ``Connection: close``: the next request on a
  connection may belong to another worker's session, so every request comes on its own
  connection.
- **Clients that open a session per call**: the front counts, per client (bearer token and
  address), the sessions that were deleted after at most one request; a session's requests
  carry that count (``CLIENT_HINT_HEADER``) while it has made at most one call, so the server can
  tell the model why a file it read "earlier" is unknown (see ``server.per_call_note``).
- ``GET /healthz`` is answered here: 200 while every worker runs, 503 otherwise. So are a head
  that cannot be parsed (400), one over the size limit (431), a declared body over
  ``MAX_BODY_BYTES`` (413), and a request for a worker being restarted (503).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import socket
import time
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..logs import logger
from .http_limits import (
    CLIENT_HINT_HEADER,
    HEADER_READ_TIMEOUT_S,
    HEALTH_PATH,
    MAX_BODY_BYTES,
    MAX_HEADER_BYTES,
    MAX_PENDING_CONNECTIONS,
    split_session_id,
)

log = logger("toolsmith")

#: Bytes read from a connection at a time while its head arrives.
READ_CHUNK = 64 * 1024
#: A session deleted after at most this many POSTs (``notifications/initialized`` and one
#: request) made one call: its client opens sessions per call.
ONE_CALL_POSTS = 2
#: Clients' sessions of at most one call are counted over this window...
PER_CALL_WINDOW_S = 10 * 60
#: ... at most this many per client (the hint says "at least N"), for at most this many clients
#: and this many sessions being counted (the least recently seen are forgotten first).
MAX_COUNTED_PER_CLIENT = 8
MAX_CLIENTS = 1024
MAX_COUNTED_SESSIONS = 4096
#: Request headers the front drops from what a client sent: connection management is the
#: front's, and the hint header is the front's alone to set.
DROPPED_HEADERS = frozenset({b"connection", b"keep-alive", b"proxy-connection", CLIENT_HINT_HEADER.encode()})


class Worker(Protocol):
    """Where the front hands connections: a worker process, or this process's own app."""

    index: int

    def free_slots(self) -> int:
        """Session slots this worker has left (its share of ``--max-sessions`` less its sessions)."""
        ...

    def alive(self) -> bool: ...

    async def hand_over(self, conn: socket.socket, head: bytes) -> None:
        """Serve ``conn``, whose first bytes (already read) are ``head``; takes ownership of it."""
        ...


@dataclass
class RequestHead:
    method: bytes
    target: bytes
    #: The header lines as received (without the line ends), minus those the front drops.
    lines: list[bytes]
    session_id: str | None = None
    authorization: bytes = b""
    content_length: int = 0

    @property
    def path(self) -> bytes:
        return self.target.split(b"?", 1)[0]


def parse_head(head: bytes) -> RequestHead | None:
    """The request line and headers of ``head`` (ending with the blank line); None when malformed."""
    request_line, *header_lines = head[:-4].split(b"\r\n")
    parts = request_line.split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        return None
    parsed = RequestHead(parts[0], parts[1], [])
    for line in header_lines:
        name, colon, value = line.partition(b":")
        if not colon:
            return None
        key = name.strip().lower()
        if key in DROPPED_HEADERS:
            continue
        if key == b"mcp-session-id":
            parsed.session_id = value.strip().decode("latin-1")
            continue  # written again by rewritten(), as the worker knows it
        if key == b"authorization":
            parsed.authorization = value.strip()
        elif key == b"content-length":
            parsed.content_length = int(value) if value.strip().isdigit() else 0
        parsed.lines.append(line)
    return parsed


def rewritten(head: RequestHead, session_id: str | None, hint: int) -> bytes:
    """The head passed to a worker: its session id as the worker knows it, ``Connection: close``
    and, for a client that opens sessions per call, the hint."""
    lines = [b" ".join((head.method, head.target, b"HTTP/1.1")), *head.lines]
    if session_id is not None:
        lines.append(b"mcp-session-id: " + session_id.encode("latin-1"))
    if hint:
        lines.append(CLIENT_HINT_HEADER.encode() + b": " + str(hint).encode())
    lines.append(b"connection: close")
    return b"\r\n".join(lines) + b"\r\n\r\n"


@dataclass
class _Counted:
    client: str
    posts: int = 0


@dataclass
class ClientHistory:
    """Per client, when its sessions that made at most one call were deleted (bounded)."""

    sessions: OrderedDict[str, _Counted] = field(default_factory=OrderedDict)
    one_call: OrderedDict[str, deque[float]] = field(default_factory=OrderedDict)

    def seen(self, session_id: str, client: str, method: bytes) -> int:
        """Count a request of ``session_id``; the hint for it: how many sessions of its client
        made at most one call (0 once this session is past its first call)."""
        counted = self.sessions.pop(session_id, None) or _Counted(client)
        self.sessions[session_id] = counted
        if len(self.sessions) > MAX_COUNTED_SESSIONS:
            self.sessions.popitem(last=False)
        if method == b"DELETE":
            del self.sessions[session_id]
            if counted.posts <= ONE_CALL_POSTS:
                self._one_call_session(client)
            return 0
        if method == b"POST":
            counted.posts += 1
        return self.recent(client) if counted.posts <= ONE_CALL_POSTS else 0

    def _one_call_session(self, client: str) -> None:
        times = self.one_call.pop(client, None) or deque(maxlen=MAX_COUNTED_PER_CLIENT)
        times.append(time.monotonic())
        self.one_call[client] = times
        if len(self.one_call) > MAX_CLIENTS:
            self.one_call.popitem(last=False)

    def recent(self, client: str) -> int:
        times = self.one_call.get(client)
        if not times:
            return 0
        since = time.monotonic() - PER_CALL_WINDOW_S
        return sum(1 for t in times if t >= since)


def client_of(head: RequestHead, peer: object) -> str:
    """Who a request comes from, as far as the front can tell: its bearer token and address."""
    host = peer[0] if isinstance(peer, tuple) and peer else ""
    token = hashlib.sha256(head.authorization).hexdigest()[:16] if head.authorization else ""
    return f"{token}@{host}"


class Front:
    """Accepts on ``listener`` and hands each connection to one of ``workers`` (see the module)."""

    def __init__(self, listener: socket.socket, workers: Sequence[Worker]) -> None:
        self.listener = listener
        self.workers = list(workers)
        self.history = ClientHistory()
        #: Connections waiting for their heads, the longest-waiting first.
        self._pending: OrderedDict[socket.socket, asyncio.Task[None]] = OrderedDict()
        self._next = 0

    async def serve(self, stop: asyncio.Event) -> None:
        """Accept until ``stop`` is set; then close the connections still waiting for their heads."""
        loop = asyncio.get_running_loop()
        self.listener.setblocking(False)
        stopping = asyncio.ensure_future(stop.wait())
        try:
            while True:
                accepting = asyncio.ensure_future(loop.sock_accept(self.listener))
                await asyncio.wait({accepting, stopping}, return_when=asyncio.FIRST_COMPLETED)
                if not accepting.done():
                    accepting.cancel()
                    with contextlib.suppress(asyncio.CancelledError, OSError):
                        await accepting
                    return
                try:
                    conn, peer = accepting.result()
                except OSError as exc:  # EMFILE and the like: wait a moment, keep serving
                    log.warning("accepting a connection failed: %s", exc)
                    await asyncio.sleep(0.1)
                    continue
                self._admit(conn, peer)
        finally:
            stopping.cancel()
            for task in list(self._pending.values()):
                task.cancel()

    def _admit(self, conn: socket.socket, peer: object) -> None:
        if len(self._pending) >= MAX_PENDING_CONNECTIONS:
            _, oldest = self._pending.popitem(last=False)
            oldest.cancel()
        conn.setblocking(False)
        self._pending[conn] = asyncio.ensure_future(self._serve_connection(conn, peer))

    async def _serve_connection(self, conn: socket.socket, peer: object) -> None:
        handed = False
        try:
            try:
                received = await asyncio.wait_for(_read_head(conn), HEADER_READ_TIMEOUT_S)
            except TimeoutError:
                return
            finally:
                self._pending.pop(conn, None)
            if received is None:
                return
            if isinstance(received, int):
                await _answer(conn, received, "The request head is too large." if received == 431 else "Bad request.")
                return
            head, rest = received
            if head.content_length > MAX_BODY_BYTES:
                await _answer(conn, 413, f"The request body is larger than {MAX_BODY_BYTES} bytes.")
                return
            if head.path == HEALTH_PATH.encode() and head.method == b"GET":
                await self._health(conn)
                return
            worker, bytes_ = self._route(head, peer)
            if not worker.alive():
                await _answer(conn, 503, "The worker of this session is restarting; its sessions are lost. Retry.")
                return
            handed = True
            await worker.hand_over(conn, bytes_ + rest)
        except (asyncio.CancelledError, OSError):
            pass
        finally:
            if not handed:
                conn.close()

    def _route(self, head: RequestHead, peer: object) -> tuple[Worker, bytes]:
        client = client_of(head, peer)
        if head.session_id is None:
            return self._for_new_session(), rewritten(head, None, 0)
        index, inner = split_session_id(head.session_id)
        worker = self.workers[index] if index is not None and index < len(self.workers) else self.workers[0]
        hint = self.history.seen(head.session_id, client, head.method)
        return worker, rewritten(head, inner if index is not None else head.session_id, hint)

    def _for_new_session(self) -> Worker:
        """The worker with the most free session slots (round robin among equals)."""
        count = len(self.workers)
        order = [self.workers[(self._next + i) % count] for i in range(count)]
        self._next = (self._next + 1) % count
        return max(order, key=lambda w: (w.alive(), w.free_slots()))

    async def _health(self, conn: socket.socket) -> None:
        up = sum(1 for w in self.workers if w.alive())
        ok = up == len(self.workers)
        body = {"status": "ok" if ok else "starting", "workers": len(self.workers), "workers_up": up}
        await _answer(conn, 200 if ok else 503, body)


async def _read_head(conn: socket.socket) -> tuple[RequestHead, bytes] | int | None:
    """The request head and the bytes after it; an HTTP status when it cannot be served; None when
    the client closed first."""
    loop = asyncio.get_running_loop()
    buffer = b""
    while True:
        chunk = await loop.sock_recv(conn, READ_CHUNK)
        if not chunk:
            return None
        buffer += chunk
        end = buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(buffer) > MAX_HEADER_BYTES:
                return 431
            continue
        if end + 4 > MAX_HEADER_BYTES:
            return 431
        head = parse_head(buffer[: end + 4])
        return 400 if head is None else (head, buffer[end + 4 :])


_REASONS = {
    200: "OK", 400: "Bad Request", 413: "Content Too Large", 431: "Request Header Fields Too Large",
    503: "Service Unavailable",
}  # fmt: skip


async def _answer(conn: socket.socket, status: int, body: object) -> None:
    """A complete response from the front itself, then the connection is closed."""
    if isinstance(body, str):
        body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": body}}
    data = json.dumps(body).encode()
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, '')}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(data)}\r\nconnection: close\r\n\r\n"
    ).encode()
    loop = asyncio.get_running_loop()
    with contextlib.suppress(OSError):
        await asyncio.wait_for(loop.sock_sendall(conn, head + data), HEADER_READ_TIMEOUT_S)
