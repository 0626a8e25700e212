"""The commit mechanism: all or nothing, files as the user left them, and crash recovery."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from agent_toolsmith.errors import ToolError
from agent_toolsmith.fsutil.commit import Change, Committed, commit, recover
from agent_toolsmith.fsutil.fs import FileSystem

ROOT = Path(__file__).resolve().parents[2]


def run(ws: Path, journal: Path, changes: list[Change]) -> Committed:
    return commit(changes, roots=[ws], journal_dir=journal, workspace=ws)


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    ws, journal = tmp_path / "ws", tmp_path / "journal"
    ws.mkdir()
    journal.mkdir()
    return Path(os.path.realpath(ws)), journal


def tree(root: Path) -> dict[str, bytes | str]:
    out: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_symlink():
            out[rel] = "-> " + os.readlink(path)
        elif path.is_file():
            out[rel] = path.read_bytes()
    return out


def test_applies_writes_deletes_creations_and_moves(dirs: tuple[Path, Path]) -> None:
    ws, journal = dirs
    (ws / "a.txt").write_bytes(b"A")
    (ws / "b.txt").write_bytes(b"B")
    (ws / "m.txt").write_bytes(b"M")
    run(ws, journal, [
        Change("write", ws / "a.txt", b"A2", b"A"),
        Change("delete", ws / "b.txt", expect=b"B"),
        Change("write", ws / "sub" / "c.txt", b"C"),
        Change("move", ws / "moved" / "m2.txt", b"M2", b"M", source=ws / "m.txt"),
    ])  # fmt: skip
    assert tree(ws) == {"a.txt": b"A2", "moved/m2.txt": b"M2", "sub/c.txt": b"C"}
    assert os.listdir(journal) == []


def test_content_changed_since_computed_writes_nothing(dirs: tuple[Path, Path]) -> None:
    ws, journal = dirs
    (ws / "a.txt").write_bytes(b"A")
    (ws / "b.txt").write_bytes(b"someone else's save")
    before = tree(ws)
    with pytest.raises(ToolError, match="has been modified since it was last read"):
        run(ws, journal, [Change("write", ws / "a.txt", b"A2", b"A"), Change("write", ws / "b.txt", b"B2", b"B")])
    assert tree(ws) == before
    with pytest.raises(ToolError, match="created by someone else meanwhile"):
        run(ws, journal, [Change("write", ws / "a.txt", b"new")])  # expected absent, exists


class NoSpaceForNewTxt(FileSystem):
    """The file system fills up when the last step links new.txt into place."""

    def link(self, src: str, dst: str, *, src_dir_fd: int, dst_dir_fd: int) -> None:
        if dst == "new.txt":
            raise OSError(28, "No space left on device")
        super().link(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)


def test_failure_in_the_last_step_rolls_everything_back(dirs: tuple[Path, Path]) -> None:
    ws, journal = dirs
    (ws / "a.txt").write_bytes(b"A")
    (ws / "b.txt").write_bytes(b"B")
    before = tree(ws)
    with pytest.raises(ToolError, match=r"no space left on the device\. Nothing was changed\."):
        commit([
            Change("write", ws / "a.txt", b"A2", b"A"),
            Change("delete", ws / "b.txt", expect=b"B"),
            Change("write", ws / "new.txt", b"N"),
        ], roots=[ws], journal_dir=journal, workspace=ws, fs=NoSpaceForNewTxt())  # fmt: skip
    assert tree(ws) == before and os.listdir(journal) == []


def test_mode_and_owner_are_kept_and_hard_links_broken(dirs: tuple[Path, Path]) -> None:
    ws, journal = dirs
    owned = ws / "owned.txt"
    owned.write_bytes(b"x")
    owned.chmod(0o640)
    if os.geteuid() == 0:
        os.chown(owned, 65534, 65534)
    linked = ws / "linked.txt"
    linked.write_bytes(b"one")
    os.link(linked, ws / "second-name.txt")
    inode = linked.stat().st_ino
    stats = run(ws, journal, [Change("write", owned, b"y", b"x"), Change("write", linked, b"two", b"one")])
    st = owned.stat()
    assert owned.read_bytes() == b"y" and st.st_mode & 0o777 == 0o640
    if os.geteuid() == 0:
        assert (st.st_uid, st.st_gid) == (65534, 65534)
    # The link is replaced, not written through: the other name keeps the old content.
    assert (ws / "second-name.txt").read_bytes() == b"one" and linked.read_bytes() == b"two"
    assert linked.stat().st_ino != inode and stats.broken_links == {linked: 1}
    assert linked.stat().st_nlink == 1 and sorted(os.listdir(ws)) == ["linked.txt", "owned.txt", "second-name.txt"]


def test_read_only_files_are_refused(dirs: tuple[Path, Path]) -> None:
    ws, journal = dirs
    locked = ws / "locked.txt"
    locked.write_bytes(b"x")
    locked.chmod(0o444)
    with pytest.raises(ToolError, match=r"is read-only \(mode 0444\)"):
        run(ws, journal, [Change("write", locked, b"y", b"x")])
    assert locked.read_bytes() == b"x"


def test_symlinks_are_deleted_and_moved_as_links(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    ws, journal = dirs
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"keep me")
    (ws / "gone").symlink_to(outside)
    (ws / "moving").symlink_to(outside)
    run(ws, journal, [
        Change("delete", ws / "gone", expect=b"keep me"),
        Change("move", ws / "moved", expect=b"keep me", source=ws / "moving"),
    ])  # fmt: skip
    assert outside.read_bytes() == b"keep me"
    assert tree(ws) == {"moved": f"-> {outside}"}


# --- crashes: SIGKILL at every step, then recovery ---------------------------------------------

CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from agent_toolsmith.fsutil.commit import Change, commit
    from agent_toolsmith.fsutil.fs import FileSystem
    ws, journal, kill_at = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    calls = 0

    class KilledAtStep(FileSystem):
        pass

    def wrap(name):
        real = getattr(FileSystem, name)
        def hooked(self, *args, **kwargs):
            global calls
            calls += 1
            if calls == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(self, *args, **kwargs)
        setattr(KilledAtStep, name, hooked)

    for name in ("link", "rename", "unlink", "ftruncate", "pwrite", "fsync", "write", "exchange"):
        wrap(name)
    commit([
        Change("write", ws / "a.txt", b"A2" * 1000, b"A"),
        Change("write", ws / "hard.txt", b"H2", b"H"),
        Change("delete", ws / "b.txt", expect=b"B"),
        Change("write", ws / "sub" / "new.txt", b"N"),
        Change("move", ws / "m2.txt", b"M2", b"M", source=ws / "m.txt"),
    ], roots=[ws], journal_dir=journal, workspace=ws, fs=KilledAtStep())
    print("committed", calls, flush=True)
    """
)


def _commit_killed_at(ws: Path, journal: Path, kill_at: int) -> subprocess.CompletedProcess[str]:
    """Run CHILD's commit in a process that SIGKILLs itself at its ``kill_at``-th file operation
    (counted by the file system it hands the commit)."""
    return subprocess.run(
        [sys.executable, "-c", CHILD, str(ws), str(journal), str(kill_at)],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def _fresh(ws: Path) -> None:
    for path in sorted(ws.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() and not path.is_symlink() else path.unlink()
    (ws / "a.txt").write_bytes(b"A")
    (ws / "hard.txt").write_bytes(b"H")
    os.link(ws / "hard.txt", ws / "hard-link.txt")
    (ws / "b.txt").write_bytes(b"B")
    (ws / "m.txt").write_bytes(b"M")


@pytest.mark.slow
def test_sigkill_at_every_step_recovers_to_old_or_new(dirs: tuple[Path, Path]) -> None:
    ws, journal = dirs
    _fresh(ws)
    old = tree(ws)
    new = {"a.txt": b"A2" * 1000, "hard-link.txt": b"H", "hard.txt": b"H2", "m2.txt": b"M2", "sub/new.txt": b"N"}
    outcomes = []
    kill_at = 1
    while True:
        _fresh(ws)
        proc = _commit_killed_at(ws, journal, kill_at)
        if proc.returncode == 0:
            assert proc.stdout.startswith("committed")
            assert tree(ws) == new
            break
        assert proc.returncode == -signal.SIGKILL, proc.stderr
        recover(journal, ws)
        state = tree(ws)
        assert state in (old, new), (kill_at, state)
        assert not any(name.endswith((".tmp", ".orig")) for name in state), (kill_at, state)
        assert os.listdir(journal) == [], kill_at
        # The link is kept (old) or broken (new), never half: the other name never changes.
        assert (ws / "hard-link.txt").read_bytes() == b"H"
        outcomes.append("new" if state == new else "old")
        kill_at += 1
    assert kill_at > 10 and "old" in outcomes  # the hooks really interrupted the commit at many points


def test_a_live_commits_journal_is_left_alone(dirs: tuple[Path, Path]) -> None:
    import fcntl

    from agent_toolsmith.fsutil.commit import workspace_key

    ws, journal = dirs
    live = journal / f"{workspace_key(ws)}-live.json"
    live.write_text(json.dumps({"state": "prepared", "entries": []}))
    fd = os.open(live, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        assert recover(journal, ws) == [] and live.exists()
    finally:
        os.close(fd)
    assert len(recover(journal, ws)) == 1 and not live.exists()


def test_a_session_recovers_an_interrupted_commit_before_its_next_call(tmp_path: Path) -> None:
    """No one calls recover() by hand: a Session finds the journal a killed process left and
    puts the files back (old or new) before it runs the next tool call."""
    import asyncio

    from agent_toolsmith.config import Config
    from agent_toolsmith.session import Session

    ws = tmp_path / "ws"
    ws.mkdir()
    ws = Path(os.path.realpath(ws))
    session = Session(ws, config=Config(lsp_enabled=False, state_dir=tmp_path / "state"))
    journal = session.ctx.state.directory("journal")
    _fresh(ws)
    old = tree(ws)
    # A hard-linked file is replaced, never written through: its other name keeps the old bytes.
    new = {"a.txt": b"A2" * 1000, "hard-link.txt": b"H", "hard.txt": b"H2", "m2.txt": b"M2", "sub/new.txt": b"N"}
    interrupted = 0
    for kill_at in range(1, 200):
        _fresh(ws)
        proc = _commit_killed_at(ws, journal, kill_at)
        if proc.returncode == 0:
            break
        if not os.listdir(journal):
            continue  # killed before the journal was written: nothing to recover
        interrupted += 1
        view = asyncio.run(session.run("view", {"file_path": "hard.txt"}))
        assert not view.is_error, view.content
        assert os.listdir(journal) == [], kill_at
        assert tree(ws) in (old, new), kill_at
    assert interrupted > 5  # the kills really left journals for the session to find


def test_holds_compares_every_byte_across_chunks(tmp_path: Path) -> None:
    # The comparison before a swap reads the file in chunks: a difference in any chunk, or at
    # either end, means "not the snapshot".
    from agent_toolsmith.fsutil.fs import COMPARE_CHUNK_BYTES, REAL, holds

    data = bytes(range(256)) * ((2 * COMPARE_CHUNK_BYTES + 1000) // 256)
    (tmp_path / "f").write_bytes(data)
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert holds(REAL, fd, "f", data, follow=False) is not None
        for at in (0, COMPARE_CHUNK_BYTES - 1, COMPARE_CHUNK_BYTES, len(data) - 1):
            changed = bytearray(data)
            changed[at] ^= 0xFF
            assert holds(REAL, fd, "f", bytes(changed), follow=False) is None, at
        assert holds(REAL, fd, "f", data[:-1], follow=False) is None
        assert holds(REAL, fd, "f", data + b"x", follow=False) is None
        assert holds(REAL, fd, "missing", data, follow=False) is None
    finally:
        os.close(fd)
