"""Cancellation that a caller can trigger from outside a running tool call.

A tool call can be stopped two ways: ``asyncio`` task cancellation (the caller cancels the task)
or a :class:`CancelToken` handed in through the context (a UI's "stop" button). Mechanisms that
run processes race their work against :meth:`CancelToken.wait` so either way kills the child.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from internal.errors import ToolCancelled

T = TypeVar("T")


class CancelToken:
    """A one-shot flag; waiting on it never blocks cancellation of the waiter."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    async def wait(self) -> None:
        await self._event.wait()

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise ToolCancelled("Tool call was aborted")


async def race_cancel(awaitable: Awaitable[T], token: CancelToken) -> T:
    """Await ``awaitable`` unless ``token`` fires first, in which case raise :class:`ToolCancelled`.

    The losing side is cancelled, so nothing is left running in the background.
    """
    work = asyncio.ensure_future(awaitable)
    if token.cancelled:
        work.cancel()
        raise ToolCancelled("Tool call was aborted")
    stop = asyncio.ensure_future(token.wait())
    try:
        done, _ = await asyncio.wait({work, stop}, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        work.cancel()
        stop.cancel()
        raise
    if work in done:
        stop.cancel()
        return work.result()
    work.cancel()
    raise ToolCancelled("Tool call was aborted")
