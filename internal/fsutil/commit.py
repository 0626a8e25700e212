"""Committing file changes: all or nothing, never lost, never misdirected, crash-safe.

Every file tool writes through :func:`commit`. For one file or a patch's whole set:

1. each target's directory is opened race-free (:mod:`.anchored`) and ``flock``-ed, in a fixed
   order — this serialises writers across sessions and processes;
2. under the lock, each target must still be the snapshot the change was computed from: when
   the caller passes the stat it read with the bytes (:attr:`Change.seen`) and the entry's stat
   is still that one, no second read is needed here; otherwise it is read and must hold exactly
   the expected bytes (a new file must still be absent). If not, nothing is written and the
   error says "modified since it was last read" — an edit either lands or is refused, never
   reported as done and lost;
3. a journal listing every temp file and backup is written to the state directory *before* any
   of them exists, then new contents are staged beside their targets and the originals kept as
   hard links (``.name.<id>.orig``), and the journal records the new files' inodes;
4. each target is swapped with its staged file without hiding a save of a program that does not
   take our lock (an editor, a script; swap.py): under a read lease, which no one may hold the
   file open for writing against, its bytes are compared with the snapshot once more, then
   ``renameat2(RENAME_EXCHANGE)`` hands back exactly what the name held at that instant; if that
   is not the verified file, or someone began opening it for writing, the newest outside save is
   given its name back and nothing is written ("modified while saving"). Then the journal is
   marked committed, backups and journal are removed.

If the process dies in between, :func:`~.journal.recover` (run before the next tool call in that
workspace) rolls a prepared journal back, or finishes cleaning a committed one, and no temp file
or backup is left in the workspace.

Files as the user left them: mode and owner are kept (root re-applies the owner; a file owned
by someone else that we cannot chown is written in place — the one case where a concurrent
reader could see a partial write). Hard links: a file with several names is *replaced* like any
other, which breaks the link — the other names (which may be outside the workspace, where we
must never write) keep the old content, and the result says so (:attr:`Committed.broken_links`).
Writing through the link in place would change files we cannot see and let readers see torn
content. Read-only files are refused.
"""

from __future__ import annotations

import errno
import os
import stat
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import ChangedSinceRead, FileExists, ModifiedWhileSaving, NotWritable, ReadOnlyFile, ToolError
from .anchored import AnchoredDir, lock_dirs, open_dir
from .fs import REAL, FileSystem, exists, overwrite, read_at, write_new
from .journal import Journal, cleanup, recover, undo, workspace_key
from .paths import not_regular_error, os_error_code, os_error_message
from .swap import Target, delete, swap_in, verified

__all__ = ["Change", "Committed", "ModifiedWhileSaving", "commit", "modifiable_error", "recover", "workspace_key"]

Check = Callable[[], None]


class Committed(dict[Path, os.stat_result]):
    """The new stat of every file written, plus what the caller must tell the user."""

    def __init__(self) -> None:
        super().__init__()
        #: Files that had other hard links: path -> how many other names kept the old content.
        self.broken_links: dict[Path, int] = {}


@dataclass(frozen=True)
class Change:
    """One operation of a commit.

    ``write``: ``path`` (a resolved file path) gets ``data``; ``expect`` is the content it was
    computed from, or None for a file that must not exist yet.
    ``delete``: the entry at ``path`` is removed — a symlink itself, never its target; ``expect``
    is the content read through it.
    ``move``: the entry at ``source`` (a file or a symlink) is renamed to ``path``, which must not
    exist; then, when ``data`` is given, the moved file's content is replaced (through a link).
    ``seen``: the stat taken when ``expect`` was read (the snapshot), when the caller has it.
    """

    kind: Literal["write", "delete", "move"]
    path: Path
    data: bytes | None = None
    expect: bytes | None = None
    source: Path | None = None
    seen: os.stat_result | None = field(default=None, compare=False)


@dataclass
class _Step:
    """A change bound to its open directories, with the names the journal records."""

    change: Change
    directory: AnchoredDir
    name: str
    fs: FileSystem
    source_dir: AnchoredDir | None = None
    source_name: str | None = None
    tmp: str | None = None
    backup: str | None = None
    source_backup: str | None = None
    in_place: bool = False
    created_inode: int | None = None
    #: The verified target's stat (identity, mode, owner; st_nlink - 1 other names), under the lock.
    target_stat: os.stat_result | None = None
    #: Whether the target itself was changed yet (an untouched step is only cleaned up on rollback).
    touched: bool = False
    done: bool = False
    journal: dict[str, Any] = field(default_factory=dict)

    @property
    def identity(self) -> tuple[int, int] | None:
        st = self.target_stat
        return None if st is None else (st.st_dev, st.st_ino)

    @property
    def other_links(self) -> int:
        return 0 if self.target_stat is None else self.target_stat.st_nlink - 1

    @property
    def source_fd(self) -> int | None:
        return self.source_dir.fd if self.source_dir is not None else None


def modifiable_error(path: Path, st: os.stat_result) -> ToolError | None:
    """Why an existing file must not be changed, or None."""
    error = not_regular_error(path, st, "only regular files can be changed; nothing was written.")
    if error is not None:
        return error
    mode = stat.S_IMODE(st.st_mode)
    if not mode & 0o222:
        return ReadOnlyFile(str(path), mode)
    if os.geteuid() != 0 and not os.access(path, os.W_OK):
        return NotWritable(str(path))
    return None


def commit(
    changes: Sequence[Change], *, roots: list[Path], journal_dir: Path, workspace: Path, check: Check | None = None,
    fs: FileSystem = REAL,
) -> Committed:  # fmt: skip
    """Apply every change or none; returns the new stat of every file written.

    OS failures (no space, no permission, a read-only file system) roll everything back and
    become a :class:`ToolError` naming the file and the reason. ``fs`` is the file system the
    commit works through (tests pass one that fails or stops at a chosen operation).
    """
    try:
        return _commit(changes, roots=roots, journal_dir=journal_dir, workspace=workspace, check=check, fs=fs)
    except OSError as exc:
        where = Path(exc.filename) if isinstance(exc.filename, str) and os.path.isabs(exc.filename) else None
        target = where or next((c.path for c in changes), Path("."))
        raise ToolError(f"{os_error_message(exc, target)} Nothing was changed.", code=os_error_code(exc)) from None


def _commit(
    changes: Sequence[Change], *, roots: list[Path], journal_dir: Path, workspace: Path, check: Check | None,
    fs: FileSystem,
) -> Committed:  # fmt: skip
    steps: list[_Step] = []
    try:
        for change in changes:
            steps.append(_bind(change, roots, fs))
        lock_dirs([d for s in steps for d in (s.directory, s.source_dir) if d is not None], check)
        for step in steps:
            _recheck(step)
        with Journal.create(journal_dir, workspace, fs) as journal:
            for step in steps:
                _plan_names(step)
            journal.write("prepared", [s.journal for s in steps])
            try:
                for step in steps:
                    _stage(step)
                journal.write("staged", [s.journal for s in steps])  # now with the inodes undo must recognise
                for step in steps:
                    _apply(step)
                    step.done = True
            except BaseException:
                for step in reversed(steps):
                    if step.touched:
                        undo(step.journal, step.directory.fd, step.source_fd, fs)
                    else:  # never changed: restoring a backup could overwrite an outside save
                        cleanup(step.journal, step.directory.fd, step.source_fd, fs)
                raise
            journal.write("committed", [s.journal for s in steps])
            for step in steps:
                cleanup(step.journal, step.directory.fd, step.source_fd, fs)
            stats = Committed()
            for s in steps:
                if s.change.kind != "delete":
                    stats[s.change.path] = fs.stat(s.name, dir_fd=s.directory.fd)
                if s.other_links and s.change.kind == "write" and not s.in_place:
                    stats.broken_links[s.change.path] = s.other_links
            # No directory fsync: see docs/safety.md, "Durability" (the staged content's fsync is
            # what keeps a file old-or-new across a power loss; the rename reaches the disk with
            # the file system's next journal commit).
        return stats
    finally:
        for step in steps:
            step.directory.close()
            if step.source_dir is not None:
                step.source_dir.close()


def _bind(change: Change, roots: list[Path], fs: FileSystem) -> _Step:
    create = change.kind in ("write", "move")
    directory = open_dir(change.path.parent, roots, create=create)
    step = _Step(change, directory, change.path.name, fs)
    if change.kind == "move":
        assert change.source is not None
        try:
            step.source_dir = open_dir(change.source.parent, roots)
        except BaseException:
            directory.close()
            raise
        step.source_name = change.source.name
    return step


def _changed(path: Path) -> ToolError:
    return ChangedSinceRead(str(path), "by another session or program", nothing_written=True)


def _same_snapshot(seen: os.stat_result | None, st: os.stat_result) -> bool:
    """``st`` is the very file state ``seen`` was taken of: same inode, size, mtime and ctime
    (ctime cannot be set back from user space, so any write since shows)."""
    if seen is None:
        return False
    return (seen.st_dev, seen.st_ino, seen.st_size, seen.st_mtime_ns, seen.st_ctime_ns) == (
        st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns,
    )  # fmt: skip


def _recheck(step: _Step) -> None:
    """Under the lock: the target is exactly as the change expects."""
    change, fs = step.change, step.fs
    if change.kind == "move":
        assert step.source_dir is not None and step.source_name is not None and change.source is not None
        if exists(fs, step.directory.fd, step.name):
            raise FileExists(f"Move to {change.path}: the file already exists; nothing was written.", str(change.path))
        current = read_at(fs, step.source_dir.fd, step.source_name, follow=True)
        if current is None or current[0] != change.expect:
            raise _changed(change.source)
        if change.data is not None:
            if stat.S_ISLNK(fs.stat(step.source_name, dir_fd=step.source_dir.fd, follow_symlinks=False).st_mode):
                raise ToolError(
                    f"{change.source} is a symlink: move it, and change its target's content separately.",
                    code="unsupported_change",
                )
            _check_modifiable(change.source, current[1])
        return
    follow = change.kind == "delete"  # a deleted link is compared by what it pointed to
    if change.expect is None:
        if exists(fs, step.directory.fd, step.name):
            raise ToolError(
                f"{change.path} was created by someone else meanwhile; nothing was written.",
                code="modified_while_saving",
            )
        return
    st = _stat_entry(step, follow)
    if st is None or not _same_snapshot(change.seen, st):
        current = read_at(fs, step.directory.fd, step.name, follow=follow)
        if current is None or current[0] != change.expect:
            raise _changed(change.path)
        st = current[1]
    # else: the snapshot is current; its bytes are compared once, just before the swap.
    step.target_stat = st
    if change.kind == "write":
        _check_modifiable(change.path, st)
        step.in_place = not _can_own_like(st)


def _stat_entry(step: _Step, follow: bool) -> os.stat_result | None:
    try:
        st = step.fs.stat(step.name, dir_fd=step.directory.fd, follow_symlinks=follow)
    except FileNotFoundError:
        return None
    return st if stat.S_ISREG(st.st_mode) else None


def _check_modifiable(path: Path, st: os.stat_result) -> None:
    error = modifiable_error(path, st)
    if error is not None:
        raise error


def _can_own_like(st: os.stat_result) -> bool:
    """Can a new file we create carry ``st``'s owner and group?"""
    if os.geteuid() == 0:
        return True
    return st.st_uid == os.geteuid() and (st.st_gid == os.getegid() or st.st_gid in os.getgroups())


def _plan_names(step: _Step) -> None:
    """The temp and backup names, recorded in the journal before either exists."""
    token = uuid.uuid4().hex[:12]
    change = step.change
    step.journal = {
        "kind": change.kind,
        "dir": str(change.path.parent),
        "name": step.name,
        "in_place": step.in_place,
    }
    if change.kind == "move":
        assert change.source is not None and step.source_name is not None
        step.source_backup = f".{step.source_name}.{token}.orig"
        step.journal.update(
            source_dir=str(change.source.parent), source=step.source_name, source_backup=step.source_backup
        )
    if change.kind in ("write", "delete") or (change.kind == "move" and change.data is not None):
        step.tmp = f".{step.name}.{token}.tmp"  # a delete's claim name: swap.delete
        step.journal["tmp"] = step.tmp
    if change.expect is not None and change.kind != "move":
        step.backup = f".{step.name}.{token}.orig"
        step.journal["backup"] = step.backup


def _stage(step: _Step) -> None:
    change, fs = step.change, step.fs
    fd = step.directory.fd
    if step.source_backup is not None:
        assert step.source_dir is not None and step.source_name is not None
        source_fd = step.source_dir.fd
        fs.link(step.source_name, step.source_backup, src_dir_fd=source_fd, dst_dir_fd=source_fd)
        step.journal["source_inode"] = fs.stat(step.source_name, dir_fd=source_fd, follow_symlinks=False).st_ino
    if step.backup is not None:
        if step.in_place:  # the file keeps its inode (and owner): back up a copy
            # Written under the temp name first: a backup that exists is always complete.
            assert step.tmp is not None
            write_new(fs, fd, step.tmp, change.expect or b"", None)
            fs.rename(step.tmp, step.backup, src_dir_fd=fd, dst_dir_fd=fd)
        else:
            fs.link(step.name, step.backup, src_dir_fd=fd, dst_dir_fd=fd)
    if step.tmp is not None and not step.in_place and change.kind != "delete":
        like = None
        if change.kind == "write" and change.expect is not None:
            like = step.target_stat  # the entry checked under the lock (never a symlink: writes follow)
        elif change.kind == "move":
            assert step.source_dir is not None and step.source_name is not None
            like = fs.stat(step.source_name, dir_fd=step.source_dir.fd)
        assert change.data is not None
        step.created_inode = write_new(fs, fd, step.tmp, change.data, like)
        step.journal["created_inode"] = step.created_inode


def _apply(step: _Step) -> None:
    change, fs = step.change, step.fs
    fd = step.directory.fd
    target = _target(step)
    if change.kind == "delete" and target is not None:
        step.touched = True
        try:  # claimed (renamed to its temp name) first: an outside save is never deleted
            delete(fs, fd, step.name, target, follow=True)
        except ModifiedWhileSaving:
            step.touched = False
            raise
    elif change.kind == "delete":
        fs.unlink(step.name, dir_fd=fd)
    elif change.kind == "move":
        step.touched = True
        assert step.source_dir is not None and step.source_name is not None
        _link_or_rename(fs, step.source_dir.fd, step.source_name, fd, step.name)
        if change.data is not None:
            _replace_content(step, fd)
    elif change.expect is None:
        step.touched = True
        assert step.tmp is not None
        # link() fails if the name exists: a file created meanwhile is never overwritten.
        fs.link(step.tmp, step.name, src_dir_fd=fd, dst_dir_fd=fd)
        fs.unlink(step.tmp, dir_fd=fd)
    elif step.in_place:
        assert target is not None
        if verified(fs, fd, step.name, target, follow=False) is None:
            raise ModifiedWhileSaving(str(change.path))
        step.touched = True
        _replace_content(step, fd)
    else:
        assert target is not None
        step.touched = True
        try:  # the outside-save-safe swap: verified under a lease, exchanged, checked
            swap_in(fs, fd, step.name, target, ours=step.created_inode)
        except ModifiedWhileSaving:
            step.touched = False
            raise


def _target(step: _Step) -> Target | None:
    """What the step's existing target must still be when it is replaced or deleted."""
    change = step.change
    if step.identity is None or change.expect is None or change.kind == "move":
        return None
    return Target(step.identity, change.expect, str(change.path), step.tmp)


def _replace_content(step: _Step, fd: int) -> None:
    """New content for a name this commit made (a moved file), or written in place (an owner
    we cannot give a new file)."""
    assert step.change.data is not None
    if step.in_place:
        overwrite(step.fs, fd, step.name, step.change.data)
        return
    assert step.tmp is not None
    step.fs.rename(step.tmp, step.name, src_dir_fd=fd, dst_dir_fd=fd)


def _link_or_rename(fs: FileSystem, src_fd: int, src: str, dst_fd: int, dst: str) -> None:
    """Move an entry without replacing an existing destination (link + unlink; rename where
    links are not possible, after checking the destination under the lock)."""
    try:
        fs.link(src, dst, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
            raise
        fs.rename(src, dst, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
        return
    fs.unlink(src, dir_fd=src_fd)
