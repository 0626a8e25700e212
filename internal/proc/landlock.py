"""Read confinement by the kernel (Linux Landlock): a thread, and every process it starts, can
read files and list directories only beneath the paths it was given.

Why: rg and other listers walk a tree by name. A directory swapped for a symlink while they walk
sends the next open outside the workspace, and a check afterwards (re-reading what was shown)
costs as much as the search. Under Landlock the kernel refuses that open (``EACCES``), whatever
path led there, so what such a process prints is inside by construction.

Restriction is one-way and per thread, so it is applied to a dedicated thread (see
:mod:`.confined`), never to a thread that runs the rest of the program. Only reading is handled
(``READ_FILE``, ``READ_DIR``): writing, executing and everything else stay as they were.
Available from Linux 5.13; :func:`available` says whether this kernel has it.
"""

from __future__ import annotations

import ctypes
import functools
import os
import stat
from collections.abc import Iterable
from pathlib import Path

# The syscall numbers are the same on every architecture (the unified syscall table).
_SYS_CREATE_RULESET = 444
_SYS_ADD_RULE = 445
_SYS_RESTRICT_SELF = 446
_CREATE_RULESET_VERSION = 1 << 0
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_ACCESS_READ_FILE = 1 << 2
_ACCESS_READ_DIR = 1 << 3


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # the kernel's struct is packed
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


@functools.cache
def available() -> bool:
    """Whether this kernel enforces Landlock (ABI version 1 or later)."""
    try:
        version = _libc().syscall(_SYS_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION)
    except (OSError, AttributeError):
        return False
    return bool(version >= 1)


def restrict_current_thread(dirs: Iterable[Path], files: Iterable[Path]) -> None:
    """From now on this thread (and what it starts) reads only beneath ``dirs`` and the files
    ``files``. Paths that do not exist are left out. Raises OSError when the kernel refuses."""
    libc = _libc()
    attr = _RulesetAttr(_ACCESS_READ_FILE | _ACCESS_READ_DIR)
    ruleset = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.sizeof(attr), 0)
    if ruleset < 0:
        raise _last_error("landlock_create_ruleset")
    try:
        for path in dirs:
            _allow(ruleset, path, _ACCESS_READ_FILE | _ACCESS_READ_DIR)
        for path in files:
            _allow(ruleset, path, _ACCESS_READ_FILE)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise _last_error("prctl(PR_SET_NO_NEW_PRIVS)")
        if libc.syscall(_SYS_RESTRICT_SELF, ruleset, 0) != 0:
            raise _last_error("landlock_restrict_self")
    finally:
        os.close(ruleset)


def _allow(ruleset: int, path: Path, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # not there (yet): nothing beneath it to read
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            access &= _ACCESS_READ_FILE  # a file rule may only carry file rights
        rule = _PathBeneathAttr(access, fd)
        if _libc().syscall(_SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
            raise _last_error(f"landlock_add_rule({path})")
    finally:
        os.close(fd)


def _last_error(call: str) -> OSError:
    number = ctypes.get_errno()
    return OSError(number, f"{call}: {os.strerror(number)}")
