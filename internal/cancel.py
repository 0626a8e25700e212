"""Cancellation that a caller can trigger from outside a running tool call.

A tool call can be stopped two ways: ``asyncio`` task cancellation (the caller cancels the task)
or a :class:`CancelToken` handed in through the context (a UI's "stop" button). Mechanisms that
run processes race their work against :meth:`CancelToken.wait` so either way kills the child.

asyncio is imported where it is used, not here: a call run without an event loop (the CLI's
one-shot view, see event_loop.py) must not pay for importing it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

from .errors import ToolCancelled
from .event_loop import loop_running
from .wakeup import Waiter, wake

T = TypeVar("T")


class CancelToken:
    """A one-shot flag usable from any event loop or thread.

    Waiters are futures of the loop that awaits them, so one token (and one session) can serve
    several ``asyncio.run`` calls, and ``cancel()`` may be called from another thread.
    """

    def __init__(self) -> None:
        self._cancelled = False
        self._lock = threading.Lock()
        self._waiters: list[Waiter] = []

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            waiters, self._waiters = self._waiters, []
        wake(waiters)

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    async def wait(self) -> None:
        import asyncio

        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            if self._cancelled:
                return
            self._waiters.append((loop, future))
        try:
            await future
        finally:
            with self._lock:
                self._waiters = [(lp, f) for lp, f in self._waiters if f is not future]

    def raise_if_cancelled(self) -> None:
        if self._cancelled:
            raise ToolCancelled("Tool call was aborted")


class StopCheck:
    """The check a worker thread calls between steps: raises :class:`ToolCancelled` once the
    token fires or :meth:`stop` was called (the awaiting side gave up on the work)."""

    def __init__(self, token: CancelToken) -> None:
        self._token = token
        self._stopped = threading.Event()

    def stop(self) -> None:
        self._stopped.set()

    def __call__(self) -> None:
        if self._stopped.is_set() or self._token.cancelled:
            raise ToolCancelled("Tool call was aborted")


async def race_cancel(awaitable: Awaitable[T], token: CancelToken) -> T:
    """Await ``awaitable`` unless ``token`` fires first, in which case raise :class:`ToolCancelled`.

    The losing side is cancelled, so nothing is left running in the background.
    """
    import asyncio

    work = asyncio.ensure_future(awaitable)
    if token.cancelled:
        work.cancel()
        raise ToolCancelled("Tool call was aborted")
    stop = asyncio.ensure_future(token.wait())
    try:
        done, _ = await asyncio.wait({work, stop}, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        # The awaiting task was cancelled (or timed out): the work's own cleanup (killing a
        # child process) must finish before the caller hears of it, or it runs after the answer.
        work.cancel()
        stop.cancel()
        with contextlib.suppress(BaseException):
            await work
        raise
    if work in done:
        stop.cancel()
        return work.result()
    work.cancel()
    with contextlib.suppress(BaseException):
        await work  # let the work's own cleanup (killing a child process) finish first
    raise ToolCancelled("Tool call was aborted")


async def in_thread(work: Callable[[Callable[[], None]], T], token: CancelToken) -> T:
    """Run CPU-heavy ``work(check)`` in a worker thread, so the event loop (and with it timeouts,
    cancellation and other sessions) keeps running.

    ``check()`` raises :class:`ToolCancelled` once ``token`` fires or the awaiting task is
    cancelled; ``work`` calls it between steps. The caller is answered at once on cancellation;
    the thread stops at its next check and its result is dropped.

    Without an event loop (event_loop.py) there is nothing to keep responsive: ``work`` runs
    here, in this thread, with the same checks.
    """
    check = StopCheck(token)
    if not loop_running():
        token.raise_if_cancelled()
        return work(check)
    import asyncio

    try:
        return await race_cancel(asyncio.to_thread(work, check), token)
    finally:
        check.stop()
