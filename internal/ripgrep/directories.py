"""Which directories within a depth an ls shows: those holding, at any depth, a file it would list.

``rg --files --max-depth N`` lists the files within the depth but says nothing of a directory
whose files are all deeper (``src/`` holding only ``src/pkg/mod.py`` at depth 1), nor whether a
directory holds only ignored files (ls does not show those). This walk answers both without
listing the whole tree: it reads the directories within the depth and, below the last level,
looks inside each directory only until it finds one file that is not ignored (files of a
directory before its subdirectories, so a shallow file ends the look early).

Ignore rules are those of the pure-Python fallback (``.gitignore``, ``.ignore`` and ``.rgignore``
files in the directory and its ancestors, with rg's precedence; the ``--glob`` excludes; ``.git``
never; not git's info/exclude nor the global excludes file); a directory rg itself listed a file
in is shown whatever they say. Symlinks are not followed, as rg does not follow them.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from contextlib import closing
from pathlib import Path

from ..cancel import CancelToken
from .dirents import Kind, entries
from .fallback import IGNORE_FILES, GlobSet, IgnoreRule, ignored, read_ignore, walk_start
from .proofs import keep_proof
from .query import FileQuery

#: Directories whose last look found a file (path → that file, relative to it), at most this
#: many: an agent lists the same tree again and again, and checking one known file costs a few
#: stats where looking for one reads a directory per level.
WITNESSES_KEPT = 4096
_witnesses: dict[str, str] = {}
#: Witness files (see :func:`load_witnesses`) read by this process already.
_loaded: set[Path] = set()
#: Directories whose witness changed since the witnesses were last kept (:func:`save_witnesses`).
_changed: set[str] = set()


def witness_file(store: Path, root: str) -> Path:
    """The file in the directory ``store`` that keeps the witnesses of ``root`` across processes
    (made on the caller's thread: a confined walk cannot import hashlib)."""
    import hashlib

    return store / f"{hashlib.sha256(root.encode('utf-8', 'surrogateescape')).hexdigest()[:32]}.json"


def load_witnesses(path: Path, root: str) -> None:
    """Take in the witnesses of ``root`` kept in ``path`` (once per process): a CLI call is a new
    process, and without them its first look reads every directory again. What the file says
    is only where to look first; each witness is checked before it counts."""
    if path in _loaded:
        return
    _loaded.add(path)
    try:
        kept = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return
    if not isinstance(kept, dict):
        return
    prefix = root.rstrip("/") + "/"
    for directory, witness in kept.items():
        if isinstance(directory, str) and isinstance(witness, str) and directory.startswith(prefix):
            parts = witness.split("/")
            if all(part not in ("", ".", "..") for part in parts):
                _witnesses.setdefault(directory, witness)


def save_witnesses(path: Path, root: str) -> None:
    """Keep the witnesses of the directories below ``root`` for the next process (when they
    changed); a cache: losing it, or a race between two writers, only costs a slower look."""
    prefix = root.rstrip("/") + "/"
    changed = {d for d in _changed if d.startswith(prefix)}
    if not changed:
        return
    _changed.difference_update(changed)
    below = {d: w for d, w in list(_witnesses.items()) if d.startswith(prefix)}
    staged = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            json.dump(below, file)
        os.replace(staged, path)
    except OSError:
        with contextlib.suppress(OSError):
            staged.unlink()



def shown_directories(query: FileQuery, cancel: CancelToken) -> list[str]:
    """Paths relative to ``query.root`` (``/``-separated) of the directories at most
    ``query.max_depth`` levels down that hold a file the listing would show."""
    assert query.max_depth is not None, "a depth-limited listing only"
    globs, stack = walk_start(query)
    shown: list[str] = []
    while stack:
        cancel.raise_if_cancelled()
        directory, rel_dir, rules, level = stack.pop()
        for path, rel in _subdirectories(directory, rel_dir, rules, globs, follow=not rel_dir):
            if not holds_file(path, rel, rules, globs, cancel):
                continue
            shown.append(rel)
            if level < query.max_depth:
                stack.append((path, rel, rules + read_ignore(path, rel), level + 1))
    return shown


def _subdirectories(
    directory: str, rel_dir: str, rules: list[IgnoreRule], globs: GlobSet, *, follow: bool
) -> list[tuple[str, str]]:
    """The (path, relative path) of the directories directly inside that are not ignored; the
    root itself may be reached through a symlink (rg follows a path it is given)."""
    found = []
    for name, kind in entries(directory, follow=follow):
        if kind is Kind.DIRECTORY:
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if globs.allows(rel, True) and not ignored(rel, True, rules):
                found.append((f"{directory}/{name}", rel))
    return found


def holds_file(
    directory: str, rel_dir: str, above: list[IgnoreRule], globs: GlobSet, cancel: CancelToken, *,
    strict: bool = False, rules_key: object = None,
) -> bool:  # fmt: skip
    """Whether a file that is not ignored lies anywhere below ``directory`` (not itself ignored;
    ``above``: the rules in force in its parent). The file the last look found there is checked
    first (:func:`_still_shown`); only when it no longer holds is the directory looked into.

    ``strict``: ignore files are read strictly (fallback.InexactRules). ``rules_key``: a proof of
    the answer under these rules is kept (proofs.py)."""
    started = time.time_ns()
    witness = _witnesses.get(directory)
    if witness is not None and _still_shown(directory, rel_dir, above, globs, witness, strict=strict):
        if rules_key is not None:
            keep_proof(directory, _on_the_way(directory, witness), rules_key, True, started)
        return True
    visited: list[str] | None = [] if rules_key is not None else None
    found = _look(directory, rel_dir, above, globs, cancel, strict=strict, visited=visited)
    if found != witness:
        _changed.add(directory)
    if found is None:
        _witnesses.pop(directory, None)
        if visited is not None:
            keep_proof(directory, visited, rules_key, False, started)
        return False
    if len(_witnesses) >= WITNESSES_KEPT:
        _witnesses.clear()
    _witnesses[directory] = found
    if rules_key is not None:
        keep_proof(directory, _on_the_way(directory, found), rules_key, True, started)
    return True


def _on_the_way(directory: str, witness: str) -> list[str]:
    """``directory`` and each directory between it and its ``witness`` file."""
    parts = witness.split("/")[:-1]
    return ["/".join([directory, *parts[:depth]]) for depth in range(len(parts) + 1)]


def _still_shown(
    directory: str, rel_dir: str, above: list[IgnoreRule], globs: GlobSet, witness: str, *, strict: bool = False
) -> bool:
    """Whether the file ``witness`` (relative to ``directory``) is still one the listing shows:
    every directory on the way still a directory (not a symlink) and not ignored, the file still
    a regular file and not ignored, under the ignore files as they are now."""
    current, rel_current, rules = directory, rel_dir, above
    parts = witness.split("/")
    for index, part in enumerate(parts):
        rules = rules + read_ignore(current, rel_current, strict=strict)
        path, rel = f"{current}/{part}", f"{rel_current}/{part}"
        is_dir = index < len(parts) - 1
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            return False
        if not (stat.S_ISDIR(mode) if is_dir else stat.S_ISREG(mode)):
            return False
        if not globs.allows(rel, is_dir) or ignored(rel, is_dir, rules):
            return False
        current, rel_current = path, rel
    return True


def _look(
    directory: str, rel_dir: str, above: list[IgnoreRule], globs: GlobSet, cancel: CancelToken, *,
    strict: bool = False, visited: list[str] | None = None,
) -> str | None:  # fmt: skip
    """A file that is not ignored below ``directory``, relative to it; None when there is none.

    A directory's files are looked at before its subdirectories, and the look ends at the first
    file shown, so a directory with a file near its top costs a read of a few entries. Its own
    ignore files are read when a file is met before the end of its entries, else only if its
    entries showed one (most directories have none: no lookups for them). ``visited`` gets
    every directory read."""
    pending = [(directory, rel_dir, above)]
    while pending:
        cancel.raise_if_cancelled()
        current, rel_current, current_above = pending.pop()
        if visited is not None:
            visited.append(current)
        subdirectories = []
        own: list[IgnoreRule] | None = None
        has_ignore_file = False
        with closing(entries(current)) as found:  # closed (its fd too) when the look ends early
            for name, kind in found:
                rel = f"{rel_current}/{name}"
                has_ignore_file = has_ignore_file or name in IGNORE_FILES
                if kind is Kind.DIRECTORY:
                    subdirectories.append((f"{current}/{name}", rel))
                elif kind is Kind.FILE:
                    if not globs.allows(rel, False):
                        continue
                    if own is None:  # met before the end: its own ignore files may come later
                        own = read_ignore(current, rel_current, strict=strict)
                    if not ignored(rel, False, current_above + own):
                        return rel[len(rel_dir) + 1 :]
        if own is None:
            own = read_ignore(current, rel_current, strict=strict) if has_ignore_file else []
        rules = current_above + own
        for path, rel in subdirectories:
            if globs.allows(rel, True) and not ignored(rel, True, rules):
                pending.append((path, rel, rules))
    return None
