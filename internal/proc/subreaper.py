"""This process as a child subreaper, and the orphans that makes ours.

On Linux the process is made a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``, once, on
first use), so orphans of our descendants are re-parented to us rather than to init: they stay
findable, and their exit statuses come to us. The flag is process-wide by nature.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Mapping

from ..logs import logger
from .procfs import ProcStat, descendant_table, process_table

log = logger("toolsmith.proc")

#: ``prctl`` option number (linux/prctl.h).
PR_SET_CHILD_SUBREAPER = 36

_lock = threading.Lock()
_subreaper: bool | None = None


def become_subreaper() -> bool:
    """Make this process a child subreaper (Linux; once). False where that is not possible."""
    global _subreaper
    with _lock:
        if _subreaper is None:
            _subreaper = False
            if sys.platform.startswith("linux"):
                try:
                    import ctypes

                    libc = ctypes.CDLL(None, use_errno=True)
                    _subreaper = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
                except (OSError, AttributeError):
                    _subreaper = False
            if not _subreaper:
                log.info("not a child subreaper: orphans of killed commands are found by their tag only")
        return _subreaper


def is_subreaper() -> bool:
    """Whether :func:`become_subreaper` succeeded (False before it was tried)."""
    return bool(_subreaper)


def candidates() -> dict[int, ProcStat]:
    """Where a tree's members can be: our descendants with the subreaper, else all of /proc."""
    if _subreaper:
        table = descendant_table()
        if table is not None:
            return table
    return process_table()


def reap_foreign_orphans(table: Mapping[int, ProcStat] | None = None) -> int:
    """Reap dead orphans that processes started outside this package left us (a language
    server's workers, a probe's forked child), as a subreaper inherits them too.

    Only zombies that cannot be anyone's direct child: a process started by this process (by
    asyncio, :mod:`subprocess`, ...) is in our process group or leads its own, so a zombie whose
    group is neither was adopted, and nobody else will wait for it.
    """
    if not _subreaper:
        return 0
    me, my_group = os.getpid(), os.getpgrp()
    reaped = 0
    for stat in (candidates() if table is None else table).values():
        if stat.zombie and stat.ppid == me and stat.pgid not in (my_group, stat.pid) and stat.sid != stat.pid:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(stat.pid, os.WNOHANG)
                reaped += 1
    return reaped
