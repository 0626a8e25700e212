"""The fixed cost of an exact edit, stage by stage: what a small change of a real file pays.

The edit is the peers bench's (bench/peers.py): a copy of argparse.py (2 600 lines), the base
classes of one class swapped and swapped back, one call after another in one session. Each round
times, interleaved:

- the whole call, ``Session.run("edit", ...)``;
- the reference: raw read + replace + write of a temp file + fsync + rename (bench/edit_scale.py);
- every stage of the same change again, one after the other, through the mechanisms the call
  runs (on another copy in the same session): resolving and checking the path, reading the
  snapshot, decoding it, matching, the syntax gate, the diff, and the commit, split by the file
  system operations it makes (the commit's ``FileSystem`` seam, timed): the one fsync, the unlink
  that frees the replaced file's blocks (the old content's inode, renamed aside by the swap),
  every other operation (journal, staging, lease, exchange, cleanup), and the commit's own
  Python; then the read record.

Printed: each stage's median, their sum beside the whole call's (the rest is the call's frame:
parameters, the change pipeline's worker thread, permission, the checkpoint check, the result),
and one harness row, the whole call against the reference, with its goal (the durability work —
write, fsync, rename — is in both; an edit may add at most what the goal allows to it).
"""

from __future__ import annotations

import asyncio
import collections
import shutil
import statistics
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from agent_toolsmith.config import Config
from agent_toolsmith.diff import span_diff_metadata
from agent_toolsmith.fsutil.commit import Change, commit
from agent_toolsmith.fsutil.fs import FileSystem
from agent_toolsmith.llm.change.snapshot import take_snapshot
from agent_toolsmith.session import Session
from agent_toolsmith.syntax import judge
from agent_toolsmith.textmatch import EditRequest, apply_edits
from edit_scale import atomic_write
from harness import exit_status, record

ROUNDS = 60
#: Untimed rounds first: the session's first edit parses the whole file for the gate.
WARMUP = 4
#: The whole call against raw read + replace + fsync + rename (both do the durability work).
EDIT_GOAL = 4.0
OLD = "class ArgumentParser(_AttributeHolder, _ActionsContainer):"
NEW = "class ArgumentParser(_ActionsContainer, _AttributeHolder):"
T = TypeVar("T")


class TimedFileSystem(FileSystem):
    """The real file system, each operation's time added up by kind (``unlink`` of the replaced
    file apart: it frees the old content's blocks)."""

    def __init__(self) -> None:
        self.spent: collections.defaultdict[str, float] = collections.defaultdict(float)

    def timed(self, kind: str, call: Callable[[], T]) -> T:
        start = time.perf_counter()
        try:
            return call()
        finally:
            self.spent[kind] += time.perf_counter() - start

    def fsync(self, fd: int) -> None:
        self.timed("fsync", lambda: super(TimedFileSystem, self).fsync(fd))

    def unlink(self, name: str, *, dir_fd: int | None = None) -> None:
        kind = "free the replaced file" if name.endswith(".tmp") else "other operations"
        self.timed(kind, lambda: super(TimedFileSystem, self).unlink(name, dir_fd=dir_fd))


def _wrap_others() -> None:
    """Every other operation of the seam is timed as "other operations"."""
    for name in ("open", "close", "read", "write", "pwrite", "pread", "ftruncate", "fstat", "stat", "fchmod",
                 "fchown", "link", "rename", "set_lease", "get_lease", "set_lease_signal", "exchange"):  # fmt: skip
        base = getattr(FileSystem, name)

        def wrapped(self: TimedFileSystem, *args: Any, _base: Any = base, **kwargs: Any) -> Any:
            return self.timed("other operations", lambda: _base(self, *args, **kwargs))

        setattr(TimedFileSystem, name, wrapped)


_wrap_others()


class Toggle:
    def __init__(self) -> None:
        self.forward = True

    def next(self) -> tuple[str, str]:
        pair = (OLD, NEW) if self.forward else (NEW, OLD)
        self.forward = not self.forward
        return pair


def stages_once(session: Session, path: Path, old: str, new: str, spent: dict[str, list[float]]) -> None:
    """The change ``old`` -> ``new`` of ``path`` made stage by stage, each stage timed."""
    ctx = session.ctx.for_call()
    fs = TimedFileSystem()

    def stage(name: str, call: Callable[[], T]) -> T:
        start = time.perf_counter()
        value = call()
        spent[name].append(time.perf_counter() - start)
        return value

    resolved = stage("resolve + check the path", lambda: ctx.check_writable(ctx.resolve(str(path))))
    snapshot = stage("read the snapshot", lambda: take_snapshot(ctx, resolved))
    text = stage("decode", lambda: snapshot.text)
    outcome = stage("match", lambda: apply_edits(text, [EditRequest(old, new)], path=str(resolved)))
    stage("syntax gate", lambda: judge(text.text, outcome.file.text, str(resolved), cache=ctx.syntax_trees))
    stage("diff", lambda: span_diff_metadata(text.text, outcome.file.text, outcome.spans, path.name))
    data = outcome.file.encode()
    change = Change("write", resolved, data, snapshot.data, seen=snapshot.st)
    start = time.perf_counter()
    stats = commit([change], roots=ctx.writable_roots(), journal_dir=ctx.state.directory("journal"),
                   workspace=ctx.workspace, fs=fs)  # fmt: skip
    whole = time.perf_counter() - start
    for kind in ("fsync", "free the replaced file", "other operations"):
        spent[f"commit: {kind}"].append(fs.spent[kind])
    spent["commit: its own Python"].append(whole - sum(fs.spent.values()))
    stage("record the read", lambda: ctx.files.record_read(resolved, data, stats[resolved]))


async def main() -> int:
    source = Path(sysconfig.get_path("stdlib")) / "argparse.py"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        called, staged, raw = root / "called.py", root / "staged.py", root / "raw.py"
        for copy in (called, staged, raw):
            shutil.copyfile(source, copy)
        async with Session(root, config=Config(lsp_enabled=False)) as session:
            for copy in (called, staged):
                assert not (await session.run("view", {"file_path": str(copy)})).is_error
            calls, stepped, raws = Toggle(), Toggle(), Toggle()
            whole: list[float] = []
            reference: list[float] = []
            spent: dict[str, list[float]] = collections.defaultdict(list)
            for n in range(WARMUP + ROUNDS):
                old, new = calls.next()
                start = time.perf_counter()
                response = await session.run("edit", {"file_path": str(called), "old_string": old, "new_string": new})
                took = time.perf_counter() - start
                assert not response.is_error, response.content
                raw_old, raw_new = raws.next()
                start = time.perf_counter()
                atomic_write(raw, raw.read_bytes().decode().replace(raw_old, raw_new, 1).encode())
                raw_took = time.perf_counter() - start
                rounds: dict[str, list[float]] = spent if n >= WARMUP else collections.defaultdict(list)
                stages_once(session, staged, *stepped.next(), rounds)
                if n >= WARMUP:
                    whole.append(took)
                    reference.append(raw_took)
    lines = source.read_text().count("\n")
    print(f"\nthe stages of an exact edit of argparse.py ({lines} lines), {ROUNDS} rounds (medians):")
    total = 0.0
    for name, values in spent.items():
        median = statistics.median(values)
        total += median
        print(f"  {name:<34} {median * 1000:7.3f} ms")
    print(f"  {'sum of the stages':<34} {total * 1000:7.3f} ms")
    print(f"  {'the whole call (Session.run)':<34} {statistics.median(whole) * 1000:7.3f} ms")
    print(f"  {'raw read+replace+fsync+rename':<34} {statistics.median(reference) * 1000:7.3f} ms\n")
    record(
        "edit: exact, argparse.py (the peers' edit)", whole, reference,
        reference="raw read+replace+fsync+rename", goal=EDIT_GOAL,
    )  # fmt: skip
    return exit_status()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
