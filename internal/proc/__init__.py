"""Child processes that can always be stopped and reaped, with everything they started.

Every process a session starts (bash commands, background jobs, custom tools, rg) goes through
this package, which owns it as a :class:`ProcessTree`: the leader plus every descendant, wherever
it went. The modules, each one job:

- ``procfs``: reading processes from ``/proc``;
- ``subreaper``: this process as a child subreaper, and reaping the orphans that brings;
- ``cgroup``, ``marks``: what ties a process to its tree however it detaches — a cgroup per
  tree where we may create one, the environment tag and the limit mark;
- ``tree``: a process tree — finding its members, stopping and reaping them;
- ``live_trees``: this process's live trees, and killing orphans of trees that ended;
- ``supervisor``: a session's :class:`ProcessSupervisor` of trees;
- ``landlock``, ``elf``, ``confined``: starting a process that can read only beneath given
  paths, where the kernel enforces it;
- ``stream``: running a short-lived command on a worker thread, its output parsed as it streams;
- ``launch``: starting a command in its own tree (:func:`spawn`, :func:`run_and_reap`).

Only ``supervisor`` is loaded with the package: every session has a supervisor, but a session
that starts no process (the CLI's one-shot view) needs none of the rest, and ``launch`` imports
asyncio (~25 ms with ssl). The other names load their module when first asked for.
"""

from typing import TYPE_CHECKING, Any

from .supervisor import ProcessSupervisor

if TYPE_CHECKING:
    from .launch import Child, check_argument, run_and_reap, spawn
    from .procfs import ProcStat, process_table
    from .subreaper import become_subreaper
    from .tree import KILL_GRACE_S, REAP_TIMEOUT_S, SETTLE_AFTER_EXIT_S, TREE_ENV, ProcessTree


def __getattr__(name: str) -> Any:
    if name in ("Child", "check_argument", "run_and_reap", "spawn"):
        from . import launch

        return getattr(launch, name)
    if name in ("KILL_GRACE_S", "REAP_TIMEOUT_S", "SETTLE_AFTER_EXIT_S", "TREE_ENV", "ProcessTree"):
        from . import tree

        return getattr(tree, name)
    if name in ("ProcStat", "process_table"):
        from . import procfs

        return getattr(procfs, name)
    if name == "become_subreaper":
        from .subreaper import become_subreaper

        return become_subreaper
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
