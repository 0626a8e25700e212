"""The change's one worker thread: plan, wait for the permission asked on the event loop, commit.

The file work (reading the snapshots, planning, the gate, the diff, the commit) is blocking and
may be long; it runs in one worker thread, which hands the permission ask to the event loop and
waits for the answer, then commits itself — one thread hop per change. Cancellation (the call's
token, or the awaiting task) answers at once until the commit starts: the worker stops at its
next check and a pending ask is withdrawn. Once the commit started, it completes (a cancelled
call never leaves a half-applied change or a false report).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from ...cancel import StopCheck
from ...errors import ToolCancelled
from ...fsutil.commit import Change, Committed, commit
from ...logs import logger
from ..tools.context import FileServices

log = logger("toolsmith")

Check = Callable[[], None]
Planned = TypeVar("Planned")


async def run_in_worker(
    ctx: FileServices,
    plan: Callable[[Check], Planned],
    ask: Callable[[Planned], Awaitable[None]],
    settled: Callable[[Planned], bool],
    commit_plan: Callable[[Planned, Check], Committed],
) -> tuple[Planned, Committed]:
    """``plan(check)`` in a worker thread, which then waits while ``ask(planned)`` runs on the
    event loop (skipped when ``settled(planned)``: the answer is known without asking), and
    commits with ``commit_plan(planned, check)`` itself. Returns the plan and the commit's stats."""
    loop = asyncio.get_running_loop()
    check = StopCheck(ctx.cancel)
    committing = threading.Event()
    handover = threading.Lock()  # stopping and starting the commit are decided one after the other
    asking: list[concurrent.futures.Future[None]] = []

    def work() -> tuple[Planned, Committed]:
        planned = plan(check)
        if not settled(planned):
            with handover:  # a cancellation after this point finds the ask to cancel
                check()
                future = asyncio.run_coroutine_threadsafe(_awaited(ask(planned)), loop)
                asking.append(future)
            try:
                future.result()
            except concurrent.futures.CancelledError:
                raise ToolCancelled("Tool call was aborted") from None
        with handover:
            check()
            committing.set()
        return planned, commit_plan(planned, check)

    def abandon() -> bool:
        """Stop the worker unless it is committing; True when it was stopped."""
        with handover:
            check.stop()
            started = committing.is_set()
        for future in asking:
            future.cancel()
        return not started

    context = contextvars.copy_context()
    work_future = loop.run_in_executor(None, functools.partial(context.run, work))
    # An abandoned worker's ToolCancelled is expected: retrieved here, so it is not logged.
    work_future.add_done_callback(lambda future: future.cancelled() or future.exception())
    cancelled = asyncio.ensure_future(ctx.cancel.wait())
    waiting: set[asyncio.Future[Any]] = {work_future, cancelled}
    try:
        done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        abandon()
        raise
    finally:
        cancelled.cancel()
    if work_future not in done and abandon():
        raise ToolCancelled("Tool call was aborted")
    return await asyncio.shield(work_future)


async def _awaited(awaitable: Awaitable[None]) -> None:
    await awaitable


def commit_and_record(ctx: FileServices, changes: Sequence[Change], check: Check) -> Committed:
    """The commit (in the worker thread), and the checkpoint record of what it changed."""
    roots, journal_dir = ctx.writable_roots(), ctx.state.directory("journal")
    stats = commit(changes, roots=roots, journal_dir=journal_dir, workspace=ctx.workspace, check=check)
    if ctx.on_commit is not None:
        try:
            ctx.on_commit(changes)
        except Exception:  # the change is made: a failed record costs only its rewind
            log.exception("recording a commit for checkpoints failed")
    return stats
