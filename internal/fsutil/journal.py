"""The commit journal: a record of every temp file and backup a commit makes, and recovery.

A commit writes its journal (in the state directory) *before* any temp file or backup exists,
so a process that dies half-way leaves a record of what to undo. :func:`recover` (run before the
next tool call in that workspace) rolls a prepared journal back, or finishes cleaning a
committed one; undo and cleanup are driven only by the journal's records, and are safe to
repeat whatever step the dead process reached.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import uuid
from pathlib import Path
from typing import Any

from .anchored import AnchoredDir
from .fs import REAL, FileSystem, exists, overwrite, read_at
from .swap import give_back, inode_of

JOURNAL_VERSION = 1


class Journal:
    """One commit's record in the state directory, locked by its writer while it is in use."""

    def __init__(self, path: Path, fd: int, workspace: Path, fs: FileSystem) -> None:
        self.path = path
        self.fd = fd
        self.workspace = workspace
        self.fs = fs
        self.size = 0

    @classmethod
    def create(cls, directory: Path, workspace: Path, fs: FileSystem = REAL) -> Journal:
        path = directory / f"{workspace_key(workspace)}-{uuid.uuid4().hex}.json"
        fd = fs.open(str(path), os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        return cls(path, fd, workspace, fs)

    def write(self, state: str, entries: list[dict[str, Any]]) -> None:
        record = {"version": JOURNAL_VERSION, "workspace": str(self.workspace), "state": state,
                  "entries": entries}  # fmt: skip
        # One pwrite over the old record, padded with spaces (valid JSON) to cover all of it: there
        # is no moment when the journal holds no complete record.
        data = json.dumps(record).encode()
        data += b" " * max(0, self.size - len(data))
        self.fs.pwrite(self.fd, data, 0)
        self.size = len(data)
        # No fsync: the journal is for a process that dies mid-commit, and the page cache it
        # wrote survives the process (docs/safety.md, "Durability", says which fsyncs we make).

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError):
            self.fs.unlink(str(self.path))
        self.fs.close(self.fd)


def workspace_key(workspace: Path) -> str:
    return hashlib.sha256(str(workspace).encode("utf-8", "surrogateescape")).hexdigest()[:16]


# --- undo and cleanup: driven only by the journal's records ------------------------------------


def undo(entry: dict[str, Any], fd: int, source_fd: int | None, fs: FileSystem = REAL) -> None:
    """Put one recorded change back as it was. Safe to repeat, whatever step it reached."""
    name, tmp, backup = entry["name"], entry.get("tmp"), entry.get("backup")
    kind = entry["kind"]
    if kind == "move" and source_fd is not None:
        _undo_move(entry, fd, source_fd, fs)
    if backup is not None and exists(fs, fd, backup):
        if entry.get("in_place"):
            content = read_at(fs, fd, backup, follow=False)
            target = read_at(fs, fd, name, follow=False) if exists(fs, fd, name) else None
            if content is not None and target is not None:
                overwrite(fs, fd, name, content[0])
                fs.unlink(backup, dir_fd=fd)
            elif content is not None:
                fs.rename(backup, name, src_dir_fd=fd, dst_dir_fd=fd)
        elif exists(fs, fd, name) and _same_inode(fs, fd, name, fd, backup):
            fs.unlink(backup, dir_fd=fd)  # never replaced: the backup is just a second link
        else:
            _restore_backup(entry, fd, fs)
    if tmp is not None and exists(fs, fd, tmp):
        fs.unlink(tmp, dir_fd=fd)
    if kind == "write" and backup is None and entry.get("created_inode") is not None:
        # A new file that was put in place: remove it, if it is still the one we made.
        with contextlib.suppress(FileNotFoundError):
            if fs.stat(name, dir_fd=fd, follow_symlinks=False).st_ino == entry["created_inode"]:
                fs.unlink(name, dir_fd=fd)


def _restore_backup(entry: dict[str, Any], fd: int, fs: FileSystem) -> None:
    """The backup goes back under the name where the name holds our new file, or nothing; an
    outside save that replaced ours meanwhile is kept (and the backup dropped): swap.py."""
    name, backup = entry["name"], entry["backup"]
    current = inode_of(fs, fd, name)
    if current is None:
        with contextlib.suppress(FileExistsError):  # an outside save appeared: it stays
            fs.link(backup, name, src_dir_fd=fd, dst_dir_fd=fd)
    elif current == entry.get("created_inode"):
        give_back(fs, fd, backup, name, current)  # the backup now names ours, or a superseded save
    fs.unlink(backup, dir_fd=fd)


def _undo_move(entry: dict[str, Any], fd: int, source_fd: int, fs: FileSystem) -> None:
    """The source gets its original entry back (from the backup link); the destination entry
    goes if it is ours (the moved inode, or the new content we created)."""
    name, source, backup = entry["name"], entry["source"], entry.get("source_backup")
    if backup is not None and exists(fs, source_fd, backup):
        if exists(fs, source_fd, source):
            fs.unlink(backup, dir_fd=source_fd)  # never unlinked: the backup is a second link
        else:
            fs.rename(backup, source, src_dir_fd=source_fd, dst_dir_fd=source_fd)
    ours = {entry.get("source_inode"), entry.get("created_inode")} - {None}
    with contextlib.suppress(FileNotFoundError):
        if fs.stat(name, dir_fd=fd, follow_symlinks=False).st_ino in ours:
            fs.unlink(name, dir_fd=fd)


def _same_inode(fs: FileSystem, fd_a: int, a: str, fd_b: int, b: str) -> bool:
    try:
        sa = fs.stat(a, dir_fd=fd_a, follow_symlinks=False)
        sb = fs.stat(b, dir_fd=fd_b, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def cleanup(entry: dict[str, Any], fd: int, source_fd: int | None = None, fs: FileSystem = REAL) -> None:
    for name in (entry.get("backup"), entry.get("tmp")):
        if name is not None:
            with contextlib.suppress(FileNotFoundError):
                fs.unlink(name, dir_fd=fd)
    if source_fd is not None and entry.get("source_backup"):
        with contextlib.suppress(FileNotFoundError):
            fs.unlink(entry["source_backup"], dir_fd=source_fd)


# --- recovery after a dead process --------------------------------------------------------------


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
                        cleanup(entry, directory.fd, source_dir.fd if source_dir else None)
                    else:
                        undo(entry, directory.fd, source_dir.fd if source_dir else None)
                finally:
                    if source_dir is not None:
                        source_dir.close()
        except OSError:
            continue  # the directory is gone: nothing of ours is left in it
    action = "cleaned up" if state == "committed" else "rolled back"
    return f"{path.name}: {action} {len(entries)} change(s) in {record.get('workspace')}"


def open_plain_dir(directory: Path) -> AnchoredDir:
    return AnchoredDir(os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), directory)
