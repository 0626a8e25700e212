"""The MCP server's stdin and stdout served on the event loop, without a thread hop per message.

The SDK's ``stdio_server`` reads every line and writes and flushes every message through a worker
thread (``anyio.wrap_file``): three hand-offs between threads per call, which on a busy machine
are much of what a ``tools/call`` over stdio adds to the tool itself (``bench/mcp_server.py``).
When stdin and stdout are pipes or sockets — how hosts spawn a server — :func:`event_loop_stdio`
serves them with asyncio's pipe transports instead, handed to ``stdio_server`` as its explicit
streams. Otherwise (a terminal, a regular file) it yields None and ``stdio_server`` serves them
its own way.

While serving, as the SDK does for the streams it opens itself, fd 0 reads the null device and
fd 1 writes to stderr, so the tools' child processes and stray prints never touch the protocol;
both are restored afterwards, with the blocking mode the descriptors had.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import stat
from collections.abc import AsyncIterator, Callable

#: Lines are read whole, however long (a `write` call carries the file's content in one line).
#: Past twice this much unread input the reader pauses until the server catches up.
LINE_LIMIT = 1 << 30


class LineReader:
    """The protocol lines of stdin, decoded as the SDK decodes them (UTF-8, bad bytes replaced).
    A line ``take`` takes (stdio_fast.py) is served there and not handed on."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader
        self.take: Callable[[bytes], bool] | None = None

    def __aiter__(self) -> LineReader:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self._reader.readline()
            if not line:
                raise StopAsyncIteration
            if self.take is None or not self.take(line):
                return line.decode("utf-8", errors="replace")


class MessageWriter:
    """stdout for protocol messages: ``write`` queues, ``flush`` waits until all of it is out."""

    def __init__(self, transport: asyncio.WriteTransport, writer: asyncio.StreamWriter) -> None:
        self._transport = transport
        self._writer = writer

    async def write(self, text: str) -> None:
        self._transport.write(text.encode("utf-8"))

    def write_encoded(self, data: bytes) -> None:
        """A whole message already encoded (a line of UTF-8 JSON with its newline)."""
        self._transport.write(data)

    async def flush(self) -> None:
        await self._writer.drain()


def _pipe_or_socket(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


@contextlib.asynccontextmanager
async def event_loop_stdio() -> AsyncIterator[tuple[LineReader, MessageWriter] | None]:
    """The protocol streams on the running loop, or None when stdin/stdout are not pipes."""
    if not (_pipe_or_socket(0) and _pipe_or_socket(1)):
        yield None
        return
    # The transports own (and close, at end of input) one pair of duplicates; the other pair puts
    # the wire back on fd 0 and 1 at the end.
    restore_in, restore_out = _duplicate(0), _duplicate(1)
    blocking = os.get_blocking(restore_in), os.get_blocking(restore_out)
    pipe_in, pipe_out = os.fdopen(_duplicate(0), "rb", buffering=0), os.fdopen(_duplicate(1), "wb", buffering=0)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
    finally:
        os.close(null)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    read_transport: asyncio.BaseTransport | None = None
    write_transport: asyncio.WriteTransport | None = None
    try:
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), pipe_in
        )
        write_transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, pipe_out)
        # flush() means written, as with a file: drain waits for an empty buffer, not a low one.
        write_transport.set_write_buffer_limits(high=0)
        writer = asyncio.StreamWriter(write_transport, protocol, None, loop)
        yield LineReader(reader), MessageWriter(write_transport, writer)
    finally:
        for transport, pipe in ((read_transport, pipe_in), (write_transport, pipe_out)):
            if transport is not None:
                transport.close()
            else:
                pipe.close()
        for fd, restore, was_blocking in ((0, restore_in, blocking[0]), (1, restore_out, blocking[1])):
            with contextlib.suppress(OSError):
                os.set_blocking(restore, was_blocking)
            os.dup2(restore, fd)
            os.close(restore)


def _duplicate(fd: int) -> int:
    """A close-on-exec duplicate above the standard descriptors."""
    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
