"""Starting a process that can read only beneath given paths (:mod:`.landlock`).

Landlock restricts the calling thread and what it starts, for good. So each set of readable
paths gets its own threads, each restricted once when it starts, and the process is started from
one (a child inherits the restriction before it runs a single instruction of its own; see
:func:`.stream.run_streaming`). The threads are kept for the next call with the same paths, at
most :data:`MAX_CONFINED_THREADS` of them.

Besides the paths asked for, the process may read what the loader needs to start it
(:func:`.elf.loader_files`). When the kernel has no Landlock, or the executable's libraries
cannot be found, :func:`confined_executor` answers None and the caller runs it as usual (and
checks what it printed instead).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ..logs import logger
from . import landlock
from .elf import loader_files

log = logger("toolsmith.proc")
T = TypeVar("T")

#: Sets of restricted threads kept for reuse (one set per distinct set of readable paths).
MAX_CONFINERS = 8
#: Threads per set: a search and the directory walk beside it.
THREADS_PER_CONFINER = 2
#: How long a new thread may take to start and restrict itself.
RESTRICT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class ReadConfinement:
    """What a confined process may read: everything beneath ``dirs``, and the files ``files``."""

    dirs: tuple[Path, ...]
    files: tuple[Path, ...] = ()


class _Confiner(Executor):
    """Threads restricted to a :class:`ReadConfinement`, each when it starts. Work runs only on
    a thread whose restriction took: on any other it raises PermissionError instead."""

    def __init__(self, dirs: tuple[Path, ...], files: tuple[Path, ...]) -> None:
        self.failure: OSError | None = None
        self.first_started = threading.Event()
        self._restricted = threading.local()
        self.pool = ThreadPoolExecutor(
            THREADS_PER_CONFINER, "toolsmith-confined", initializer=self._restrict, initargs=(dirs, files)
        )

    def _restrict(self, dirs: tuple[Path, ...], files: tuple[Path, ...]) -> None:
        try:
            landlock.restrict_current_thread(dirs, files)
            self._restricted.done = True
        except OSError as exc:
            self.failure = exc
            log.warning("read confinement unavailable: %s", exc)
        self.first_started.set()

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        return self.pool.submit(self._confined, fn, *args, **kwargs)

    def _confined(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        if not getattr(self._restricted, "done", False):
            raise PermissionError(f"this thread could not be confined: {self.failure}")
        return fn(*args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.pool.shutdown(wait, cancel_futures=cancel_futures)

    def usable(self) -> bool:
        """Whether its threads can be restricted (the first is started, and restricted, by a
        first task)."""
        if not self.first_started.is_set():
            self.pool.submit(lambda: None).result(timeout=RESTRICT_TIMEOUT_S)
        return self.failure is None


_Identity = tuple[tuple[Path, int, int], ...]
_confiners: OrderedDict[tuple[_Identity, _Identity], _Confiner] = OrderedDict()
_confiners_lock = threading.Lock()


def _identities(paths: tuple[Path, ...]) -> _Identity:
    """Each path that exists with its device and inode: a rule holds the inode it was made for,
    so a path replaced since (an ignore file saved by rename) needs a thread of its own."""
    found = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            continue
        found.append((path, st.st_dev, st.st_ino))
    return tuple(found)


def _confiner(dirs: tuple[Path, ...], files: tuple[Path, ...]) -> _Confiner:
    key = (_identities(dirs), _identities(files))
    with _confiners_lock:
        confiner = _confiners.pop(key, None) or _Confiner(dirs, files)
        _confiners[key] = confiner
        while len(_confiners) > MAX_CONFINERS:
            _, oldest = _confiners.popitem(last=False)
            oldest.shutdown(wait=False)
        return confiner


def confinement_possible(executable: str) -> bool:
    """Whether ``executable`` can be started confined here (the kernel has Landlock and its
    loader's files are known)."""
    return landlock.available() and loader_files(executable) is not None


def confined_executor(confinement: ReadConfinement, executable: str) -> Executor | None:
    """An executor whose threads read only what ``confinement`` allows (and the files the
    loader needs to start ``executable``): what they start is confined the same way. None when
    that cannot be enforced here; then nothing is confined and the caller checks instead.

    Work given to it must not open anything outside (``/dev/null`` included: open it before)."""
    loader = loader_files(executable) if landlock.available() else None
    if loader is None:
        return None
    program = Path(os.path.realpath(executable))
    confiner = _confiner(confinement.dirs, tuple(sorted({*confinement.files, program, *loader})))
    return confiner if confiner.usable() else None
