"""What an rg run confined to the readable roots may read (:mod:`..proc.confined`): the roots,
and the few files outside them that rg reads to honour the user's ignore rules — ignore files in
the directories above a root, git's global configuration and excludes file, rg's own config.

Under confinement a directory swapped for a symlink mid-walk cannot make rg read outside: the
kernel refuses the open, so the tools need not read every listed or matched file again to check
(they still do where the kernel cannot enforce it).
"""

from __future__ import annotations

import functools
import os
import re
import time
from collections.abc import Iterable
from pathlib import Path

from ..proc.confined import ReadConfinement, confinement_possible
from .proofs import Signature, settled, signature

#: Files rg reads in a directory above the one searched (``.git`` when it is a worktree's
#: pointer file; a ``.git`` directory is never opened up to rg as a whole).
_PARENT_IGNORE_FILES = (".gitignore", ".ignore", ".rgignore", ".git/info/exclude", ".git")
_EXCLUDES_FILE = re.compile(r"^\s*excludesfile\s*=\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)

#: rg binaries whose confined run failed to start (a library the loader wanted was not
#: allowed): they run unconfined, and the tools check what they print.
_unconfinable: set[str] = set()


def confinement_for(rg: str, roots: Iterable[Path], searched: Path) -> ReadConfinement | None:
    """The confinement for an rg run of ``searched`` that may read beneath ``roots``; None when
    it cannot be enforced here (no Landlock, or this rg failed to start under it before)."""
    if not confinable(rg):
        return None
    dirs = tuple(sorted(set(roots)))
    return ReadConfinement(dirs, tuple(sorted(_outside_reads(dirs, searched))))


def confinable(rg: str) -> bool:
    """Whether a run of ``rg`` with readable roots will be confined."""
    return rg not in _unconfinable and confinement_possible(rg)


def unconfinable(rg: str) -> None:
    """Remember that ``rg`` cannot start confined (see :data:`_unconfinable`)."""
    _unconfinable.add(rg)


def _outside_reads(dirs: tuple[Path, ...], searched: Path) -> set[Path]:
    """rg reads the ignore files of every directory above the one it searches (``--no-require-git``:
    in or out of a repository); those inside ``dirs`` are readable already."""
    inside = [str(d).rstrip("/") for d in dirs]
    found = []
    directory = os.path.dirname(os.path.realpath(searched))
    while True:
        if not any(directory == d or directory.startswith(d + "/") for d in inside):
            found += [f"{directory.rstrip('/')}/{name}" for name in _PARENT_IGNORE_FILES]
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    found += _git_global_files(os.environ.get("HOME", ""), os.environ.get("XDG_CONFIG_HOME", ""))
    if config := os.environ.get("RIPGREP_CONFIG_PATH"):
        found.append(config)
    return {Path(os.path.realpath(p)) for p in found if os.path.isfile(p)}


def _git_global_files(home: str, xdg: str) -> list[str]:
    """git's user configuration files, and the excludes file they name (or its default)."""
    configs, excludes = _git_configs(home, xdg)
    return [*configs, *excludes]


def git_global_excludes() -> list[str]:
    """The global excludes files rg may read: the one git's user configuration names, and the
    default one (``$XDG_CONFIG_HOME/git/ignore``)."""
    return _git_configs(os.environ.get("HOME", ""), os.environ.get("XDG_CONFIG_HOME", ""))[1]


def _git_configs(home: str, xdg: str) -> tuple[list[str], list[str]]:
    home = home or os.path.expanduser("~")
    xdg = xdg or f"{home}/.config"
    configs = [f"{home}/.gitconfig", f"{xdg}/git/config"]
    excludes = [f"{xdg}/git/ignore"]
    for config in configs:
        try:
            st = os.stat(config)
        except OSError:
            continue
        # Kept by the file's whole signature (a copy that keeps the time has another inode and
        # change time), and only once a change would show in it.
        kept = settled(st, time.time_ns())
        excludes += _excludes_kept(config, signature(st)) if kept else _excludes_named(config)
    return configs, excludes


@functools.lru_cache(maxsize=16)
def _excludes_kept(config: str, _signature: Signature) -> list[str]:
    """:func:`_excludes_named`, read again when the file's signature changes."""
    return _excludes_named(config)


def _excludes_named(config: str) -> list[str]:
    """The excludes files a git config file names."""
    try:
        with open(config, encoding="utf-8", errors="replace") as file:
            text = file.read()
    except OSError:
        return []
    return [os.path.expanduser(m.strip("\"'")) for m in _EXCLUDES_FILE.findall(text)]
