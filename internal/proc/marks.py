"""The marks a tree's processes carry, so that an orphan is still known as the tree's.

The environment tag (:data:`TREE_ENV`, the tree's id) is inherited by every descendant that does
not clear its environment; it is lost to ``env -i``, as the session and group are to ``setsid``
and the parent link to a parent that exits. The limit mark survives all of them: a resource
limit is inherited by every fork, ``clone(CLONE_PARENT)`` included, and kept across ``exec``, so
a started process sets one to a value unique to its tree before it runs the command, and an
orphan with that value is the tree's (``/proc/PID/limits`` shows it; we read it with
``prlimit``, which also answers for a zombie). The limit used is ``RLIMIT_LOCKS``, which Linux
has not enforced since 2.4.25: the value is a name, never a limit. Only the soft value is set (a
process may always lower it); a process that sets it back deliberately is left to the cgroup
(cgroup.py), where there is one.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable

#: The environment variable that tags every process of a tree with the tree's id.
TREE_ENV = "TOOLSMITH_PROCESS_TREE"
#: The resource limit that carries the mark: RLIMIT_LOCKS (linux/resource.h), not enforced.
MARK_RESOURCE = 10
#: Every mark is this base plus a random 32-bit number: "TOOL" in the high word, so a mark is
#: recognisable as one of ours (:func:`is_mark`) and never a limit anyone would set.
MARK_BASE = 0x544F4F4C << 32
MARK_SPAN = 1 << 32


def new_mark() -> int | None:
    """A fresh mark, or None where marks cannot be set (not Linux, a lower hard limit)."""
    if not sys.platform.startswith("linux"):
        return None
    import resource

    try:
        hard = resource.getrlimit(MARK_RESOURCE)[1]
    except (OSError, ValueError):
        return None
    mark = MARK_BASE + int.from_bytes(os.urandom(4), "big")
    if hard != resource.RLIM_INFINITY and hard < mark:
        return None
    return mark


def is_mark(value: int | None) -> bool:
    return value is not None and MARK_BASE <= value < MARK_BASE + MARK_SPAN


def mark_setter(mark: int) -> Callable[[], None]:
    """What gives the calling process ``mark`` (run in a child between fork and exec: prepared
    here, so the child imports nothing and reads nothing); silent if refused."""
    import resource

    limits = (mark, resource.getrlimit(MARK_RESOURCE)[1])

    def take_mark() -> None:
        with contextlib.suppress(OSError, ValueError):
            resource.setrlimit(MARK_RESOURCE, limits)

    return take_mark


def give_mark(pid: int, mark: int) -> None:
    """Give the started process ``pid`` the ``mark`` (from its parent, while it waits before doing
    anything: see ProcessTree.adopt); silent if refused, as in the child."""
    import resource

    with contextlib.suppress(OSError, ValueError):
        resource.prlimit(pid, MARK_RESOURCE, (mark, resource.getrlimit(MARK_RESOURCE)[1]))


def mark_of(pid: int) -> int | None:
    """The mark ``pid`` carries, None when it carries none (or is gone, or not ours to read)."""
    import resource

    try:
        soft = resource.prlimit(pid, MARK_RESOURCE)[0]
    except (OSError, ValueError):
        return None
    return soft if is_mark(soft) else None
