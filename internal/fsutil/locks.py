"""Per-path locks: two calls of one session that change the same file take turns.

Callers pass resolved paths. Across sessions and processes, fsutil/commit.py locks directories.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when a lock is first made: every session has a PathLocks, not every call awaits
    import asyncio


class PathLocks:
    """One ``asyncio.Lock`` per real path. Share one instance between sessions on a workspace."""

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}

    def _lock(self, path: Path) -> asyncio.Lock:
        key = os.path.abspath(path)
        lock = self._locks.get(key)
        if lock is None:
            import asyncio

            lock = self._locks[key] = asyncio.Lock()
        return lock

    @contextlib.asynccontextmanager
    async def hold(self, paths: Iterable[Path]) -> AsyncIterator[None]:
        """Hold the locks of all ``paths``, taken in a fixed order so two holders never deadlock."""
        keys = sorted({os.path.abspath(p) for p in paths})
        async with contextlib.AsyncExitStack() as stack:
            for key in keys:
                await stack.enter_async_context(self._lock(Path(key)))
            yield
