"""The workers behind the front of ``toolsmith-mcp --http`` (``http_front``).

- :class:`AppWorker` serves the MCP app (the SDK's, behind ``HttpGuard``, ``WorkerSessionIds``,
  ``RequestLimits`` and ``SessionGate``) under uvicorn in this process; the front hands it
  connections whose request head it already read (``hand_over``), and it serves their later
  requests too, under the same head deadline. ``--workers 1`` and ``serve_http`` (embedding)
  use one.
- :class:`ProcessWorker` is the front's end of a worker process: it starts it, passes it each
  connection (the descriptor and the head) over a Unix socket pair, hears how many sessions it
  holds, which clients' sessions ended after one call (passed on to the other workers), and which
  connections it hands back; and starts it again if it dies (its sessions are lost: their clients get 404 and open
  new ones). The process (``cli.worker_main``) is an :class:`AppWorker` fed from that socket
  (:func:`read_spec`, :func:`serve_from_front`).

Each worker has its own toolsmith sessions, shells, language servers and interpreter: tool work
of sessions on different workers runs on different cores.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import signal
import socket
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..bootstrap import entry_argv
from ..logs import logger
from .http_limits import HEADER_READ_TIMEOUT_S, MAX_HEADER_BYTES, MAX_WORKER_CONNECTIONS
from .http_routing import HandBack

if TYPE_CHECKING:
    from .http_front import Front
    from .http_sessions import SessionGate
    from .server import ToolsmithServer

log = logger("toolsmith")

#: On shutdown, open HTTP streams get this long to finish before they are closed.
SHUTDOWN_GRACE_S = 3
#: A worker process gets this long to close its sessions after the front asks it to stop
#: (graceful HTTP shutdown, then each session's close); then it is killed.
WORKER_STOP_TIMEOUT_S = 15.0
#: A worker process that died is started again after this pause.
RESPAWN_DELAY_S = 1.0
#: The largest message on a worker's socket: a request head and the bytes read with it.
MAX_MESSAGE_BYTES = 4 * MAX_HEADER_BYTES
#: Socket buffer of a worker's socket pair: room for several heads in flight.
SOCKET_BUFFER_BYTES = 1024 * 1024
#: Message kinds on a worker's socket (the first byte).
CONNECTION, CONTROL = b"C", b"J"
#: linux/prctl.h: the signal this process gets when its parent dies.
PR_SET_PDEATHSIG = 1


class AppWorker:
    """The MCP app of ``server`` under uvicorn, fed connections by :meth:`hand_over`."""

    def __init__(
        self, server: ToolsmithServer, app: Any, *, index: int, gate: SessionGate, hand_back: HandBack
    ) -> None:
        import uvicorn

        self.index = index
        self.server = server
        self.gate = gate
        self.hand_back = hand_back
        self._protocol_factory: Callable[[], asyncio.Protocol] | None = None

        class Uvicorn(uvicorn.Server):
            ready = asyncio.Event()

            @contextlib.contextmanager
            def capture_signals(self) -> Any:
                yield  # signals are the caller's: it stops the worker, which shuts down gracefully

            async def startup(self, sockets: list[socket.socket] | None = None) -> None:
                await super().startup(sockets=sockets)
                self.ready.set()

        config = uvicorn.Config(
            app, log_level="warning", lifespan="on", access_log=False, timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
            limit_concurrency=MAX_WORKER_CONNECTIONS,
        )  # fmt: skip
        self.http = Uvicorn(config)
        self._serving: asyncio.Future[None] | None = None
        self._reaper: asyncio.Future[None] | None = None

    async def start(self) -> None:
        # No listening socket: connections come from the front.
        self._serving = asyncio.ensure_future(self.http.serve(sockets=[]))
        ready = asyncio.ensure_future(self.http.ready.wait())
        await asyncio.wait({self._serving, ready}, return_when=asyncio.FIRST_COMPLETED)
        if not ready.done():
            ready.cancel()
            raise RuntimeError("the MCP app did not start")
        self._reaper = asyncio.ensure_future(self.gate.reap())

    def alive(self) -> bool:
        return self._serving is not None and not self._serving.done()

    def free_slots(self) -> int:
        return int(self.gate.free_slots())

    def tell(self, message: dict[str, Any]) -> None:
        """Another worker's report: a session of ``message["one_call"]`` (a client) ended after
        at most one call."""
        if isinstance(message.get("one_call"), str):
            self.gate.history.one_call_session(message["one_call"])

    async def hand_over(self, conn: socket.socket, head: bytes) -> None:
        """Serve ``conn`` as if uvicorn had accepted it and read ``head`` from it."""
        loop = asyncio.get_running_loop()
        try:
            _, protocol = await loop.connect_accepted_socket(self._protocols(), conn)
        except OSError:
            conn.close()
            return
        self.hand_back.served(getattr(protocol, "client", None), protocol)
        protocol.data_received(head)

    def _protocols(self) -> Callable[[], asyncio.Protocol]:
        """What uvicorn's own listener builds for each accepted connection (Server.startup), and
        that keeps the front's head deadline for the requests after the first (keep-alive: the
        front never sees them), and forgets its connection in :attr:`hand_back` when it closes."""
        if self._protocol_factory is None:
            config = self.http.config
            hand_back = self.hand_back
            base: Any = config.http_protocol_class

            class Tracked(base):  # type: ignore[misc]
                between_requests = False
                head_deadline: asyncio.TimerHandle | None = None

                def data_received(self, data: bytes) -> None:
                    if self.between_requests and self.head_deadline is None:
                        self.head_deadline = self.loop.call_later(HEADER_READ_TIMEOUT_S, self.transport.close)
                    self.between_requests = False
                    super().data_received(data)

                def on_response_complete(self) -> None:
                    self.between_requests = True
                    super().on_response_complete()

                def head_arrived(self) -> None:
                    if self.head_deadline is not None:
                        self.head_deadline.cancel()
                        self.head_deadline = None

                def connection_lost(self, exc: Exception | None) -> None:
                    self.head_arrived()
                    hand_back.closed(self.client, self)
                    super().connection_lost(exc)

            self._protocol_factory = functools.partial(
                Tracked, config=config, server_state=self.http.server_state, app_state=self.http.lifespan.state
            )
        return self._protocol_factory

    async def stop(self) -> None:
        """Stop serving (open streams get SHUTDOWN_GRACE_S), then close every session."""
        self.http.should_exit = True
        if self._reaper is not None:
            self._reaper.cancel()
        try:
            if self._serving is not None:
                with contextlib.suppress(Exception, SystemExit):
                    await self._serving
        finally:
            await self.server.close()


class ProcessWorker:
    """The front's end of one worker process (see the module)."""

    def __init__(self, index: int, spec: dict[str, Any], share: int) -> None:
        self.index = index
        self.spec = {**spec, "index": index, "share": share, "front_pid": os.getpid()}
        self.share = share
        self.open = 0
        self.process: asyncio.subprocess.Process | None = None
        self.sock: socket.socket | None = None
        #: Where reports of one-call sessions and handed-back connections go (set by the front's owner).
        self.front: Front | None = None
        self._taken_back: set[asyncio.Future[None]] = set()
        self._stopping = False
        self._watcher: asyncio.Future[None] | None = None

    async def start(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        for end in (ours, theirs):
            end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SOCKET_BUFFER_BYTES)
            end.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SOCKET_BUFFER_BYTES)
        try:
            self.process = await asyncio.create_subprocess_exec(
                *entry_argv("mcp_server.cli", "worker_main", str(theirs.fileno())),
                stdin=asyncio.subprocess.DEVNULL, pass_fds=(theirs.fileno(),),
            )  # fmt: skip
        finally:
            theirs.close()
        ours.sendall(CONTROL + json.dumps(self.spec).encode())
        ours.setblocking(False)
        self.sock = ours
        self.open = 0
        asyncio.get_running_loop().add_reader(ours.fileno(), self._on_message)
        self._watcher = asyncio.ensure_future(self._watch(self.process, ours))

    def alive(self) -> bool:
        return self.process is not None and self.process.returncode is None

    def free_slots(self) -> int:
        return self.share - self.open

    def tell(self, message: dict[str, Any]) -> None:
        if self.sock is not None and self.alive():
            with contextlib.suppress(OSError):  # behind or gone: a count is missed, nothing more
                self.sock.send(CONTROL + json.dumps(message).encode())

    async def hand_over(self, conn: socket.socket, head: bytes) -> None:
        try:
            if self.sock is None or not self.alive():
                return
            message = CONNECTION + head[: MAX_MESSAGE_BYTES - 1]
            loop = asyncio.get_running_loop()
            while True:
                try:
                    socket.send_fds(self.sock, [message], [conn.fileno()])
                    return
                except BlockingIOError:  # the worker is behind: wait until its socket has room
                    writable = loop.create_future()
                    loop.add_writer(self.sock.fileno(), writable.set_result, None)
                    try:
                        await writable
                    finally:
                        loop.remove_writer(self.sock.fileno())
        finally:
            conn.close()  # the worker holds its own descriptor of the connection now

    def _on_message(self) -> None:
        """A report (``{"open": n}``, ``{"one_call": client}``), or a connection handed back."""
        assert self.sock is not None
        while True:
            try:
                data, fds, _, _ = socket.recv_fds(self.sock, MAX_MESSAGE_BYTES, 1)
            except BlockingIOError:
                return
            except OSError:
                data, fds = b"", []
            if not data and not fds:
                asyncio.get_running_loop().remove_reader(self.sock.fileno())
                return
            if fds:
                conn = socket.socket(fileno=fds[0])
                if self.front is None:
                    conn.close()
                else:
                    task = asyncio.ensure_future(self.front.take_back(conn, data[1:]))
                    self._taken_back.add(task)
                    task.add_done_callback(self._taken_back.discard)
                continue
            with contextlib.suppress(ValueError):
                report = json.loads(data[1:])
                if "open" in report:
                    self.open = int(report["open"])
                if "one_call" in report and self.front is not None:
                    self.front.relay(report, self.index)

    async def _watch(self, process: asyncio.subprocess.Process, sock: socket.socket) -> None:
        code = await process.wait()
        with contextlib.suppress(ValueError, OSError):
            asyncio.get_running_loop().remove_reader(sock.fileno())
        sock.close()
        if self._stopping:
            return
        log.warning("MCP worker %d exited (%s); starting it again (its sessions are lost)", self.index, code)
        await asyncio.sleep(RESPAWN_DELAY_S)
        if not self._stopping:
            await self.start()

    async def stop(self) -> None:
        self._stopping = True
        process = self.process
        if process is None or process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), WORKER_STOP_TIMEOUT_S)
        except TimeoutError:
            log.warning("MCP worker %d did not stop within %.0f s: killing it", self.index, WORKER_STOP_TIMEOUT_S)
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
        if self._watcher is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher


def read_spec(fd: int) -> tuple[socket.socket, dict[str, Any]]:
    """A worker process's socket (``fd``) and its spec, the first message on it; from here on
    the process stops when the front dies."""
    sock = socket.socket(fileno=fd)
    spec = json.loads(sock.recv(MAX_MESSAGE_BYTES)[1:])
    _die_with(int(spec["front_pid"]))
    return sock, spec


def serve_from_front(worker: AppWorker, sock: socket.socket) -> None:
    """Serve the connections the front passes on ``sock`` until it closes its end or SIGTERM."""
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve_from_front(worker, sock))


async def _serve_from_front(worker: AppWorker, sock: socket.socket) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    sock.setblocking(False)

    def report(message: dict[str, Any]) -> None:
        with contextlib.suppress(OSError):
            sock.send(CONTROL + json.dumps(message).encode())

    def to_front(fd: int, request: bytes) -> None:
        try:
            socket.send_fds(sock, [CONNECTION + request], [fd])
        except OSError as exc:  # the front is gone or behind: the client sees its connection close
            log.warning("a connection could not be handed back to the front: %s", exc)

    worker.gate.on_change = lambda open_sessions: report({"open": open_sessions})
    worker.gate.on_one_call = lambda client: report({"one_call": client})
    worker.hand_back.to_front = to_front
    await worker.start()
    tasks: set[asyncio.Future[None]] = set()

    def on_readable() -> None:
        while True:
            try:
                data, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE_BYTES, 1)
            except BlockingIOError:
                return
            except OSError:
                data, fds = b"", []
            if not data and not fds:  # the front is gone
                loop.remove_reader(sock.fileno())
                stop.set()
                return
            if data[:1] == CONTROL:
                with contextlib.suppress(ValueError):
                    worker.tell(json.loads(data[1:]))
            for received in fds:
                conn = socket.socket(fileno=received)
                conn.setblocking(False)
                task = asyncio.ensure_future(worker.hand_over(conn, data[1:]))
                tasks.add(task)
                task.add_done_callback(tasks.discard)

    loop.add_reader(sock.fileno(), on_readable)
    try:
        await stop.wait()
    finally:
        with contextlib.suppress(ValueError, OSError):
            loop.remove_reader(sock.fileno())
        await worker.stop()


def _die_with(front_pid: int) -> None:
    """SIGTERM this process when the front dies (Linux), so no worker outlives it."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != front_pid:  # it died before the line above
        raise SystemExit(0)
