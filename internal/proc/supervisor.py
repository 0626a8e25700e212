"""A session's live process trees: :meth:`ProcessSupervisor.close` stops them all (Session close).

Every session has a supervisor and most calls start no process, so this module needs nothing of
the process machinery: ``tree.py`` imports it (a tree registers with its owner), not the other
way, and a session that starts no process (the CLI's one-shot view) never loads ``tree.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol


class Stoppable(Protocol):
    """What the supervisor does with a tree (``tree.ProcessTree``)."""

    def kill_now(self) -> None: ...
    async def terminate(self, grace_s: float = ..., settle_s: float = ...) -> int: ...
    def release(self) -> None: ...


class ProcessSupervisor:
    """A session's live process trees; :meth:`close` kills them all (Session close)."""

    def __init__(self) -> None:
        self._trees: set[Stoppable] = set()
        self._lock = threading.Lock()
        #: Kills what ended calls left behind (live_trees.sweep_unclaimed), set by the first tree: this
        #: module does not import the process machinery.
        self.sweeper: Callable[[], int] | None = None

    def add(self, tree: Stoppable) -> None:
        with self._lock:
            self._trees.add(tree)

    def discard(self, tree: Stoppable) -> None:
        with self._lock:
            self._trees.discard(tree)

    def trees(self) -> list[Stoppable]:
        with self._lock:
            return list(self._trees)

    def kill_all_now(self) -> None:
        for tree in self.trees():
            tree.kill_now()

    async def close(self) -> None:
        trees = self.trees()
        if trees:  # a session that started no process closes without an event loop
            import asyncio

            await asyncio.gather(*(tree.terminate(grace_s=0) for tree in trees))
        for tree in self.trees():
            tree.release()
        if self.sweeper is not None:
            self.sweeper()
