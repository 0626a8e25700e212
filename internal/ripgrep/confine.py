"""What an rg run confined to the readable roots may read (:mod:`..proc.confined`): the roots,
and the few files outside them that rg reads to honour the user's ignore rules — ignore files in
the directories above a root, git's global configuration and excludes file, rg's own config.

Under confinement a directory swapped for a symlink mid-walk cannot make rg read outside: the
kernel refuses the open, so the tools need not read every listed or matched file again to check
(they still do where the kernel cannot enforce it).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from ..proc import ReadConfinement, confinement_possible

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
    real = Path(os.path.realpath(searched))
    above = [a for a in real.parents if not any(a == d or d in a.parents for d in dirs)]
    found = {p for a in above for n in _PARENT_IGNORE_FILES if (p := a / n).is_file()}
    found |= {p for p in _git_global_files() if p.is_file()}
    if config := os.environ.get("RIPGREP_CONFIG_PATH"):
        found.add(Path(config))
    return {Path(os.path.realpath(p)) for p in found}


def _git_global_files() -> list[Path]:
    """git's user configuration files, and the excludes file they name (or its default)."""
    home = Path(os.environ.get("HOME") or "~").expanduser()
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    configs = [home / ".gitconfig", xdg / "git" / "config"]
    excludes = [xdg / "git" / "ignore"]
    for config in configs:
        try:
            text = config.read_text("utf-8", "replace")
        except OSError:
            continue
        excludes += [Path(m.strip("\"'")).expanduser() for m in _EXCLUDES_FILE.findall(text)]
    return [*configs, *excludes]
