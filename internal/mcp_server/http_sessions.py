"""A worker's side of ``toolsmith-mcp --http``: what surrounds the SDK's app for every request.

- The Host/token guard (``http_guard``) comes first, so no one without the token gets a body
  read; then ``http_routing.WorkerSessionIds``.
- :class:`RequestLimits`: the body within ``BODY_READ_TIMEOUT_S`` of the head (408 otherwise) and
  at most ``MAX_BODY_BYTES`` (413); a :class:`ClientWatch` in the request's scope, fired when the
  client goes away (closes the connection, times out) before the response is complete, so the
  call it asked for is cancelled (:func:`cancel_when_client_leaves`).
- :class:`SessionGate`: every MCP session the SDK opens counts
  against this worker's share of ``--max-sessions``, used or not — a request that would open one
  more is answered 503, saying why; a session with no request in flight is closed after
  ``--session-idle`` (sooner, ``ONE_SHOT_IDLE_S``, when it made at most one call), its toolsmith
  session with it; a client's DELETE closes both at once.
- :class:`ClientHistory`: per client (bearer token and address, ``http_limits.client_identity``),
  when its sessions ended after at most one call. A session keeps the count of its client's at
  its opening, so the server can tell the model why a file it read "earlier" is unknown
  (``server.per_call_note``). A worker that sees such a session end tells the others through the
  front (``on_one_call``; ``http_front.Front.relay``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..logs import logger
from .http_limits import BODY_READ_TIMEOUT_S, MAX_BODY_BYTES, client_identity

log = logger("toolsmith")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Any]]
Send = Callable[[Any], Awaitable[None]]

#: The scope key of a request's :class:`ClientWatch`.
CLIENT_WATCH_KEY = "toolsmith.client_watch"
#: Idle sessions are looked for this often (or four times per idle limit, when shorter).
REAP_INTERVAL_S = 60.0
#: Clients' sessions of at most one call are counted over this window, at most this many per
#: client (the note says "at least N"), for at most this many clients (the least recently seen
#: are forgotten first).
PER_CALL_WINDOW_S = 10 * 60
MAX_COUNTED_PER_CLIENT = 8
MAX_CLIENTS = 1024


class ClientWatch:
    """Callbacks to run once when the client of a request goes away before its response ended."""

    def __init__(self) -> None:
        self.gone = False
        self._callbacks: list[Callable[[], None]] = []

    def fire(self) -> None:
        if not self.gone:
            self.gone = True
            callbacks, self._callbacks = self._callbacks, []
            for callback in callbacks:
                callback()

    @contextlib.contextmanager
    def subscribed(self, callback: Callable[[], None]) -> Iterator[None]:
        if self.gone:
            callback()
        self._callbacks.append(callback)
        try:
            yield
        finally:
            with contextlib.suppress(ValueError):
                self._callbacks.remove(callback)


@contextlib.contextmanager
def cancel_when_client_leaves(request: Any, cancel: Callable[[], None]) -> Iterator[None]:
    """Over HTTP, ``cancel`` runs when the client of ``request`` (the SDK's request context, a
    Starlette request) closes its connection or times out before the call's result is sent."""
    scope = getattr(request, "scope", None)
    watch = scope.get(CLIENT_WATCH_KEY) if isinstance(scope, dict) else None
    if not isinstance(watch, ClientWatch):
        yield
        return
    with watch.subscribed(cancel):
        yield


class RequestLimits:
    """ASGI middleware: body deadline and size, and the client watch."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        try:
            body = await asyncio.wait_for(read_body(receive), BODY_READ_TIMEOUT_S)
        except TimeoutError:
            await respond(send, 408, f"The request body did not arrive within {BODY_READ_TIMEOUT_S:g} s.")
            return
        if body is None:
            return  # the client left before sending its request
        if len(body) > MAX_BODY_BYTES:
            await respond(send, 413, f"The request body is larger than {MAX_BODY_BYTES} bytes.")
            return
        watch = scope[CLIENT_WATCH_KEY] = ClientWatch()
        delivered = False
        finished = False

        async def replay() -> Any:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            message = await receive()
            if message.get("type") == "http.disconnect" and not finished:
                watch.fire()
            return message

        async def noting_the_end(message: Any) -> None:
            nonlocal finished
            if message.get("type") == "http.response.body" and not message.get("more_body", False):
                finished = True
            await send(message)

        try:
            await self.app(scope, replay, noting_the_end)
        finally:
            if not finished:
                watch.fire()  # the response never completed: the client cannot get the result


async def read_body(receive: Receive) -> bytes | None:
    """The whole body (at most MAX_BODY_BYTES + 1 bytes of it); None when the client left."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message.get("type") == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_BODY_BYTES or not message.get("more_body", False):
            return b"".join(chunks)


async def respond(send: Send, status: int, message: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    """A JSON-RPC error (id null) as a complete response."""
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": message}}).encode()
    start = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *(headers or [])]
    await send({"type": "http.response.start", "status": status, "headers": start})
    await send({"type": "http.response.body", "body": body})


@dataclass
class ClientHistory:
    """Per client, when its sessions that made at most one call ended (bounded)."""

    one_call: OrderedDict[str, deque[float]] = field(default_factory=OrderedDict)

    def one_call_session(self, client: str) -> None:
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


class SessionHolder(Protocol):
    """What the gate needs of the server (server.ToolsmithServer): its idle limits, where the
    SDK's app serves, and the toolsmith sessions' calls, closed with their MCP sessions."""

    session_idle_s: float
    one_shot_idle_s: float
    http_path: str

    def calls_of(self, key: str) -> int: ...

    def idle_limit_s(self, calls: int) -> float: ...

    async def drop_session(self, key: str) -> None: ...


@dataclass
class HttpSession:
    #: Who opened it (``client_identity``), and how many sessions of theirs had ended after at
    #: most one call when it opened (server.per_call_note).
    client: str = ""
    one_call_sessions: int = 0
    last_active: float = field(default_factory=time.monotonic)
    #: Requests of this session being served, its event stream (GET) aside: a client that keeps
    #: the stream open but makes no call is idle.
    in_flight: int = 0


class SessionGate:
    """ASGI middleware in front of the SDK's app: the worker's sessions (see the module)."""

    def __init__(
        self,
        app: Any,
        server: SessionHolder,
        *,
        share: int,
        total: int,
        on_closed: list[Callable[[str], None]] | None = None,
        on_change: Callable[[int], None] | None = None,
        on_one_call: Callable[[str], None] | None = None,
    ) -> None:
        self.app = app
        self.server = server
        #: This worker's session slots, and ``--max-sessions`` (all workers') for messages.
        self.share = share
        self.total = total
        self.sessions: dict[str, HttpSession] = {}
        self.opening = 0
        self.on_closed = on_closed or []
        self.on_change = on_change
        self.on_one_call = on_one_call
        self.history = ClientHistory()

    def free_slots(self) -> int:
        return self.share - len(self.sessions) - self.opening

    def one_call_sessions(self, session_id: str) -> int:
        """How many one-call sessions the client of ``session_id`` had ended when it opened it."""
        entry = self.sessions.get(session_id)
        return 0 if entry is None else entry.one_call_sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        session_id = next((v.decode("latin-1") for k, v in scope.get("headers") or [] if k == b"mcp-session-id"), None)
        if session_id is None:
            await self._open(scope, receive, send)
        else:
            await self._serve(session_id, scope, receive, send)

    async def _open(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.free_slots() <= 0:
            await respond(send, 503, self.refusal(), [(b"retry-after", b"10")])
            return
        self.opening += 1
        created: list[str] = []

        async def noting(message: Any) -> None:
            if message.get("type") == "http.response.start" and message.get("status", 500) < 400:
                created.extend(v.decode("latin-1") for k, v in message.get("headers") or [] if k == b"mcp-session-id")
            await send(message)

        try:
            await self.app(scope, receive, noting)
        finally:
            self.opening -= 1
            if created:
                headers = dict(scope.get("headers") or [])
                client = client_identity(headers.get(b"authorization", b"").strip(), scope.get("client"))
                for session_id in created:
                    self.sessions.setdefault(session_id, HttpSession(client, self.history.recent(client)))
            self._changed()

    async def _serve(self, session_id: str, scope: Scope, receive: Receive, send: Send) -> None:
        entry = self.sessions.get(session_id)
        method = scope.get("method")
        if method == "DELETE" and entry is not None and self.server.calls_of(session_id) <= 1:
            # Noted before the DELETE is answered: the client's next session may come at once.
            self.history.one_call_session(entry.client)
            if self.on_one_call is not None:
                self.on_one_call(entry.client)
        counted = entry is not None and method != "GET"
        if entry is not None and counted:
            entry.in_flight += 1
            entry.last_active = time.monotonic()
        status = 0

        async def noting(message: Any) -> None:
            nonlocal status
            if message.get("type") == "http.response.start":
                status = message.get("status", 0)
            await send(message)

        try:
            await self.app(scope, receive, noting)
        finally:
            if entry is not None and counted:
                entry.in_flight -= 1
                entry.last_active = time.monotonic()
        if method == "DELETE" or status == 404:  # deleted, or gone from the SDK already
            await self._closed(session_id)

    async def _closed(self, session_id: str) -> None:
        entry = self.sessions.pop(session_id, None)
        if entry is None:
            return
        for forget in self.on_closed:
            forget(session_id)
        await self.server.drop_session(session_id)
        self._changed()

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change(len(self.sessions))

    def refusal(self) -> str:
        one_shot = min(self.server.session_idle_s, self.server.one_shot_idle_s)
        return (
            f"This server has reached its limit of {self.total} open MCP sessions (--max-sessions {self.total}); a "
            "session counts from its initialize, whether or not it made a call. Close sessions you no longer use "
            f"(an MCP client's DELETE), or retry later: a session that made at most one call is closed after "
            f"{one_shot:.0f} s without one, others after {self.server.session_idle_s:.0f} s."
        )

    # --- idle sessions ------------------------------------------------------------------------

    def idle_limit_s(self, session_id: str) -> float:
        return self.server.idle_limit_s(self.server.calls_of(session_id))

    async def reap_once(self) -> None:
        now = time.monotonic()
        for session_id, entry in list(self.sessions.items()):
            if entry.in_flight == 0 and now - entry.last_active > self.idle_limit_s(session_id):
                log.info("closing MCP session %s: idle for %.0f s", session_id, now - entry.last_active)
                await self.close(session_id)

    async def reap(self) -> None:
        """Close idle sessions, every REAP_INTERVAL_S (sooner for a short idle limit), until cancelled."""
        interval = min(REAP_INTERVAL_S, min(self.server.session_idle_s, self.server.one_shot_idle_s) / 4)
        while True:
            await asyncio.sleep(interval)
            await self.reap_once()

    async def close(self, session_id: str) -> None:
        """Close a session as its client's DELETE would: the SDK's transport (an open event stream
        ends) and the toolsmith session."""
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "DELETE", "scheme": "http",
            "path": self.server.http_path, "raw_path": self.server.http_path.encode(), "root_path": "",
            "query_string": b"", "headers": [(b"mcp-session-id", session_id.encode("latin-1"))],
            "client": None, "server": None, "state": {},
        }  # fmt: skip
        delivered = False

        async def receive() -> Any:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": b"", "more_body": False}
            return {"type": "http.disconnect"}

        async def discard(message: Any) -> None:
            pass

        try:
            await self(scope, receive, discard)
        finally:
            await self._closed(session_id)  # whatever the SDK answered, the session is gone here
