"""The front of ``toolsmith-mcp --http``: accepts every connection, reads its first request head
within a deadline, and hands the connection to the worker that holds its MCP session.

A worker (``http_workers``) serves the MCP app for its share of the sessions; a session's every
request reaches the worker that created it, because the session ids a worker gives out carry its
index (``<index>-<id>``). The front does no HTTP serving of its own beyond that head:

- **Deadlines and caps**: a connection whose request head has not arrived within
  ``HEADER_READ_TIMEOUT_S`` of its accept is closed; a head over ``MAX_HEADER_BYTES`` is refused
  (431), and so is a declared body over ``MAX_BODY_BYTES`` (413). At most
  ``MAX_PENDING_CONNECTIONS`` connections wait for their heads: one more closes the one that has
  waited longest (a flood of half-sent requests cannot keep out a client that sends its request
  at once).
- **Routing**: by the ``Mcp-Session-Id``'s worker index; a request without one (an initialize)
  goes to the worker with the most free session slots. The worker then serves the connection's
  later requests itself (keep-alive); one for another worker's session it hands back here with
  the request it read (:meth:`Front.take_back`), and the front routes it again.
- **Clients that open a session per call**: a worker that sees a session end after at most one
  call tells the others, through the front (``http_sessions.ClientHistory``).
- ``GET /healthz`` is answered here: 200 while every worker runs, 503 otherwise. So are a head
  that cannot be parsed (400), and a request for a worker being restarted (503).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ..logs import logger
from .http_limits import (
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


class Worker(Protocol):
    """Where the front hands connections: a worker process, or this process's own app."""

    index: int

    def free_slots(self) -> int:
        """Session slots this worker has left (its share of ``--max-sessions`` less its sessions)."""
        ...

    def alive(self) -> bool: ...

    def tell(self, message: dict[str, object]) -> None:
        """Pass ``message`` (from another worker, through the front) to this worker."""
        ...

    async def hand_over(self, conn: socket.socket, head: bytes) -> None:
        """Serve ``conn``, whose first bytes (already read) are ``head``; takes ownership of it."""
        ...


@dataclass
class RequestHead:
    method: bytes
    path: bytes
    session_id: str | None = None
    content_length: int = 0


def parse_head(head: bytes) -> RequestHead | None:
    """What the front needs of ``head`` (ending with the blank line); None when malformed."""
    request_line, *header_lines = head[:-4].split(b"\r\n")
    parts = request_line.split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        return None
    parsed = RequestHead(parts[0], parts[1].split(b"?", 1)[0])
    for line in header_lines:
        name, colon, value = line.partition(b":")
        if not colon:
            return None
        key = name.strip().lower()
        if key == b"mcp-session-id":
            parsed.session_id = value.strip().decode("latin-1")
        elif key == b"content-length":
            parsed.content_length = int(value) if value.strip().isdigit() else 0
    return parsed


class Front:
    """Accepts on ``listener`` and hands each connection to one of ``workers`` (see the module)."""

    def __init__(self, listener: socket.socket, workers: Sequence[Worker]) -> None:
        self.listener = listener
        self.workers = list(workers)
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
                    conn, _ = accepting.result()
                except OSError as exc:  # EMFILE and the like: wait a moment, keep serving
                    log.warning("accepting a connection failed: %s", exc)
                    await asyncio.sleep(0.1)
                    continue
                self._admit(conn)
        finally:
            stopping.cancel()
            for task in list(self._pending.values()):
                task.cancel()

    def _admit(self, conn: socket.socket) -> None:
        if len(self._pending) >= MAX_PENDING_CONNECTIONS:
            _, oldest = self._pending.popitem(last=False)
            oldest.cancel()
        conn.setblocking(False)
        if conn.family in (socket.AF_INET, socket.AF_INET6):  # whatever socket an embedder listens on
            with contextlib.suppress(OSError):
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._pending[conn] = asyncio.ensure_future(self._serve_connection(conn))

    async def _serve_connection(self, conn: socket.socket) -> None:
        try:
            try:
                received = await asyncio.wait_for(_read_head(conn), HEADER_READ_TIMEOUT_S)
            finally:
                self._pending.pop(conn, None)
        except (TimeoutError, asyncio.CancelledError, OSError):
            conn.close()
            return
        if received is None:
            conn.close()
            return
        await self.route(conn, *received)

    async def take_back(self, conn: socket.socket, data: bytes) -> None:
        """A connection a worker hands back: ``data`` is its next request, read whole, for
        another worker's session."""
        end = data.find(b"\r\n\r\n")
        parsed = parse_head(data[: end + 4]) if end >= 0 else None
        conn.setblocking(False)
        if parsed is None:
            await _answer(conn, 400, "Bad request.")
            conn.close()
            return
        await self.route(conn, data[: end + 4], data[end + 4 :], parsed)

    async def route(self, conn: socket.socket, head: bytes, rest: bytes, parsed: RequestHead | int) -> None:
        """Answer the request of ``head`` here, or hand the connection to its worker."""
        try:
            if isinstance(parsed, int):
                await _answer(conn, parsed, "The request head is too large." if parsed == 431 else "Bad request.")
            elif parsed.content_length > MAX_BODY_BYTES:
                await _answer(conn, 413, f"The request body is larger than {MAX_BODY_BYTES} bytes.")
            elif parsed.path == HEALTH_PATH.encode() and parsed.method == b"GET":
                await self._health(conn)
            else:
                worker = self._worker_for(parsed)
                if not worker.alive():
                    await _answer(conn, 503, "The worker of this session is restarting; its sessions are lost. Retry.")
                else:
                    await worker.hand_over(conn, head + rest)
                    return  # the worker owns the connection now
        except (asyncio.CancelledError, OSError):
            pass
        conn.close()

    def relay(self, message: dict[str, object], sender: int) -> None:
        """A worker's report that the others must know (a client's one-call session)."""
        for worker in self.workers:
            if worker.index != sender:
                worker.tell(message)

    def _worker_for(self, parsed: RequestHead) -> Worker:
        if parsed.session_id is None:
            return self._for_new_session()
        index, _ = split_session_id(parsed.session_id)
        return self.workers[index] if index is not None and index < len(self.workers) else self.workers[0]

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


async def _read_head(conn: socket.socket) -> tuple[bytes, bytes, RequestHead | int] | None:
    """The request head, the bytes after it, and what it says (an HTTP status when it cannot be
    served); None when the client closed first."""
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
                return buffer, b"", 431
            continue
        head, rest = buffer[: end + 4], buffer[end + 4 :]
        if len(head) > MAX_HEADER_BYTES:
            return head, rest, 431
        parsed = parse_head(head)
        return head, rest, 400 if parsed is None else parsed


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
