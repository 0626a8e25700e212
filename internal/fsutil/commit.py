"""Committing file changes: all or nothing, never lost, never misdirected, crash-safe.

Every file tool writes through :func:`commit`. For one file or a patch's whole set:

1. each target's directory is opened race-free (:mod:`.anchored`) and ``flock``-ed, in a fixed
   order — this serialises writers across sessions and processes;
2. under the lock, each target is read again and must still hold exactly the bytes the change
   was computed from (a new file must still be absent): otherwise nothing is written and the
   error says "modified since it was last read" — an edit either lands or is refused, never
   reported as done and lost;
3. a journal listing every temp file and backup is written to the state directory *before* any
   of them exists, then new contents are staged beside their targets and the originals kept as
   hard links (``.name.<id>.orig``), and the journal records the new files' inodes;
4. immediately before each swap the target is verified once more (same inode, same bytes): a
   program that does not take our lock (an editor, a script) may have saved it meanwhile, and
   then nothing is written ("modified while saving");
5. targets are swapped in with ``renameat2(RENAME_EXCHANGE)`` (plain ``rename`` where the file
   system lacks it: each file is old or new at every instant, never missing). The exchange hands
   back exactly what the name held at the instant of the swap; if that is not the verified file
   (an outside save landed in the last microseconds) it is exchanged back and nothing is
   written. Then the journal is marked committed, backups and journal are removed.

If the process dies in between, :func:`recover` (run before the next tool call in that
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

import contextlib
import errno
import fcntl
import functools
import hashlib
import json
import os
import stat
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from ..errors import ToolError
from .anchored import AnchoredDir, lock_dirs, open_dir
from .paths import not_regular_error, os_error_message

#: Mode for new files, before the process umask.
NEW_FILE_MODE = 0o666
JOURNAL_VERSION = 1

Check = Callable[[], None]

#: renameat2 flag: swap two names atomically (Linux >= 3.15; tmpfs, ext4, xfs, btrfs, overlayfs).
RENAME_EXCHANGE = 2


class ModifiedWhileSaving(ToolError):
    """A program outside our lock saved the target between the last check and the swap."""


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
    """

    kind: Literal["write", "delete", "move"]
    path: Path
    data: bytes | None = None
    expect: bytes | None = None
    source: Path | None = None


@dataclass
class _Step:
    """A change bound to its open directories, with the names the journal records."""

    change: Change
    directory: AnchoredDir
    name: str
    source_dir: AnchoredDir | None = None
    source_name: str | None = None
    tmp: str | None = None
    backup: str | None = None
    source_backup: str | None = None
    in_place: bool = False
    created_inode: int | None = None
    #: The verified target's (dev, inode) and its other names (st_nlink - 1), set under the lock.
    identity: tuple[int, int] | None = None
    other_links: int = 0
    #: Whether the target itself was changed yet (an untouched step is only cleaned up on rollback).
    touched: bool = False
    done: bool = False
    journal: dict[str, Any] = field(default_factory=dict)


def modifiable_error(path: Path, st: os.stat_result) -> ToolError | None:
    """Why an existing file must not be changed, or None."""
    error = not_regular_error(path, st, "only regular files can be changed; nothing was written.")
    if error is not None:
        return error
    mode = stat.S_IMODE(st.st_mode)
    if not mode & 0o222:
        return ToolError(
            f"{path} is read-only (mode {mode:04o}); it was not changed. If it should change, make it writable "
            "first (chmod u+w) and read it again.",
            {"error": "read_only_file"},
        )
    if os.geteuid() != 0 and not os.access(path, os.W_OK):
        return ToolError(f"{path} is not writable by this user; it was not changed.", {"error": "permission_denied"})
    return None


def commit(
    changes: Sequence[Change], *, roots: list[Path], journal_dir: Path, workspace: Path, check: Check | None = None
) -> Committed:
    """Apply every change or none; returns the new stat of every file written.

    OS failures (no space, no permission, a read-only file system) roll everything back and
    become a :class:`ToolError` naming the file and the reason.
    """
    try:
        return _commit(changes, roots=roots, journal_dir=journal_dir, workspace=workspace, check=check)
    except OSError as exc:
        where = Path(exc.filename) if isinstance(exc.filename, str) and os.path.isabs(exc.filename) else None
        target = where or next((c.path for c in changes), Path("."))
        raise ToolError(f"{os_error_message(exc, target)} Nothing was changed.") from None


def _commit(
    changes: Sequence[Change], *, roots: list[Path], journal_dir: Path, workspace: Path, check: Check | None
) -> Committed:
    steps: list[_Step] = []
    try:
        for change in changes:
            steps.append(_bind(change, roots))
        lock_dirs([d for s in steps for d in (s.directory, s.source_dir) if d is not None], check)
        for step in steps:
            _recheck(step)
        with _Journal.create(journal_dir, workspace) as journal:
            for step in steps:
                _plan_names(step)
            journal.write("prepared", steps)
            try:
                for step in steps:
                    _stage(step)
                journal.write("staged", steps)  # now with the inodes undo must recognise
                for step in steps:
                    _apply(step)
                    step.done = True
            except BaseException:
                for step in reversed(steps):
                    source_fd = step.source_dir.fd if step.source_dir else None
                    if step.touched:
                        _undo(step.journal, step.directory.fd, source_fd)
                    else:  # never changed: restoring a backup could overwrite an outside save
                        _cleanup(step.journal, step.directory.fd, source_fd)
                raise
            journal.write("committed", steps)
            for step in steps:
                _cleanup(step.journal, step.directory.fd, step.source_dir.fd if step.source_dir else None)
            stats = Committed()
            for s in steps:
                if s.change.kind != "delete":
                    stats[s.change.path] = _stat_after(s)
                if s.other_links and s.change.kind == "write" and not s.in_place:
                    stats.broken_links[s.change.path] = s.other_links
            for directory in {s.directory.key: s.directory for s in steps}.values():
                _fsync(directory.fd)
        return stats
    finally:
        for step in steps:
            step.directory.close()
            if step.source_dir is not None:
                step.source_dir.close()


def _bind(change: Change, roots: list[Path]) -> _Step:
    create = change.kind in ("write", "move")
    directory = open_dir(change.path.parent, roots, create=create)
    step = _Step(change, directory, change.path.name)
    if change.kind == "move":
        assert change.source is not None
        try:
            step.source_dir = open_dir(change.source.parent, roots)
        except BaseException:
            directory.close()
            raise
        step.source_name = change.source.name
    return step


def _read_at(fd: int, name: str, *, follow: bool) -> tuple[bytes, os.stat_result] | None:
    """Content and stat of ``name`` in the directory ``fd``; None when it does not exist."""
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | (0 if follow else os.O_NOFOLLOW)
    try:
        file_fd = os.open(name, flags, dir_fd=fd)
    except FileNotFoundError:
        return None
    try:
        st = os.fstat(file_fd)
        if not stat.S_ISREG(st.st_mode):
            raise ToolError(f"{name} is no longer a regular file; nothing was written.", {"error": "not_regular_file"})
        chunks = []
        while chunk := os.read(file_fd, max(st.st_size + 1, 65536)):
            chunks.append(chunk)
        return b"".join(chunks), st
    finally:
        os.close(file_fd)


def _exists(fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _changed(path: Path) -> ToolError:
    return ToolError(
        f"File {path} has been modified since it was last read (by another session or program); "
        "nothing was written. Read it again before editing."
    )


def _recheck(step: _Step) -> None:
    """Under the lock: the target is exactly as the change expects."""
    change = step.change
    if change.kind == "move":
        assert step.source_dir is not None and step.source_name is not None and change.source is not None
        if _exists(step.directory.fd, step.name):
            raise ToolError(f"Move to {change.path}: the file already exists; nothing was written.")
        current = _read_at(step.source_dir.fd, step.source_name, follow=True)
        if current is None or current[0] != change.expect:
            raise _changed(change.source)
        if change.data is not None:
            if stat.S_ISLNK(os.stat(step.source_name, dir_fd=step.source_dir.fd, follow_symlinks=False).st_mode):
                raise ToolError(f"{change.source} is a symlink: move it, and change its target's content separately.")
            _check_modifiable(change.source, current[1])
        return
    follow = change.kind == "delete"  # a deleted link is compared by what it pointed to
    current = _read_at(step.directory.fd, step.name, follow=follow)
    if change.expect is None:
        if current is not None or _exists(step.directory.fd, step.name):
            raise ToolError(f"{change.path} was created by someone else meanwhile; nothing was written.")
        return
    if current is None or current[0] != change.expect:
        raise _changed(change.path)
    step.identity = (current[1].st_dev, current[1].st_ino)
    step.other_links = current[1].st_nlink - 1
    if change.kind == "write":
        _check_modifiable(change.path, current[1])
        step.in_place = not _can_own_like(current[1])


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
    if change.kind == "write" or (change.kind == "move" and change.data is not None):
        step.tmp = f".{step.name}.{token}.tmp"
        step.journal["tmp"] = step.tmp
    if change.expect is not None and change.kind != "move":
        step.backup = f".{step.name}.{token}.orig"
        step.journal["backup"] = step.backup


def _stage(step: _Step) -> None:
    change = step.change
    fd = step.directory.fd
    if step.source_backup is not None:
        assert step.source_dir is not None and step.source_name is not None
        source_fd = step.source_dir.fd
        os.link(step.source_name, step.source_backup, src_dir_fd=source_fd, dst_dir_fd=source_fd, follow_symlinks=False)
        step.journal["source_inode"] = os.stat(step.source_name, dir_fd=source_fd, follow_symlinks=False).st_ino
    if step.backup is not None:
        if step.in_place:  # the file keeps its inode (and owner): back up a copy
            # Written under the temp name first: a backup that exists is always complete.
            assert step.tmp is not None
            _write_new(fd, step.tmp, change.expect or b"", None)
            os.rename(step.tmp, step.backup, src_dir_fd=fd, dst_dir_fd=fd)
        else:
            os.link(step.name, step.backup, src_dir_fd=fd, dst_dir_fd=fd, follow_symlinks=False)
    if step.tmp is not None and not step.in_place:
        like = None
        if change.kind == "write" and change.expect is not None:
            like = os.stat(step.name, dir_fd=fd, follow_symlinks=False)
        elif change.kind == "move":
            assert step.source_dir is not None and step.source_name is not None
            like = os.stat(step.source_name, dir_fd=step.source_dir.fd)
        assert change.data is not None
        step.created_inode = _write_new(fd, step.tmp, change.data, like)
        step.journal["created_inode"] = step.created_inode


def _write_new(fd: int, name: str, data: bytes, like: os.stat_result | None) -> int:
    """Create ``name`` (exclusively, never through a link) with ``data``, fsynced, carrying
    ``like``'s mode and owner (a new file: the default mode)."""
    file_fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=fd)
    try:
        _write_all(file_fd, data)
        if like is not None:
            os.fchmod(file_fd, stat.S_IMODE(like.st_mode))
            if (like.st_uid, like.st_gid) != (os.geteuid(), os.getegid()):
                with contextlib.suppress(PermissionError):
                    os.fchown(file_fd, like.st_uid, like.st_gid)
        else:
            os.fchmod(file_fd, NEW_FILE_MODE & ~_umask())
        os.fsync(file_fd)
        return os.fstat(file_fd).st_ino
    except BaseException:
        os.close(file_fd)
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=fd)
        raise
    finally:
        with contextlib.suppress(OSError):
            os.close(file_fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _apply(step: _Step) -> None:
    change = step.change
    fd = step.directory.fd
    if step.identity is not None and change.kind != "move":
        _verify_unchanged(step, fd, step.name)
    step.touched = True
    if change.kind == "delete":
        os.unlink(step.name, dir_fd=fd)
    elif change.kind == "move":
        assert step.source_dir is not None and step.source_name is not None
        _link_or_rename(step.source_dir.fd, step.source_name, fd, step.name)
        if change.data is not None:
            _replace_content(step, fd)
    elif change.expect is None:
        assert step.tmp is not None
        # link() fails if the name exists: a file created meanwhile is never overwritten.
        os.link(step.tmp, step.name, src_dir_fd=fd, dst_dir_fd=fd, follow_symlinks=False)
        os.unlink(step.tmp, dir_fd=fd)
    else:
        _replace_content(step, fd)


def _replace_content(step: _Step, fd: int) -> None:
    """New content for an existing name: rename the staged file over it, or write in place
    (several hard links, or an owner we cannot give a new file)."""
    assert step.change.data is not None
    if step.in_place:
        target = os.open(step.name, os.O_WRONLY | os.O_CLOEXEC | os.O_NOFOLLOW, dir_fd=fd)
        try:
            _write_all(target, step.change.data)
            os.ftruncate(target, len(step.change.data))
            os.fsync(target)
        finally:
            os.close(target)
        return
    assert step.tmp is not None
    if step.identity is None:  # a moved file's new content: the name was made by this commit
        os.rename(step.tmp, step.name, src_dir_fd=fd, dst_dir_fd=fd)
        return
    if not _exchange(fd, step.tmp, step.name):
        os.rename(step.tmp, step.name, src_dir_fd=fd, dst_dir_fd=fd)
        return
    # step.tmp now names what the target was at the instant of the swap: it must be the file we
    # verified, unchanged; otherwise an outside save just landed — give it its name back.
    try:
        _verify_unchanged(step, fd, step.tmp)
    except ModifiedWhileSaving:
        if not _exchange(fd, step.tmp, step.name):
            raise OSError(errno.EIO, "could not exchange back after an outside save") from None
        step.touched = False
        raise


def _verify_unchanged(step: _Step, fd: int, name: str) -> None:
    """``name`` is still the inode checked under the lock, with the bytes the change expects."""
    try:
        # A deleted symlink was checked by what it points to; everything else is the entry itself.
        current = _read_at(fd, name, follow=step.change.kind == "delete")
    except (ToolError, OSError):
        current = None
    if current is None or (current[1].st_dev, current[1].st_ino) != step.identity or current[0] != step.change.expect:
        raise ModifiedWhileSaving(
            f"File {step.change.path} was modified while saving (by a program outside this session); nothing "
            "was written and the other program's version is kept. Read it again before editing.",
            {"error": "modified_while_saving"},
        )


@functools.cache
def _renameat2() -> Callable[..., int] | None:
    import ctypes  # only on a write path; the CLI's read paths never load it

    libc = ctypes.CDLL(None, use_errno=True)
    function = getattr(libc, "renameat2", None)
    if function is None:
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    return cast("Callable[..., int]", function)


def _exchange(fd: int, a: str, b: str) -> bool:
    """Atomically swap the names ``a`` and ``b`` in directory ``fd``; False when the kernel or the
    file system cannot (the caller falls back to rename)."""
    function = _renameat2()
    if function is None:
        return False
    import ctypes

    if function(fd, os.fsencode(a), fd, os.fsencode(b), RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), b)


def _link_or_rename(src_fd: int, src: str, dst_fd: int, dst: str) -> None:
    """Move an entry without replacing an existing destination (link + unlink; rename where
    links are not possible, after checking the destination under the lock)."""
    try:
        os.link(src, dst, src_dir_fd=src_fd, dst_dir_fd=dst_fd, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
            raise
        os.rename(src, dst, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
        return
    os.unlink(src, dir_fd=src_fd)


def _stat_after(step: _Step) -> os.stat_result:
    return os.stat(step.name, dir_fd=step.directory.fd)


def _fsync(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.fsync(fd)


# --- undo, cleanup and recovery: driven only by the journal's records ------------------------


def _undo(entry: dict[str, Any], fd: int, source_fd: int | None) -> None:
    """Put one recorded change back as it was. Safe to repeat, whatever step it reached."""
    name, tmp, backup = entry["name"], entry.get("tmp"), entry.get("backup")
    kind = entry["kind"]
    if kind == "move" and source_fd is not None:
        _undo_move(entry, fd, source_fd)
    if backup is not None and _exists(fd, backup):
        if entry.get("in_place"):
            content = _read_at(fd, backup, follow=False)
            target = _read_at(fd, name, follow=False) if _exists(fd, name) else None
            if content is not None and target is not None:
                target_fd = os.open(name, os.O_WRONLY | os.O_CLOEXEC | os.O_NOFOLLOW, dir_fd=fd)
                try:
                    _write_all(target_fd, content[0])
                    os.ftruncate(target_fd, len(content[0]))
                    os.fsync(target_fd)
                finally:
                    os.close(target_fd)
                os.unlink(backup, dir_fd=fd)
            elif content is not None:
                os.rename(backup, name, src_dir_fd=fd, dst_dir_fd=fd)
        elif _exists(fd, name) and _same_inode(fd, name, fd, backup):
            os.unlink(backup, dir_fd=fd)  # never replaced: the backup is just a second link
        else:
            os.rename(backup, name, src_dir_fd=fd, dst_dir_fd=fd)
    if tmp is not None and _exists(fd, tmp):
        os.unlink(tmp, dir_fd=fd)
    if kind == "write" and backup is None and entry.get("created_inode") is not None:
        # A new file that was put in place: remove it, if it is still the one we made.
        with contextlib.suppress(FileNotFoundError):
            if os.stat(name, dir_fd=fd, follow_symlinks=False).st_ino == entry["created_inode"]:
                os.unlink(name, dir_fd=fd)


def _undo_move(entry: dict[str, Any], fd: int, source_fd: int) -> None:
    """The source gets its original entry back (from the backup link); the destination entry
    goes if it is ours (the moved inode, or the new content we created)."""
    name, source, backup = entry["name"], entry["source"], entry.get("source_backup")
    if backup is not None and _exists(source_fd, backup):
        if _exists(source_fd, source):
            os.unlink(backup, dir_fd=source_fd)  # never unlinked: the backup is a second link
        else:
            os.rename(backup, source, src_dir_fd=source_fd, dst_dir_fd=source_fd)
    ours = {entry.get("source_inode"), entry.get("created_inode")} - {None}
    with contextlib.suppress(FileNotFoundError):
        if os.stat(name, dir_fd=fd, follow_symlinks=False).st_ino in ours:
            os.unlink(name, dir_fd=fd)


def _same_inode(fd_a: int, a: str, fd_b: int, b: str) -> bool:
    try:
        sa = os.stat(a, dir_fd=fd_a, follow_symlinks=False)
        sb = os.stat(b, dir_fd=fd_b, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def _cleanup(entry: dict[str, Any], fd: int, source_fd: int | None = None) -> None:
    for name in (entry.get("backup"), entry.get("tmp")):
        if name is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=fd)
    if source_fd is not None and entry.get("source_backup"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(entry["source_backup"], dir_fd=source_fd)


class _Journal:
    """One commit's record in the state directory, locked by its writer while it is in use."""

    def __init__(self, path: Path, fd: int, workspace: Path) -> None:
        self.path = path
        self.fd = fd
        self.workspace = workspace
        self.size = 0

    @classmethod
    def create(cls, directory: Path, workspace: Path) -> _Journal:
        path = directory / f"{workspace_key(workspace)}-{uuid.uuid4().hex}.json"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        return cls(path, fd, workspace)

    def write(self, state: str, steps: list[_Step]) -> None:
        record = {"version": JOURNAL_VERSION, "workspace": str(self.workspace), "state": state,
                  "entries": [s.journal for s in steps]}  # fmt: skip
        # One pwrite over the old record, padded with spaces (valid JSON) to cover all of it: there
        # is no moment when the journal holds no complete record.
        data = json.dumps(record).encode()
        data += b" " * max(0, self.size - len(data))
        os.pwrite(self.fd, data, 0)
        self.size = len(data)
        os.fsync(self.fd)
        if state == "prepared":
            _fsync_path(self.path.parent)

    def __enter__(self) -> _Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        os.close(self.fd)


def _fsync_path(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def workspace_key(workspace: Path) -> str:
    return hashlib.sha256(str(workspace).encode("utf-8", "surrogateescape")).hexdigest()[:16]


def recover(journal_dir: Path, workspace: Path) -> list[str]:
    """Finish or roll back commits of ``workspace`` that a dead process left half done.

    A journal still locked belongs to a live writer and is left alone. Returns one line per
    journal handled (for the log).
    """
    prefix = workspace_key(workspace) + "-"
    try:
        names = [n for n in os.listdir(journal_dir) if n.startswith(prefix) and n.endswith(".json")]
    except OSError:
        return []
    report = []
    for name in names:
        path = journal_dir / name
        try:
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a live commit
            report.append(_recover_one(path, fd))
            with contextlib.suppress(OSError):
                os.unlink(path)
        finally:
            os.close(fd)
    return report


def _recover_one(path: Path, fd: int) -> str:
    try:
        record = json.loads(os.pread(fd, 1 << 24, 0) or b"{}")
    except ValueError:
        return f"{path.name}: unreadable journal (written before anything was staged); removed"
    state = record.get("state")
    entries = record.get("entries", [])
    for entry in reversed(entries):
        try:
            with open_plain_dir(Path(entry["dir"])) as directory:
                source = entry.get("source_dir")
                source_dir = open_plain_dir(Path(source)) if source else None
                try:
                    if state == "committed":
                        _cleanup(entry, directory.fd, source_dir.fd if source_dir else None)
                    else:
                        _undo(entry, directory.fd, source_dir.fd if source_dir else None)
                finally:
                    if source_dir is not None:
                        source_dir.close()
        except OSError:
            continue  # the directory is gone: nothing of ours is left in it
    action = "cleaned up" if state == "committed" else "rolled back"
    return f"{path.name}: {action} {len(entries)} change(s) in {record.get('workspace')}"


def open_plain_dir(directory: Path) -> AnchoredDir:
    return AnchoredDir(os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), directory)

