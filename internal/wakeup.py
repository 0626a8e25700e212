"""Waking awaiting coroutines from any thread.

A waiter is a future of the event loop that awaits it, so one object (a cancel token, a background
job) can serve several ``asyncio.run`` calls, and be woken from a thread that has no loop.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:  # asyncio is only imported by code that awaits (see cancel.py)
    import asyncio

#: The loop that awaits, and the future it awaits.
Waiter: TypeAlias = "tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]"


def wake(waiters: Iterable[Waiter]) -> None:
    """Resolve each waiter's future in its own loop (thread-safe); a closed loop's is skipped."""
    for loop, future in waiters:
        with contextlib.suppress(RuntimeError):  # that loop is closed
            loop.call_soon_threadsafe(_resolve, future)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
