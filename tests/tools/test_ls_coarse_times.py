"""ls {depth: 1} keeps what it read (the root's entries, a proof per subdirectory) only while a
later change must show in the stats: on a file system that stamps whole seconds, a change made
in the same second as the last one leaves the same times, so nothing changed within that
second's reach may be kept.

The file system is a real one: an ext4 image with 128-byte inodes (whole-second times), mounted
on a loop device; the test is skipped where that cannot be done (not root, no loop device)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from agent_toolsmith.ripgrep.proofs import RACY_NS, settled

from tests.tools.test_ls_depth import listing, make, within

#: Hang guard for mkfs, mount and umount.
MOUNT_TIMEOUT_S = 30
#: Tries at making the change in the same second as the tree (a busy machine may miss it).
SAME_SECOND_TRIES = 6
SECOND_NS = 1_000_000_000


@pytest.fixture
def coarse_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory on a file system whose times are whole seconds."""
    if os.geteuid() != 0 or shutil.which("mkfs.ext4") is None or shutil.which("mount") is None:
        pytest.skip("mounting a file system needs root and mkfs.ext4")
    image, mount_point = tmp_path / "coarse.img", tmp_path / "mnt"
    mount_point.mkdir()
    with image.open("wb") as file:
        file.truncate(32 << 20)
    mounted = _ran("mkfs.ext4", "-q", "-F", "-I", "128", str(image)) and _ran(
        "mount", "-o", "loop", str(image), str(mount_point)
    )
    if not mounted:
        pytest.skip("no loop mount here")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], capture_output=True, timeout=MOUNT_TIMEOUT_S, check=True)


def _ran(*args: str) -> bool:
    return subprocess.run(args, capture_output=True, timeout=MOUNT_TIMEOUT_S, check=False).returncode == 0


def _into_next_second() -> None:
    """Wait until just past a second's start, so what follows has most of the second."""
    time.sleep(1 - (time.time() % 1) + 0.01)


CHANGES: dict[str, tuple[list[str], Callable[[Path], object], str]] = {
    # name: (files, the change, the directory whose times it sets)
    "a deep file removed": (["sub/a/f.txt", "keep.txt"], lambda ws: (ws / "sub/a/f.txt").unlink(), "sub/a"),
    "a file added to the root": (["sub/a/f.txt", "keep.txt"], lambda ws: (ws / "new.txt").write_text("x"), "."),
    "an ignore file added deep": (
        ["sub/a/f.txt", "keep.txt"], lambda ws: (ws / "sub/a/.gitignore").write_text("*\n"), "sub/a",
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", CHANGES)
def test_a_change_in_the_same_whole_second_is_seen(coarse_dir: Path, name: str) -> None:
    files, change, changed = CHANGES[name]
    for attempt in range(SAME_SECOND_TRIES):
        ws = coarse_dir / f"ws{attempt}"
        _into_next_second()
        ws.mkdir()
        make(ws, files)
        stamp = (ws / changed).stat().st_mtime_ns
        time.sleep(RACY_NS * 2 / SECOND_NS)  # past the fine-grained window, within the second
        for _ in range(3):  # the third listing rests on what the first two kept
            assert listing(ws, {"depth": 1}, True) == within(listing(ws, {}, True), 1)
        change(ws)
        if (ws / changed).stat().st_mtime_ns != stamp:
            continue  # the second ended before the change: it shows in the times, try again
        assert listing(ws, {"depth": 1}, True) == within(listing(ws, {}, True), 1)
        return
    pytest.skip("the machine was too busy to change the tree within one second")


def test_whole_second_times_are_settled_only_after_two_seconds() -> None:
    """FAT stamps every two seconds, ext4 with small inodes every second: a time that is a whole
    second may be shared by any change up to two seconds later; a finer time only by one within
    the kernel's tick (RACY_NS covers it)."""

    def stat_at(mtime_ns: int, ctime_ns: int) -> os.stat_result:
        return os.stat_result((0,) * 10, {"st_mtime_ns": mtime_ns, "st_ctime_ns": ctime_ns})

    whole = 1_700_000_000 * SECOND_NS
    assert not settled(stat_at(whole, whole), whole + SECOND_NS)
    assert not settled(stat_at(whole, whole), whole + 2 * SECOND_NS)
    assert settled(stat_at(whole, whole), whole + 3 * SECOND_NS)
    fine = whole + 123_456_789
    assert not settled(stat_at(fine, fine), fine + RACY_NS)
    assert settled(stat_at(fine, fine), fine + RACY_NS + 1)
    assert settled(stat_at(whole, fine), fine + RACY_NS + 1)  # a fine change time tells changes apart
