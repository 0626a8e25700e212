"""tools/call over stdio without the SDK's dispatch, for the calls agents make most.

The SDK's server turns each line into a typed envelope, validates it for its protocol version,
runs it as a task through its middleware and dispatcher, and serializes the typed result back:
~0.35 ms of every call, more than a view of a small file takes itself (bench/peers.py). A
``tools/call`` that needs none of what the SDK adds is answered here, from the line, before the
SDK reads it; everything else reaches the SDK untouched. A call takes this lane when:

- it is well formed as the SDK sees it: the line parsed by the SDK's JSON parser (a lone
  surrogate escape, a byte-order mark or nesting past its limit are not JSON to it), JSON-RPC
  2.0, an integer or string ``id`` not already running here, ``params`` with a string ``name``
  and an object of ``arguments`` (or none), and the SDK's own checks of a request of that
  version passed (the envelope's required keys, the params' shape): any other line gets the
  SDK's answer, its error;
- it names its protocol version in ``_meta`` and that version has no handshake
  (:data:`VERSIONS`: 2026-07-28, the SDK client's default), on a connection of that era (one
  opened with ``initialize`` refuses enveloped requests): the result is written as the SDK
  writes it for that version (the wire result, ``resultType``, the ``serverInfo`` stamp);
  handshake-era clients keep the SDK's way;
- it carries no progress token (progress notifications are the SDK's), and no cache hint is set
  for tools/call;
- it names a tool of :data:`TOOLS` as the built-in tool itself (the default profile): file tools
  that never ask the client anything;
- the session exists (its first call, which asks the client for its roots, is the SDK's).

A ``notifications/cancelled`` for a call of this lane cancels it, and no response is sent, as
the SDK does; ids are matched as the SDK matches them (5 and "5" are one id), and when the SDK
takes a second call under the id of a running one, a cancel of that id is the SDK's (it stops the
newest). When input ends, the calls still running are cancelled and each is answered with the
SDK's "Connection closed" error, before stdout closes. tests/integration/test_mcp_stdio_fast.py
and test_mcp_stdio_fast_parity.py compare each answer with the SDK's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import TYPE_CHECKING, Any

from ..logs import logger
from .convert import call_result_wire
from .sdk import types

if TYPE_CHECKING:
    from ..llm.tools.contract import ToolResponse
    from .server import ToolsmithServer
    from .stdio_streams import MessageWriter

log = logger("toolsmith")

#: Protocol versions whose requests name their version, and whose results this lane shapes.
VERSIONS = frozenset({"2026-07-28"})
#: The tools this lane serves: none of them asks the client anything (no question, no
#: elicitation, no progress without a token).
TOOLS = frozenset({"view", "read_many", "ls", "glob", "grep", "outline", "edit", "multiedit", "write", "patch"})
#: How long the lane's running calls get to end when serving ends.
CLOSE_TIMEOUT_S = 5.0
_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
#: The error the SDK answers a call with when input ends while it runs (jsonrpc_dispatcher).
_CONNECTION_CLOSED = {"code": types.CONNECTION_CLOSED, "message": "Connection closed"}


class FastLane:
    """The lane of one stdio server: :meth:`take` is offered every line read from stdin."""

    def __init__(self, server: ToolsmithServer, writer: MessageWriter) -> None:
        self._server = server
        self._writer = writer
        #: The calls a cancel may reach, by the id the SDK would match them by.
        self._running: dict[int | str, asyncio.Task[None]] = {}
        #: Every call not yet ended (cancelled ones too), for close() to wait for.
        self._tasks: set[asyncio.Task[None]] = set()
        #: Ids whose call close() cancelled: each is answered "Connection closed".
        self._closing: set[int | str] = set()

    def take(self, line: bytes) -> bool:
        """Serve ``line`` here (True) or leave it to the SDK (False)."""
        if b'"tools/call"' in line:
            call = self._call_of(line)
            if call is None:
                return False
            request_id, name, arguments, version = call
            key = _key(request_id)
            task = asyncio.ensure_future(self._answer(request_id, key, name, arguments, version))
            self._running[key] = task
            self._tasks.add(task)
            task.add_done_callback(lambda done: self._ended(key, done))
            return True
        if b'"notifications/cancelled"' in line and self._running:
            return self._cancelled(line)
        return False

    def _ended(self, key: int | str, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if self._running.get(key) is task:  # not a newer call that took the id since
            del self._running[key]

    def _call_of(self, line: bytes) -> tuple[int | str, str, dict[str, Any], str] | None:
        message = _parsed(line)
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or message.get("method") != "tools/call":
            return None
        request_id, params = message.get("id"), message.get("params")
        if isinstance(request_id, bool) or not isinstance(request_id, int | str):
            return None
        if _key(request_id) in self._running:
            # The SDK takes this one, and keeps the newest call under an id: a cancel of the id is its.
            del self._running[_key(request_id)]
            return None
        if not isinstance(params, dict) or not isinstance(params.get("name"), str):
            return None
        arguments, meta = params.get("arguments", {}), params.get("_meta", {})
        if not isinstance(arguments, dict) or not isinstance(meta, dict) or "progressToken" in meta:
            return None
        version = meta.get(_VERSION_KEY)
        if version not in VERSIONS or not self._server.has_modern_stdio_session() or not self._serves(params["name"]):
            return None
        if not _valid_for_the_sdk(message, version):
            return None
        return request_id, params["name"], arguments, version

    def _serves(self, name: str) -> bool:
        from ..llm.tools.builtins import get_tool

        server = self._server
        if name not in TOOLS or server.server.cache_hints.get("tools/call") is not None:
            return False
        try:
            return server.registry.get(name) is get_tool(name)
        except KeyError:
            return False

    async def _answer(
        self, request_id: int | str, key: int | str, name: str, arguments: dict[str, Any], version: str
    ) -> None:
        try:
            response = await self._server.call_without_dispatch(name, arguments)
        except asyncio.CancelledError:
            if key in self._closing:  # the end of input, not the client's cancel: answered, as the SDK does
                await self._write({"jsonrpc": "2.0", "id": request_id, "error": _CONNECTION_CLOSED})
            raise
        if response is None:  # the session was closed meanwhile (the server is ending)
            from ..errors import InternalError
            from ..llm.tools.runner import error_response

            response = error_response(InternalError("The MCP session was closed while the call was starting."))
        await self._write({"jsonrpc": "2.0", "id": request_id, "result": self._shaped(response)})

    def _shaped(self, response: ToolResponse) -> dict[str, Any]:
        """``response`` as the SDK writes a tools/call result for the lane's versions: the wire
        result (convert.call_result_wire, the SDK's own shape once its model dumps it), with
        ``resultType`` and the ``serverInfo`` stamp (runner._serialize)."""
        result = call_result_wire(response)
        result["resultType"] = "complete"
        result["_meta"][types.SERVER_INFO_META_KEY] = self._server.server.server_info_stamp
        return result

    async def _write(self, message: dict[str, Any]) -> None:
        from pydantic_core import PydanticSerializationError, to_json  # the SDK's own JSON writer

        try:
            data = to_json(message)
        except PydanticSerializationError:  # a lone surrogate (an undecodable name): escaped, still valid JSON
            data = json.dumps(message, separators=(",", ":")).encode("ascii")
        self._writer.write_encoded(data + b"\n")
        await self._writer.flush()

    def _cancelled(self, line: bytes) -> bool:
        message = _parsed(line)
        params = message.get("params") if isinstance(message, dict) else None
        request_id = params.get("requestId") if isinstance(params, dict) else None
        if isinstance(request_id, bool) or not isinstance(request_id, int | str):
            return False
        if message.get("method") != "notifications/cancelled":
            return False
        task = self._running.pop(_key(request_id), None)
        if task is None:
            return False
        task.cancel()  # no response is sent for it
        return True

    async def close(self) -> None:
        """At the end of input: cancel the calls still running, answer each "Connection closed"
        (the SDK's answer to its own calls then), and wait (bounded) for all to end. Called
        while stdout is still open."""
        for key, task in list(self._running.items()):
            self._closing.add(key)
            task.cancel()
        self._running.clear()
        if self._tasks:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.gather(*self._tasks, return_exceptions=True), CLOSE_TIMEOUT_S)


def _key(request_id: int | str) -> int | str:
    """The id as the SDK's dispatcher matches ids: "5" and 5 are one."""
    from mcp.shared.dispatcher import coerce_request_id

    return coerce_request_id(request_id)


def _parsed(line: bytes) -> Any:
    """``line`` as the SDK's stdio reader parses it (decoded with bad bytes replaced, then its JSON
    parser, which refuses what Python's accepts beyond JSON: lone surrogates, a byte-order mark,
    deep nesting); None when that is not JSON."""
    from pydantic_core import from_json

    try:
        return from_json(line.decode("utf-8", errors="replace"))
    except ValueError:
        return None


def _valid_for_the_sdk(message: dict[str, Any], version: str) -> bool:
    """The SDK's own checks of a request of ``version`` (the envelope's required keys, then the
    params' shape for that version) pass: else its error answers the request."""
    from mcp.shared.inbound import InboundLadderRejection, classify_inbound_request
    from mcp_types.methods import validate_client_request
    from pydantic import ValidationError

    if isinstance(classify_inbound_request(message), InboundLadderRejection):
        return False
    try:
        validate_client_request("tools/call", version, message["params"])
    except (ValidationError, KeyError):
        return False
    return True
