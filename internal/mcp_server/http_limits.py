"""The limits of ``toolsmith-mcp --http``, in one place (docs/mcp.md and docs/security.md list
them), and the form of the session ids the front routes by."""

from __future__ import annotations

#: An HTTP session with no request for this long is closed (its shells and language servers
#: too); ``--session-idle`` sets it. A session with a request being served is never closed.
SESSION_IDLE_S = 10 * 60
#: A session that made at most one call (a one-shot client that never sends DELETE) is closed
#: after this long without a request, when that is sooner than the session idle time.
ONE_SHOT_IDLE_S = 2 * 60
#: At most this many MCP sessions at once over HTTP (``--max-sessions``), counted from their
#: initialize whether or not they make a call (http_sessions.SessionGate): each may hold a shell
#: state and language servers. A request that would open one more is refused, saying why.
MAX_SESSIONS = 64
#: A connection whose request head (request line and headers) has not all arrived this long
#: after it was accepted is closed (the front, ``http_front``).
HEADER_READ_TIMEOUT_S = 10.0
#: A request whose body has not all arrived this long after its head is answered 408 and its
#: connection closed (the worker, ``http_sessions``).
BODY_READ_TIMEOUT_S = 20.0
#: A request head larger than this is refused with 431.
MAX_HEADER_BYTES = 64 * 1024
#: A request body larger than this is refused with 413 (the SDK's own check, at this size).
MAX_BODY_BYTES = 4 * 1024 * 1024
#: At most this many connections wait for their request heads at once; one more closes the one
#: that has waited longest.
MAX_PENDING_CONNECTIONS = 256
#: Each worker serves at most this many connections at once (open event streams included);
#: past it, a request is answered 503.
MAX_WORKER_CONNECTIONS = 1000
#: ``--workers`` by default: one per core, at most this many (each worker is a Python process
#: with the tools loaded, ~60 MB).
MAX_DEFAULT_WORKERS = 8

#: The health endpoint (GET), answered by the front without Host or token checks: it says only
#: whether the workers run.
HEALTH_PATH = "/healthz"


def external_session_id(index: int, session_id: str) -> str:
    """The session id a client sees: the SDK's id prefixed by the index of the worker holding it."""
    return f"{index}-{session_id}"


def split_session_id(external: str) -> tuple[int | None, str]:
    """(worker index, the SDK's id) of a client's session id; (None, it) when it is not ours."""
    index, dash, inner = external.partition("-")
    if not dash or not index.isdigit() or len(index) > 4 or not inner:
        return None, external
    return int(index), inner


def client_identity(authorization: bytes, peer: object) -> str:
    """Who a request comes from, as far as the server can tell: its ``Authorization`` header (the
    bearer token) and address."""
    import hashlib

    host = peer[0] if isinstance(peer, (tuple, list)) and peer else ""
    token = hashlib.sha256(authorization).hexdigest()[:16] if authorization else ""
    return f"{token}@{host}"
