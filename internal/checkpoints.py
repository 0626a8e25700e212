"""Checkpoints: roll back what a session's file tools changed since a point in the session.

Every file tool commits through one place (the change pipeline, llm/change/pipeline.py, which calls
fsutil/commit.py); once a session has a checkpoint, each commit's changes are recorded there in
the session's change log, in its state directory (``sessions/<id>/changes/``), so checkpoints
survive across CLI processes that share a ``--session``:

- ``log.jsonl``: one line per checkpoint (``{"checkpoint": ID}``) and per changed path
  (``{"path", "before", "after"}``: the SHA-256 of the content before and after the commit, or
  null for "absent");
- ``blobs/<sha256>``: each before-image, once (content-addressed). Before-images never stay in
  memory: a 100 MB file's is written here, not kept.

A session that never took a checkpoint records nothing (no cost on the edit path).

Rewinding to a checkpoint folds the lines after it into one net change per path (the first
"before", the last "after"); a path whose content is still what the session's tools left is put
back (written, re-created or deleted) in one all-or-nothing change through the change pipeline
(llm/change: each file read once, non-blocking, regular files only); a path someone else changed
since is reported and left alone, unless forced; a path that is no longer a regular file is
always left alone. Changes made by bash commands are not tracked
(only the file tools' commits are). Directories a tool created for a new file stay.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ToolError
from .fsutil.commit import Change
from .state import open_state_file, read_state_file

if TYPE_CHECKING:
    from .llm.change.pipeline import Planned, Target
    from .llm.change.snapshot import Snapshot

LOG_NAME = "log.jsonl"
BLOBS_DIR = "blobs"
#: The change log and each before-image are read with these caps, never through a link or from a
#: FIFO (the state directory is private, but a command of the user's own could plant one).
MAX_LOG_BYTES = 64 * 1024 * 1024
MAX_BLOB_BYTES = 4 * 1024 * 1024 * 1024


@dataclass(frozen=True)
class FileChange:
    """A path's net change since a checkpoint (content hashes; ``None``: the file is absent)."""

    path: Path
    before: str | None
    after: str | None

    @property
    def kind(self) -> str:
        if self.before is None:
            return "created"
        return "deleted" if self.after is None else "changed"


@dataclass
class RewindResult:
    checkpoint: str
    #: Files put back as they were at the checkpoint (rewritten, re-created or deleted).
    restored: list[Path] = field(default_factory=list)
    #: Files changed by someone else since the session's tools last did: left as they are.
    conflicts: list[Path] = field(default_factory=list)

    def summary(self) -> str:
        lines = [f"Rewound to checkpoint {self.checkpoint}: {len(self.restored)} file(s) restored."]
        lines += [f"  restored: {path}" for path in self.restored]
        if self.conflicts:
            lines.append(
                f"{len(self.conflicts)} file(s) changed by someone else since were not overwritten "
                "(rewind with force to overwrite them):"
            )
            lines += [f"  changed since: {path}" for path in self.conflicts]
        return "\n".join(lines)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _unusable(path: Path, exc: Exception) -> ToolError:
    why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return ToolError(
        f"The session's change log cannot be used: {path} ({why}). Nothing was changed; checkpoints of this "
        "session cannot be rewound (take a new one).",
        code="checkpoint_log_unusable",
    )


def _special(path: Path) -> bool:
    """Whether ``path`` exists and is not a regular file (checked without opening it)."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


class ChangeLog:
    """The change log of one session: ``location()`` is its directory, ``create()`` makes it
    (private) and returns it — only a checkpoint does, so sessions without one leave no trace."""

    def __init__(self, location: Callable[[], Path], create: Callable[[], Path]) -> None:
        self._location = location
        self._create = create

    def _dir(self) -> Path:
        return self._location()

    def _log(self) -> Path:
        return self._dir() / LOG_NAME

    @property
    def active(self) -> bool:
        """Whether a checkpoint exists, so commits must be recorded."""
        try:
            return stat.S_ISREG(os.lstat(self._log()).st_mode)
        except OSError:
            return False

    # --- recording ------------------------------------------------------------------------

    def checkpoint(self) -> str:
        checkpoint_id = uuid.uuid4().hex[:12]
        self._create()
        self._append([{"checkpoint": checkpoint_id}])
        return checkpoint_id

    def record(self, changes: Sequence[Change]) -> None:
        """Record a successful commit's changes (called right after it, in its worker thread)."""
        if not self.active:
            return
        before: dict[Path, bytes | None] = {}
        after: dict[Path, bytes | None] = {}
        for change in changes:
            if change.kind == "move" and change.source is not None:
                moved = after.get(change.source, change.expect)
                before.setdefault(change.source, change.expect)
                before.setdefault(change.path, None)
                after[change.source] = None
                after[change.path] = change.data if change.data is not None else moved
            else:
                before.setdefault(change.path, change.expect)
                after[change.path] = change.data if change.kind == "write" else None
        lines = []
        for path, old in before.items():
            new = after[path]
            lines.append(
                {"path": str(path), "before": self._keep(old), "after": _digest(new) if new is not None else None}
            )
        self._append(lines)

    def _keep(self, data: bytes | None) -> str | None:
        if data is None:
            return None
        digest = _digest(data)
        blob = self._dir() / BLOBS_DIR / digest
        if not blob.exists():
            blob.parent.mkdir(mode=0o700, exist_ok=True)
            temp = blob.with_name(f".{digest}.{uuid.uuid4().hex[:8]}.tmp")
            with open(temp, "wb") as handle:
                handle.write(data)
            os.replace(temp, blob)
        return digest

    def _append(self, lines: list[dict[str, Any]]) -> None:
        text = "".join(json.dumps(line) + "\n" for line in lines)
        fd = open_state_file(self._log(), os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(fd, text.encode("utf-8"))  # one write: concurrent CLI processes never interleave lines
        finally:
            os.close(fd)

    # --- reading --------------------------------------------------------------------------

    def _lines(self) -> list[dict[str, Any]]:
        try:
            text = read_state_file(self._log(), MAX_LOG_BYTES).decode("utf-8")
        except FileNotFoundError:
            return []
        except (OSError, UnicodeDecodeError) as exc:
            raise _unusable(self._log(), exc) from None
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def _since(self, checkpoint_id: str) -> tuple[list[dict[str, Any]], int]:
        lines = self._lines()
        for index, line in enumerate(lines):
            if line.get("checkpoint") == checkpoint_id:
                return lines, index
        known = [line["checkpoint"] for line in lines if "checkpoint" in line]
        listing = ", ".join(known[-5:]) or "none yet"
        raise ToolError(
            f"Unknown checkpoint {checkpoint_id!r} for this session (its latest: {listing}).", code="unknown_checkpoint"
        )

    def changes(self, since: str) -> list[FileChange]:
        lines, index = self._since(since)
        net: dict[str, list[str | None]] = {}
        for line in lines[index + 1 :]:
            if "path" in line:
                entry = net.setdefault(line["path"], [line["before"], line["after"]])
                entry[1] = line["after"]
        return [FileChange(Path(path), old, new) for path, (old, new) in net.items() if old != new]

    # --- rewinding ------------------------------------------------------------------------

    def rewind_targets(self, checkpoint_id: str, *, force: bool) -> tuple[list[Target], list[Path], list[FileChange]]:
        """The change-pipeline targets that put back every file still as the session's tools left
        it (every file, when ``force``); the files changed by someone else since, and their log
        entries to keep — filled in as the targets are planned. A path that is no longer a regular
        file (a FIFO, a device) is always left alone and reported: it is never opened."""
        from .llm.change.pipeline import Target

        conflicts: list[Path] = []
        kept: list[FileChange] = []
        targets = []
        for change in self.changes(checkpoint_id):
            if _special(change.path):
                conflicts.append(change.path)
                kept.append(FileChange(change.path, change.before, None))
                continue
            plan = self._restore(change, force, conflicts, kept)
            targets.append(Target(change.path, plan, expect="any", read="none"))
        return targets, conflicts, kept

    def _restore(
        self, change: FileChange, force: bool, conflicts: list[Path], kept: list[FileChange]
    ) -> Callable[[Snapshot, Callable[[], None]], Planned | None]:
        from .llm.change.pipeline import Planned

        def plan(snapshot: Snapshot, _check: Callable[[], None]) -> Planned | None:
            now = None if snapshot.data is None else _digest(snapshot.data)
            if now != change.after and not force:
                conflicts.append(change.path)
                kept.append(FileChange(change.path, change.before, now))
                return None
            if change.before is None:
                return Planned(delete=True, gate=False, diff={}) if snapshot.exists else None
            blob = self._dir() / BLOBS_DIR / change.before
            try:
                data = read_state_file(blob, MAX_BLOB_BYTES)
            except OSError as exc:
                raise _unusable(blob, exc) from None
            # The bytes the file had: no result check applies (they were the file's before).
            return None if data == snapshot.data else Planned(data=data, gate=False, diff={})

        return plan

    def rewound(self, checkpoint_id: str, kept: list[FileChange]) -> None:
        """After a rewind: the log ends at the checkpoint again, plus the files left as others
        changed them (so a forced rewind later still knows their before-images)."""
        lines, index = self._since(checkpoint_id)
        rest = [{"path": str(c.path), "before": c.before, "after": c.after} for c in kept]
        text = "".join(json.dumps(line) + "\n" for line in [*lines[: index + 1], *rest])
        temp = self._log().with_name(f".{LOG_NAME}.{uuid.uuid4().hex[:8]}")
        temp.write_text(text, encoding="utf-8")
        os.chmod(temp, 0o600)
        os.replace(temp, self._log())
        self._drop_unused_blobs([*lines[: index + 1], *rest])

    def _drop_unused_blobs(self, lines: list[dict[str, Any]]) -> None:
        used = {line.get("before") for line in lines}
        blobs = self._dir() / BLOBS_DIR
        if not blobs.is_dir():
            return
        for blob in blobs.iterdir():
            if blob.name not in used:
                with contextlib.suppress(OSError):
                    blob.unlink()
