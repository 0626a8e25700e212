"""Running with or without an asyncio event loop.

Every tool's ``run`` is a coroutine, but some calls never wait for anything (a view: a permission
check that no user answers, a read, no language server). The CLI runs such a call with
:func:`run_without_loop` instead of ``asyncio.run``, so it never imports asyncio (~25 ms with
ssl). The code it runs tells the two cases apart with :func:`loop_running`: blocking work goes to
a worker thread while a loop runs (so the loop keeps serving timeouts, cancellation and other
sessions), and runs in place when none does.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def loop_running() -> bool:
    """Whether an asyncio event loop runs in this thread. A process that never imported asyncio
    runs none, so the answer costs no import."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return False
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


async def off_loop(work: Callable[[], T]) -> T:
    """Blocking ``work()`` in a worker thread while an event loop runs, so the loop is not held
    up; here when none runs."""
    if not loop_running():
        return work()
    import asyncio

    return await asyncio.to_thread(work)


class NeedsEventLoop(RuntimeError):
    """A coroutine run by :func:`run_without_loop` waited for something only a loop can deliver."""


def run_without_loop(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to its end in this thread, without an event loop: for a coroutine that
    never suspends (every ``await`` in it completes at once). One that does suspend is closed
    and :class:`NeedsEventLoop` raised; under asyncio, code that needs the loop fails before
    that, asking for the running loop."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coroutine.close()
    raise NeedsEventLoop("a call run without an event loop waited for one")
