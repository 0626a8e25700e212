"""An outside writer's save is never lost to a commit, whatever instant it lands at (swap.py).

Each race is staged deterministically: a FileSystem whose ``exchange`` lets an outside save land
at the exact step, or a real process that holds the file open for writing, or one whose ``open``
is seen waiting for our lease (/proc/locks) before the swap goes on. No test depends on timing:
each would lose the save without the mechanism, at every run.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from agent_toolsmith.errors import ModifiedWhileSaving, OpenForWriting, ToolError
from agent_toolsmith.fsutil.commit import Change, commit
from agent_toolsmith.fsutil.fs import FileSystem
from agent_toolsmith.fsutil.swap import LEASE_WAIT_S

#: Hang guard for a helper process or thread.
GUARD_S = 30.0


def rename_save(path: Path, data: bytes) -> None:
    """How most editors save: a new file renamed over the name."""
    side = path.with_name(path.name + ".w")
    side.write_bytes(data)
    os.replace(side, path)


class OutsideSaves(FileSystem):
    """Before the n-th exchange (1-based) runs, ``saves[n]()`` lands an outside save."""

    def __init__(self, saves: dict[int, Callable[[], None]]) -> None:
        self.saves = saves
        self.exchanges = 0

    def exchange(self, fd: int, a: str, b: str) -> bool:
        self.exchanges += 1
        if self.exchanges in self.saves:
            self.saves[self.exchanges]()
        return super().exchange(fd, a, b)


class NoLeases(OutsideSaves):
    """The same, on a file system without leases (NFS, FUSE, a file we do not own)."""

    def set_lease(self, fd: int, kind: int) -> None:
        raise OSError(errno.EINVAL, "no leases here")


class NoLeaseSignal(OutsideSaves):
    """A system where a lease's break cannot be made to signal SIGCHLD: no lease may be taken
    (its break would send SIGIO, which ends the process)."""

    def set_lease_signal(self, fd: int, signum: int) -> None:
        raise OSError(errno.ENOSYS, "no F_SETSIG here")

    def set_lease(self, fd: int, kind: int) -> None:
        raise AssertionError("a lease was taken without its break signal set")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (tmp_path / "journal").mkdir()
    return Path(os.path.realpath(root))


def edit(ws: Path, changes: list[Change], fs: FileSystem | None = None) -> None:
    journal = ws.parent / "journal"
    commit(changes, roots=[ws], journal_dir=journal, workspace=ws, **({"fs": fs} if fs else {}))


def leftovers(ws: Path) -> list[str]:
    return sorted(name for name in os.listdir(ws) if name.endswith((".tmp", ".orig")))


@pytest.mark.parametrize(
    "fs_class", [OutsideSaves, NoLeases, NoLeaseSignal], ids=["lease", "no-lease", "no-lease-signal"]
)
def test_a_rename_save_landing_just_before_the_swap_keeps_its_name(ws: Path, fs_class: type[OutsideSaves]) -> None:
    target = ws / "f.txt"
    target.write_bytes(b"save 1\n")
    fs = fs_class({1: lambda: rename_save(target, b"save 2\n")})
    with pytest.raises(ModifiedWhileSaving):
        edit(ws, [Change("write", target, b"edited 1\n", b"save 1\n")], fs)
    assert target.read_bytes() == b"save 2\n"
    assert leftovers(ws) == []


@pytest.mark.parametrize(
    "fs_class", [OutsideSaves, NoLeases, NoLeaseSignal], ids=["lease", "no-lease", "no-lease-signal"]
)
def test_saves_landing_while_the_name_is_given_back_leave_the_newest(ws: Path, fs_class: type[OutsideSaves]) -> None:
    """Save 2 lands before our exchange, save 3 before the exchange that gives 2 back: a plain
    exchange back would leave 2 under the name and throw 3 away."""
    target = ws / "f.txt"
    target.write_bytes(b"save 1\n")
    fs = fs_class({1: lambda: rename_save(target, b"save 2\n"), 2: lambda: rename_save(target, b"save 3\n")})
    with pytest.raises(ModifiedWhileSaving):
        edit(ws, [Change("write", target, b"edited 1\n", b"save 1\n")], fs)
    assert target.read_bytes() == b"save 3\n"
    assert fs.exchanges == 3
    assert leftovers(ws) == []


def test_a_rollback_keeps_an_outside_save_made_after_our_swap(ws: Path) -> None:
    """a.txt is swapped, then b.txt is refused: putting a.txt's old content back must not throw
    away the save an outside program made to a.txt in between."""
    a, b = ws / "a.txt", ws / "b.txt"
    a.write_bytes(b"a 1\n")
    b.write_bytes(b"b 1\n")

    def both_saved() -> None:
        rename_save(a, b"a 2\n")
        rename_save(b, b"b 2\n")

    fs = OutsideSaves({2: both_saved})
    with pytest.raises(ModifiedWhileSaving):
        edit(ws, [Change("write", a, b"ours\n", b"a 1\n"), Change("write", b, b"ours\n", b"b 1\n")], fs)
    assert (a.read_bytes(), b.read_bytes()) == (b"a 2\n", b"b 2\n")
    assert leftovers(ws) == []


class SaveBeforeClaim(FileSystem):
    """An outside save lands just before a delete renames the file to its claim name."""

    def __init__(self, save: Callable[[], None], leases: bool = True) -> None:
        self.save = save
        self.leases = leases

    def rename(self, src: str, dst: str, *, src_dir_fd: int, dst_dir_fd: int) -> None:
        if dst.endswith(".tmp") and not src.startswith("."):
            self.save()
        super().rename(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)

    def set_lease(self, fd: int, kind: int) -> None:
        if not self.leases:
            raise OSError(errno.EINVAL, "no leases here")
        super().set_lease(fd, kind)


@pytest.mark.parametrize("leases", [True, False], ids=["lease", "no-lease"])
def test_a_delete_never_removes_an_outside_save(ws: Path, leases: bool) -> None:
    target = ws / "f.txt"
    target.write_bytes(b"save 1\n")
    fs = SaveBeforeClaim(lambda: rename_save(target, b"save 2\n"), leases)
    with pytest.raises(ModifiedWhileSaving):
        edit(ws, [Change("delete", target, expect=b"save 1\n")], fs)
    assert target.read_bytes() == b"save 2\n"
    assert leftovers(ws) == []
    edit(ws, [Change("delete", target, expect=b"save 2\n")])
    assert not target.exists() and leftovers(ws) == []


#: Opens the file for writing, says so, waits for a line, then writes ``theirs`` and closes.
HOLDER = textwrap.dedent(
    """
    import sys
    with open(sys.argv[1], "r+") as handle:
        print("open", flush=True)
        sys.stdin.readline()
        handle.write("theirs\\n")
        handle.truncate()
    print("closed", flush=True)
    """
)


def start_holder(target: Path) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(target)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline() == "open\n"
    return holder


def finish_holder(holder: subprocess.Popen[str]) -> None:
    out, _ = holder.communicate("go\n", timeout=GUARD_S)
    assert out.endswith("closed\n"), out


def test_a_file_kept_open_for_writing_is_not_replaced(ws: Path) -> None:
    """Replacing a file that another program writes through a descriptor would send its next
    write to a file with no name: refused after LEASE_WAIT_S, and its write lands."""
    target = ws / "f.txt"
    target.write_bytes(b"save 1\n")
    holder = start_holder(target)
    try:
        started = time.monotonic()
        with pytest.raises(OpenForWriting):
            edit(ws, [Change("write", target, b"edited 1\n", b"save 1\n")])
        assert time.monotonic() - started >= LEASE_WAIT_S  # it waited the documented bound first
        assert target.read_bytes() == b"save 1\n"
    finally:
        finish_holder(holder)
    assert target.read_bytes() == b"theirs\n"
    assert leftovers(ws) == []


def test_an_in_place_save_in_progress_is_waited_for(ws: Path) -> None:
    """The writer finishes its save while the commit waits for the lease: whatever the order,
    its save is what the file holds, and the edit is refused."""
    target = ws / "f.txt"
    target.write_bytes(b"save 1\n")
    holder = start_holder(target)
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            edit(ws, [Change("write", target, b"edited 1\n", b"save 1\n")])
            outcome.append(None)
        except ToolError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    finish_holder(holder)
    thread.join(GUARD_S)
    assert outcome and outcome[0] is not None and outcome[0].metadata["error"] in (
        "modified_while_saving", "changed_since_read",
    ), outcome  # fmt: skip
    assert target.read_bytes() == b"theirs\n"


def lease_broken(inode: int) -> bool:
    """/proc/locks shows a lease on ``inode`` that a writer's open is waiting on."""
    with open("/proc/locks") as locks:
        return any("LEASE" in line and "BREAKING" in line and f":{inode} " in line for line in locks)


def test_a_writer_opening_during_the_swap_gets_the_file_back(ws: Path) -> None:
    """A writer that looked the name up before the swap opens the old file: its open waits for
    our lease, the swap sees it waiting and gives the name back before it goes on."""
    target = ws / "f.txt"
    target.write_bytes(b"save 1\n")
    inode = target.stat().st_ino
    writers: list[subprocess.Popen[str]] = []

    def writer_opens() -> None:
        writers.append(start_holder_unwaited(target))
        deadline = time.monotonic() + GUARD_S
        while not lease_broken(inode):
            assert time.monotonic() < deadline, "the writer's open never reached our lease"
            time.sleep(0.001)

    try:
        with pytest.raises(ModifiedWhileSaving):
            edit(ws, [Change("write", target, b"edited 1\n", b"save 1\n")], OutsideSaves({1: writer_opens}))
        finish_holder(writers[0])
    finally:
        for writer in writers:
            if writer.poll() is None:
                writer.kill()
                writer.wait(GUARD_S)
    assert target.read_bytes() == b"theirs\n"
    assert target.stat().st_ino == inode
    assert leftovers(ws) == []


def start_holder_unwaited(target: Path) -> subprocess.Popen[str]:
    """:data:`HOLDER`, not waited for: its open is expected to block on our lease."""
    return subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(target)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )


def test_readers_are_not_held_up_by_a_lease(ws: Path) -> None:
    """The lease is a read lease: a program reading the file during the swap is not blocked, and
    the swap goes on."""
    target = ws / "f.txt"
    target.write_bytes(b"save 1\n")
    seen: list[bytes] = []

    def read_it() -> None:
        seen.append(subprocess.run(["cat", str(target)], capture_output=True, timeout=GUARD_S, check=True).stdout)

    edit(ws, [Change("write", target, b"edited 1\n", b"save 1\n")], OutsideSaves({1: read_it}))
    assert seen == [b"save 1\n"]
    assert target.read_bytes() == b"edited 1\n"
