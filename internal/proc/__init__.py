"""Child processes that can always be stopped and reaped, with everything they started.

Every process a session starts (bash commands, background jobs, custom tools, rg) goes through
this package, which owns it as a :class:`ProcessTree`: the leader plus every descendant, wherever
it went. The modules, each one job:

- ``procfs``: reading processes from ``/proc``;
- ``subreaper``: this process as a child subreaper, and reaping the orphans that brings;
- ``tree``: a process tree — finding its members, stopping and reaping them — and a session's
  :class:`ProcessSupervisor` of trees;
- ``launch``: starting a command in its own tree (:func:`spawn`, :func:`run_and_reap`).

``launch`` is loaded when one of its names is first asked for: it imports asyncio (~25 ms with
ssl), which a session that starts no process (the CLI's one-shot view) does without, although
every session has a :class:`ProcessSupervisor`.
"""

from typing import TYPE_CHECKING, Any

from .procfs import ProcStat, process_table
from .subreaper import become_subreaper
from .tree import KILL_GRACE_S, REAP_TIMEOUT_S, SETTLE_AFTER_EXIT_S, TREE_ENV, ProcessSupervisor, ProcessTree

if TYPE_CHECKING:
    from .launch import Child, check_argument, run_and_reap, spawn

_FROM_LAUNCH = frozenset({"Child", "check_argument", "run_and_reap", "spawn"})


def __getattr__(name: str) -> Any:
    if name in _FROM_LAUNCH:
        from . import launch

        return getattr(launch, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "KILL_GRACE_S",
    "REAP_TIMEOUT_S",
    "SETTLE_AFTER_EXIT_S",
    "TREE_ENV",
    "Child",
    "ProcStat",
    "ProcessSupervisor",
    "ProcessTree",
    "become_subreaper",
    "check_argument",
    "process_table",
    "run_and_reap",
    "spawn",
]
