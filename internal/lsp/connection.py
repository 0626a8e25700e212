"""One language server process and the JSON-RPC connection pygls keeps with it.

Things pygls leaves to us, each learned the hard way (README, SPEC §4 lsp):
- the server is started here, not by ``start_io``: in its own session (wrapper servers spawn
  node/tsserver children; the whole group is killed), with stderr going straight to a log file
  (a piped stderr nobody reads blocks a chatty server);
- lsprotocol 2025.0.0 cannot decode ``notebookDocumentSync`` in some initialize replies, and an
  undecodable reply never resolves: the converter drops that field, and every request has a timeout;
- ``stop()`` hangs unless shutdown and exit were sent: :meth:`ServerConnection.shutdown` does
  both, with short timeouts, and only for a server that ever answered; a broken one is killed at
  once (:meth:`ServerConnection.kill`).

Liveness is watched here too: anything at all arriving from the server is a sign of life, and a
probe nobody implements gets a reply from any server that still reads its input.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from ..logs import get as get_logger
from ..state import open_private
from .api import LspError
from .servers import ServerConfig, find_executable

#: A real Logger (pygls' reader takes one), with the settings (the CLI's log file) applied.
log = get_logger("toolsmith.lsp")
T = TypeVar("T")

#: The liveness probe: a request no server implements, so any server that reads its input
#: answers at once ("method not found"). A reply, or any other message, means alive.
PROBE_METHOD = "toolsmith/ping"
#: A server that answered before gets this long for shutdown, then this long to exit.
SHUTDOWN_TIMEOUT_S = 1.0

_IDS = itertools.count(1)


def _route_pygls_logging() -> None:
    """pygls logs ("Ignoring notification for unknown method …") under its own logger, which
    without handlers falls through to Python's last-resort stderr printer. Send it to ours."""
    pygls_log = get_logger("pygls")
    if not pygls_log.handlers:
        pygls_log.addHandler(_Forward())
        pygls_log.propagate = False


class _Forward(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        log.handle(record)


def _converter() -> Any:
    """pygls's converter, tolerant of the capability lsprotocol 2025.0.0 cannot structure."""
    from lsprotocol import types
    from pygls.protocol import default_converter

    factory: Any = default_converter  # untyped in pygls
    converter = factory()
    base = converter.get_structure_hook(types.ServerCapabilities)

    def structure(obj: Any, cls: Any) -> Any:
        if isinstance(obj, dict):
            obj = {k: v for k, v in obj.items() if k != "notebookDocumentSync"}
        return base(obj, cls)

    converter.register_structure_hook(types.ServerCapabilities, structure)
    return converter


class _StampedReader:
    """The server's stdout, noting when anything at all last arrived (liveness, not content)."""

    def __init__(self, reader: asyncio.StreamReader, client: ServerConnection) -> None:
        self._reader = reader
        self._client = client

    async def readline(self) -> bytes:
        data = await self._reader.readline()
        if data:
            self._client.last_message = time.monotonic()
        return data

    async def readexactly(self, n: int) -> bytes:
        data = await self._reader.readexactly(n)
        self._client.last_message = time.monotonic()
        return data


class ServerConnection:
    """The process of one server for one (config, root) and the pygls client connected to it:
    replies awaited within a timeout (and never after the server died), the liveness probe, a
    polite shutdown or a kill of the whole process group."""

    def __init__(self, config: ServerConfig, root: Path, log_dir: Path) -> None:
        self.config = config
        self.root = root
        self.log_dir = log_dir
        #: When anything (a reply, a notification, even garbage) last came from the server.
        self.last_message = 0.0
        #: When the outstanding liveness probe was sent (None: none outstanding).
        self.probe_sent: float | None = None
        self.started_at = time.monotonic()
        #: Notified on every publish and when the server exits: what diagnostics waits wake on.
        self._changed = asyncio.Condition()
        self._process: asyncio.subprocess.Process | None = None
        self._client: Any = None
        self._log_file: Any = None
        self._exited = asyncio.Event()
        #: The server answered something once (initialize, a publish): it gets a polite shutdown.
        self._answered = False

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.returncode is None

    @property
    def stopped(self) -> bool:
        """The process exists but is stopped (SIGSTOP, a debugger): it cannot answer."""
        if self._process is None:
            return False
        try:
            with open(f"/proc/{self._process.pid}/stat", "rb") as handle:
                return handle.read().rsplit(b")", 1)[1].split()[0] in (b"T", b"t")
        except (OSError, IndexError):
            return False

    async def _spawn(self, handlers: dict[str, Callable[[Any], Any]]) -> Any:
        """Start the process and connect a pygls client to it (``handlers`` answer the server's
        own requests and notifications); returns the client, not yet initialized."""
        from pygls.io_ import run_async
        from pygls.lsp.client import LanguageClient

        _route_pygls_logging()
        executable = find_executable(self.config.command[0])
        if executable is None:
            raise LspError(f"{self.config.command[0]} is not installed")
        log_fd = open_private(self.log_dir / f"{self.config.name}.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        self._log_file = os.fdopen(log_fd, "ab")
        try:
            self._process = await asyncio.create_subprocess_exec(
                executable, *self.config.command[1:],
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=self._log_file,
                cwd=self.root, start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            raise LspError(f"could not be started ({exc.strerror or exc})") from exc
        client: Any = LanguageClient("toolsmith", "0.1", converter_factory=_converter)
        self._client = client
        for method, handler in handlers.items():
            client.feature(method)(handler)
        assert self._process.stdin is not None and self._process.stdout is not None
        client.protocol.set_writer(self._process.stdin)
        client._async_tasks.append(
            asyncio.ensure_future(
                run_async(
                    stop_event=client._stop_event,
                    reader=_StampedReader(self._process.stdout, self),
                    protocol=client.protocol,
                    logger=log,
                )
            )
        )
        client._async_tasks.append(asyncio.ensure_future(self._watch_exit(self._process)))
        return client

    async def _watch_exit(self, process: asyncio.subprocess.Process) -> None:
        """Wake anyone waiting for diagnostics as soon as the server dies."""
        await process.wait()
        log.info("%s exited with code %s", self.config.name, process.returncode)
        if self._client is not None:  # fail pending requests now rather than at their timeout
            reason = f"exited with code {process.returncode} (its log is in the state directory)"
            for future in list(self._client.protocol._request_futures.values()):
                if not future.done():
                    future.set_exception(RuntimeError(reason))
        self._exited.set()
        async with self._changed:
            self._changed.notify_all()

    async def _request(self, awaitable: Awaitable[T], timeout: float, what: str = "") -> T:
        """Await a reply, but never longer than ``timeout`` and never after the server died."""
        work = asyncio.ensure_future(awaitable)
        work.add_done_callback(lambda f: f.cancelled() or f.exception())  # a late failure is not news
        died = asyncio.ensure_future(self._exited.wait())
        try:
            done, _ = await asyncio.wait({work, died}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            died.cancel()
        if work not in done:
            work.cancel()
            if died in done:
                code = self._process.returncode if self._process else None
                raise LspError(f"exited with code {code} (its log is in the state directory)")
            raise LspError(f"did not answer {what or 'a request'} within {timeout:.0f} s")
        try:
            return work.result()
        except RuntimeError as exc:  # pygls fails pending requests this way when the server exits
            raise LspError(str(exc)) from exc
        except Exception as exc:  # an error reply from the server (JsonRpcException and kin)
            code = getattr(exc, "code", None)
            raise LspError(f"answered with an error: {exc}", code if isinstance(code, int) else None) from exc

    async def call(self, method: str, params: Any, timeout: float) -> Any:
        """Any request, cancelled with ``$/cancelRequest`` when it runs out: a slow answer is
        not a dead server, and the server should stop working on a question nobody waits for."""
        msg_id = f"toolsmith-{next(_IDS)}"
        try:
            return await self._request(
                self._client.protocol.send_request_async(method, params, msg_id=msg_id), timeout, method
            )
        except (LspError, asyncio.CancelledError):  # ran out, or nobody waits for it any more
            self._cancel_request(msg_id)
            raise

    def _cancel_request(self, msg_id: str) -> None:
        if self.alive and msg_id in self._client.protocol._request_futures:
            self._client.protocol._request_futures.pop(msg_id, None)
            with contextlib.suppress(Exception):
                from lsprotocol import types  # pygls serialises by the method's declared type

                self._client.protocol.notify("$/cancelRequest", types.CancelParams(id=msg_id))

    # --- liveness -----------------------------------------------------------------------------

    def probe(self) -> None:
        """Send a liveness probe unless one is outstanding; its reply (or any message) is the
        sign of life :meth:`hung` looks for."""
        if self._client is None or self.probe_sent is not None or not self.alive:
            return
        sent = time.monotonic()
        self.probe_sent = sent
        future = self._client.protocol.send_request_async(PROBE_METHOD, None)

        def answered(reply: Any) -> None:
            if not reply.cancelled():
                reply.exception()  # "method not found" is the expected answer: retrieved, not logged
            if self.probe_sent == sent:
                self.probe_sent = None

        future.add_done_callback(answered)

    def hung(self, after_s: float) -> bool:
        """Nothing at all from the server for ``after_s`` since a probe was sent: it reads no input
        and writes no output. A busy server (progress, publishes, the probe's reply) never is."""
        sent = self.probe_sent
        return sent is not None and self.last_message < sent and time.monotonic() - sent >= after_s

    # --- lifecycle ------------------------------------------------------------------------------

    async def shutdown(self) -> None:
        """A polite shutdown for a server that answers; an immediate kill for any other."""
        process, client = self._process, self._client
        if process is None:
            return
        if process.returncode is None and client is not None and self._answered and not self.stopped:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.shutdown_async(None), SHUTDOWN_TIMEOUT_S)
                client.exit(None)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), SHUTDOWN_TIMEOUT_S)
        await self.kill()

    async def kill(self) -> None:
        """Kill the whole process group now (wrapper servers leave node/tsserver children)."""
        process, client = self._process, self._client
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), SHUTDOWN_TIMEOUT_S)
        # Closed now, while the loop runs: a killed process not reaped yet (a loaded machine) would
        # otherwise close its pipes when collected, after the loop is gone ("Event loop is closed").
        transport = getattr(process, "_transport", None)
        if transport is not None:
            transport.close()
        if client is not None:
            client._stop_event.set()
            for task in client._async_tasks:
                task.cancel()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        self._process = None
