"""Who may talk to the MCP server over HTTP: Host and Origin checks, bearer tokens, session owners.

Every request to ``toolsmith-mcp --http`` passes :class:`HttpGuard` before the MCP SDK sees it:

- **Host** must name this server: the bound address, its names (``localhost`` for loopback, the
  machine's host names for a wildcard bind), or one of ``--allowed-host`` /
  ``TOOLSMITH_MCP_ALLOWED_HOSTS``. A page on ``evil.example`` that rebinds its DNS to our address
  sends ``Host: evil.example`` and is refused (403) — on every binding, not only 127.0.0.1.
- **Origin**, when a browser sends one, must name an allowed host too (403 otherwise).
- **Bearer token**: with ``--token`` / ``--token-file`` / ``TOOLSMITH_MCP_TOKEN`` (required with
  ``--allow-remote``) every request carries ``Authorization: Bearer <token>``, compared in
  constant time; without it: 401.
- **Sessions belong to their token**: the token that created an MCP session (the response that
  carried its ``mcp-session-id``) is the only one that may use it (403 for another).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import socket
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

#: Environment variables: extra allowed Host names (comma-separated), and the bearer token(s)
#: (comma-separated: several clients, each with its own token and its own sessions).
ALLOWED_HOSTS_ENV = "TOOLSMITH_MCP_ALLOWED_HOSTS"
TOKEN_ENV = "TOOLSMITH_MCP_TOKEN"
#: A token shorter than this is refused at start-up (guessable).
MIN_TOKEN_CHARS = 16

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Any]]
Send = Callable[[Any], Awaitable[None]]


class GuardConfigError(Exception):
    """A token or host setting that cannot be used; the message says why."""


def read_tokens(flag: str | None, file: str | None, environ: MutableMapping[str, str] | None = None) -> list[str]:
    """The accepted bearer tokens: ``--token``, else ``--token-file``, else the environment."""
    environ = os.environ if environ is None else environ
    if flag:
        raw = flag
    elif file:
        try:
            raw = Path(file).read_text().strip()
        except OSError as exc:
            raise GuardConfigError(f"cannot read the token file {file}: {exc.strerror}") from None
    else:
        raw = environ.get(TOKEN_ENV, "")
    tokens = [t.strip() for t in raw.split(",") if t.strip()]
    short = [t for t in tokens if len(t) < MIN_TOKEN_CHARS]
    if short:
        raise GuardConfigError(f"a bearer token must have at least {MIN_TOKEN_CHARS} characters (use a random one)")
    return tokens


def allowed_hosts(bound: str, extra: Iterable[str] = (), environ: MutableMapping[str, str] | None = None) -> set[str]:
    """Host names this server answers to (lower case, without ports)."""
    environ = os.environ if environ is None else environ
    hosts = {bound.lower().strip("[]")}
    if bound in ("0.0.0.0", "::"):
        hosts |= {socket.gethostname().lower(), socket.getfqdn().lower(), "localhost", "127.0.0.1", "::1"}
    try:
        import ipaddress

        if ipaddress.ip_address(bound.strip("[]")).is_loopback:
            hosts.add("localhost")
    except ValueError:
        pass
    hosts |= {h.strip().lower() for h in extra if h.strip()}
    hosts |= {h.strip().lower() for h in environ.get(ALLOWED_HOSTS_ENV, "").split(",") if h.strip()}
    return hosts


def host_of(value: str) -> str:
    """The host part of a Host header value (``[::1]:8765`` -> ``::1``, ``a.b:80`` -> ``a.b``)."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class HttpGuard:
    """ASGI middleware enforcing the rules in the module docstring in front of ``app``."""

    def __init__(self, app: Any, *, hosts: set[str], tokens: list[str]) -> None:
        self.app = app
        self.hosts = hosts
        self.tokens = [t.encode() for t in tokens]
        #: mcp-session-id -> digest of the token that created it.
        self.owners: dict[str, str] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        host = host_of(headers.get("host", ""))
        if host not in self.hosts:
            await _refuse(send, 403, f"Host '{host}' is not served here (allowed: {', '.join(sorted(self.hosts))}).")
            return
        origin = headers.get("origin")
        if origin is not None and (urlsplit(origin).hostname or "").lower() not in self.hosts:
            await _refuse(send, 403, f"Origin '{origin}' is not allowed.")
            return
        owner = ""
        if self.tokens:
            token = _bearer(headers.get("authorization", ""))
            if token is None or not any(hmac.compare_digest(token, t) for t in self.tokens):
                await _refuse(send, 401, "A bearer token is required (Authorization: Bearer <token>).")
                return
            owner = hashlib.sha256(token).hexdigest()
        session_id = headers.get("mcp-session-id")
        if session_id and self.owners.get(session_id, owner) != owner:
            await _refuse(send, 403, "This MCP session belongs to another token.")
            return
        await self.app(scope, receive, self._recording(send, owner))

    def forget(self, session_id: str) -> None:
        """The session ended: its owner need not be kept."""
        self.owners.pop(session_id, None)

    def _recording(self, send: Send, owner: str) -> Send:
        """``send`` that notes which token a newly created session belongs to."""

        async def wrapped(message: Any) -> None:
            if message.get("type") == "http.response.start":
                for key, value in message.get("headers") or []:
                    if key.lower() == b"mcp-session-id":
                        self.owners.setdefault(value.decode("latin-1"), owner)
            await send(message)

        return wrapped


def _bearer(value: str) -> bytes | None:
    scheme, _, token = value.partition(" ")
    return token.strip().encode() if scheme.lower() == "bearer" and token.strip() else None


async def _refuse(send: Send, status: int, message: str) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": message}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="toolsmith-mcp"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
