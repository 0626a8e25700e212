"""ls ``{depth: 1}`` without rg: one read of the directory, answered as rg would answer.

A one-level listing shows a directory's files and the subdirectories that hold, at any depth, a
file the full listing shows. rg would be started for the files alone — a process start, and the
walk beside it (directories.py) to learn which subdirectories to show. Here the directory is read
once (``scandir`` of a descriptor checked to be inside the readable roots), its entries filtered
by the ignore files of the directory and its ancestors and by the ignore globs, and each
subdirectory is shown or not by its *proof* (proofs.py): the directory, the directories on the
way to the file that showed it last time and their ignore files, unchanged since by their stats.

Only stats and that one read happen on the calling thread. A subdirectory without a proof (the
first listings, a change) is looked into by the same code on a thread that reads only the
readable roots (runner.py), where its proof is made for next time — from the second look at a
directory in the process on: a CLI call lists once, and making proofs costs a stat of each
directory on the way to the file that shows a subdirectory.

The answer is rg's whenever the rules are known exactly (fallback.exact_glob, and the property
test tests/property/test_shallow_listing.py against rg's own listing); otherwise — an escape or
an unusual glob in an ignore file, rules in git's ``info/exclude`` or the global excludes file,
a ripgrep configuration file — :func:`shallow_rules` says None and rg answers.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from ..cancel import CancelToken
from ..fsutil.paths import fd_real_path, within_any
from .confine import git_global_excludes
from .directories import holds_file
from .fallback import GlobSet, IgnoreRule, InexactRules, ignored, walk_start
from .proofs import Signature, proof_says, settled, signature
from .query import FileQuery, ReadableRoots, SearchResult

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


class NeedsLook(Exception):
    """A subdirectory has no proof: the listing must look into it (on a confined thread)."""


@dataclass(frozen=True)
class ShallowRules:
    """What filters the root's entries: its and its ancestors' ignore rules, the globs, and the
    key their proofs are kept under."""

    rules: list[IgnoreRule]
    globs: GlobSet
    key: object


def shallow_rules(query: FileQuery) -> ShallowRules | None:
    """The rules of a one-level listing of ``query.root``, or None when rg must answer (they are
    not known exactly). Reads the ancestors' ignore and git files: made on the calling thread,
    which may read them (a confined thread could not follow a worktree's ``.git`` pointer)."""
    if os.environ.get("RIPGREP_CONFIG_PATH"):
        return None  # rg's own configuration may add flags
    try:
        globs, stack = walk_start(query, strict=True)
        if _git_excludes_have_rules(str(query.root)):
            return None
    except InexactRules:
        return None
    rules = stack[0][2]
    return ShallowRules(rules, globs, (tuple(rules), query.globs))


def list_shallow(
    query: FileQuery, rules: ShallowRules, cancel: CancelToken, *, limit: int, look: bool
) -> SearchResult:
    """The files and the shown subdirectories of ``query.root`` (``query.max_depth`` is 1).
    Without ``look`` a subdirectory must be shown or hidden by its proof, else NeedsLook; with
    it, subdirectories without one are looked into. InexactRules when a look meets an ignore
    file not read exactly (rg answers then); None-like failures of the root raise OSError."""
    root = str(query.root)
    base = root.rstrip("/")
    fd = os.open(root, _DIR_FLAGS)
    try:
        if query.readable and not _inside(fd, query.readable):
            raise PermissionError(f"{root} is not inside the readable roots")
        names, candidates = _entries(fd, root, rules)
        key = rules.key if look and _listed_again(root) else None  # proofs pay off from the second listing
        directories = []
        for name in candidates:
            path = f"{base}/{name}"
            says = proof_says(path, os.stat(name, dir_fd=fd, follow_symlinks=False), rules.key)
            if says is None:
                if not look:
                    raise NeedsLook(path)
                cancel.raise_if_cancelled()
                says = holds_file(path, name, rules.rules, rules.globs, cancel, strict=True, rules_key=key)
            if says:
                directories.append(name)
    finally:
        os.close(fd)
    files = [f"{base}/{name}" for name in names[:limit]]
    return SearchResult(files=files, directories=directories, stopped_early=len(names) > limit, confined=True)


@dataclass(frozen=True)
class _Entries:
    """A directory's entries as a listing filtered them: the files it shows and the
    subdirectories it may show, under the rules ``rules_key``, while the directory's signature is
    ``signature`` (its entries the same names for the same inodes, as in proofs.py)."""

    signature: Signature
    rules_key: object
    files: list[str]
    subdirectories: list[str]


#: The last entries read per listed directory (bounded, the oldest dropped first).
_entries_kept: dict[str, _Entries] = {}
#: Directories whose entries are kept.
ENTRIES_KEPT = 256


def _entries(fd: int, root: str, rules: ShallowRules) -> tuple[list[str], list[str]]:
    """The names of the files of the directory open at ``fd`` that the listing shows, and of its
    subdirectories the rules leave in: read with one scandir, or, while the directory is as it
    was when that was last done, as it was then."""
    st = os.fstat(fd)
    kept = _entries_kept.get(root)
    if kept is not None and kept.signature == signature(st) and kept.rules_key == rules.key:
        return kept.files, kept.subdirectories
    started = time.time_ns()
    with os.scandir(fd) as found:
        entries = list(found)
        files = _shown([entry.name for entry in entries if entry.is_file(follow_symlinks=False)], False, rules)
        subdirectories = _shown([entry.name for entry in entries if entry.is_dir(follow_symlinks=False)], True, rules)
    _entries_kept.pop(root, None)
    if settled(st, started):  # else a change in the same tick (or second) could hide
        if len(_entries_kept) >= ENTRIES_KEPT:
            del _entries_kept[next(iter(_entries_kept))]
        _entries_kept[root] = _Entries(signature(st), rules.key, files, subdirectories)
    return files, subdirectories


#: Directories this process looked into for a one-level listing: the next look keeps proofs.
#: A CLI call lists once and ends; making proofs it never uses would cost it a stat per
#: directory and ignore file on the way to each witness.
_looked: set[str] = set()
LOOKED_KEPT = 4096


def _listed_again(root: str) -> bool:
    if root in _looked:
        return True
    if len(_looked) >= LOOKED_KEPT:
        _looked.clear()
    _looked.add(root)
    return False


def _shown(names: list[str], is_dir: bool, rules: ShallowRules) -> list[str]:
    """The root's entries among ``names`` that the listing shows: allowed by the globs, and not
    ignored."""
    allowed = rules.globs.allowed_names(names, is_dir)
    if not rules.rules:  # no ignore file above or in the root: nothing more to ask
        return allowed
    return [name for name in allowed if not ignored(name, is_dir, rules.rules)]


def _inside(fd: int, readable: tuple[Path, ...] | ReadableRoots) -> bool:
    real = fd_real_path(fd)
    if real is None:
        return False
    return within_any(real, list(readable)) if isinstance(readable, tuple) else readable.cover(real)


# --- git's own excludes: rg reads them too --------------------------------------------------


def _git_excludes_have_rules(root: str) -> bool:
    """Whether git's excludes that rg would read hold a rule: ``info/exclude`` of a repository
    at the root or above it (a worktree's ``.git`` file followed to its git and common dirs),
    and the global excludes files. Unreadable or unusual counts as having rules."""
    directory = os.path.abspath(root)
    while True:
        for exclude in _info_excludes(f"{directory}/.git"):
            if _has_rules(exclude):
                return True
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return any(_has_rules(path) for path in git_global_excludes())


def _info_excludes(git: str) -> list[str]:
    """The ``info/exclude`` files of the repository whose ``.git`` entry is ``git`` (none when
    there is no such entry)."""
    try:
        is_dir = os.path.isdir(git)
        if not is_dir and not os.path.lexists(git):
            return []
        if is_dir:
            return [f"{git}/info/exclude"]
        with open(git, encoding="utf-8") as pointer:
            text = pointer.read(4096).strip()
    except (OSError, UnicodeDecodeError):
        return [git]  # unreadable: _has_rules says it has rules
    if not text.startswith("gitdir:"):
        return [git]
    gitdir = os.path.join(os.path.dirname(git), text[len("gitdir:") :].strip())
    found = [f"{gitdir}/info/exclude"]
    try:
        with open(f"{gitdir}/commondir", encoding="utf-8") as common:
            found.append(f"{os.path.join(gitdir, common.read(4096).strip())}/info/exclude")
    except FileNotFoundError:
        pass
    except (OSError, UnicodeDecodeError):
        found.append(git)
    return found


def _has_rules(path: str) -> bool:
    try:
        with open(path, "rb") as file:
            data = file.read(1 << 20)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    if path.endswith("/.git"):  # a .git file that is not a pointer we could follow
        return True
    return any(line.strip() and not line.startswith(b"#") for line in data.splitlines())
