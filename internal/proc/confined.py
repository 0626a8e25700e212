"""Starting a process that can read only beneath given paths (:mod:`.landlock`).

Landlock restricts the calling thread and what it starts, for good. So each set of readable
paths gets its own thread, restricted once when it starts, and the process is started from
there (``subprocess.Popen`` on that thread; the child inherits the restriction before it runs a
single instruction of its own). The event loop waits for it through a pidfd. The threads are
kept for the next call with the same paths, at most :data:`MAX_CONFINED_THREADS` of them.

Besides the paths asked for, the process may read what the loader needs to start it
(:func:`.elf.loader_files`). When the kernel has no Landlock, or the executable's libraries
cannot be found, :func:`start_confined` answers None and the caller starts it as usual (and
checks what it printed instead).
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import landlock
from .elf import loader_files

log = logging.getLogger("toolsmith.proc")

#: Restricted threads kept for reuse (one per distinct set of readable paths).
MAX_CONFINED_THREADS = 8


@dataclass(frozen=True)
class ReadConfinement:
    """What a confined process may read: everything beneath ``dirs``, and the files ``files``."""

    dirs: tuple[Path, ...]
    files: tuple[Path, ...] = ()


class _Confiner:
    """One thread restricted to a :class:`ReadConfinement`; processes are started from it."""

    def __init__(self, dirs: tuple[Path, ...], files: tuple[Path, ...]) -> None:
        self.failure: OSError | None = None
        self.executor = ThreadPoolExecutor(1, "toolsmith-confined", initializer=self._restrict, initargs=(dirs, files))

    def _restrict(self, dirs: tuple[Path, ...], files: tuple[Path, ...]) -> None:
        try:
            landlock.restrict_current_thread(dirs, files)
        except OSError as exc:
            self.failure = exc

    def popen(self, argv: Sequence[str], kwargs: dict[str, Any]) -> subprocess.Popen[bytes] | None:
        """Runs on the restricted thread: the started process, or None if the thread could not
        be restricted (then nothing was started)."""
        if self.failure is not None:
            return None
        return subprocess.Popen(argv, **kwargs)


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
        while len(_confiners) > MAX_CONFINED_THREADS:
            _, oldest = _confiners.popitem(last=False)
            oldest.executor.shutdown(wait=False)
        return confiner


def confinement_possible(executable: str) -> bool:
    """Whether ``executable`` can be started confined here (the kernel has Landlock and its
    loader's files are known)."""
    return landlock.available() and loader_files(executable) is not None


async def start_confined(
    argv: Sequence[str],
    confinement: ReadConfinement,
    *,
    stdout: int,
    stderr: int,
    cwd: str | os.PathLike[str] | None,
    env: Mapping[str, str],
) -> ThreadStarted | None:
    """``argv`` started in a new session, stdin ``/dev/null``, reading only what ``confinement``
    allows (and its loader's files); None when that cannot be enforced here (nothing started)."""
    loader = loader_files(argv[0]) if landlock.available() else None
    if loader is None:
        return None
    executable = Path(os.path.realpath(argv[0]))
    confiner = _confiner(confinement.dirs, tuple(sorted({*confinement.files, executable, *loader})))
    # /dev/null is opened here: the confined thread may not open it.
    stdin = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    kwargs: dict[str, Any] = {
        "stdin": stdin, "stdout": stdout, "stderr": stderr, "cwd": cwd, "env": dict(env), "start_new_session": True,
    }  # fmt: skip
    try:
        popen = await asyncio.wrap_future(confiner.executor.submit(confiner.popen, list(argv), kwargs))
    except PermissionError as exc:  # the kernel refused what the loader needed: start it as usual
        log.warning("cannot start %s confined: %s", argv[0], exc)
        return None
    finally:
        os.close(stdin)
    if popen is None:
        log.warning("read confinement unavailable: %s", confiner.failure)
        return None
    return ThreadStarted(popen)


class ThreadStarted:
    """The asyncio face of a process started on another thread: its exit is awaited through a
    pidfd (the event loop's child watcher knows nothing of it)."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self._popen = popen
        self.pid = popen.pid

    @property
    def returncode(self) -> int | None:
        return self._popen.poll()

    async def wait(self) -> int:
        while (code := self._popen.poll()) is None:
            await self._exited()
        return code

    async def _exited(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            pidfd = os.pidfd_open(self.pid)
        except ProcessLookupError:
            return  # reaped meanwhile: poll() says so
        exited: asyncio.Future[None] = loop.create_future()

        def readable() -> None:
            if not exited.done():
                exited.set_result(None)

        loop.add_reader(pidfd, readable)
        try:
            await exited
        finally:
            loop.remove_reader(pidfd)
            os.close(pidfd)
