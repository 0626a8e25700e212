from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from agent_toolsmith.fsutil.atomic import atomic_write


def test_creates_parents_and_keeps_mode(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "f.txt"
    atomic_write(target, b"one")
    assert target.read_bytes() == b"one"
    target.chmod(0o751)
    atomic_write(target, b"two")
    assert target.read_bytes() == b"two"
    assert target.stat().st_mode & 0o777 == 0o751
    assert [p.name for p in target.parent.iterdir()] == ["f.txt"]  # no temp left behind


def test_replaces_a_symlink_or_fifo_instead_of_writing_through_it(tmp_path: Path) -> None:
    """Our state files are never links: one planted there must not carry our state elsewhere."""
    real = tmp_path / "real.txt"
    real.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    atomic_write(link, b"new")
    assert not link.is_symlink() and link.read_bytes() == b"new"
    assert real.read_text() == "old"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    atomic_write(fifo, b"new")  # no open of the FIFO: nothing waits for a reader
    assert fifo.is_file() and fifo.read_bytes() == b"new"


CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from agent_toolsmith.fsutil.atomic import atomic_write
    target = Path(sys.argv[1])
    size = int(sys.argv[2])
    i = 0
    print("ready", flush=True)
    while True:
        atomic_write(target, bytes([65 + i % 2]) * size)
        i += 1
    """
)


def test_sigkill_during_writes_leaves_old_or_new(tmp_path: Path) -> None:
    """A writer killed at arbitrary moments never leaves a partial or mixed file."""
    size = 4 * 1024 * 1024
    target = tmp_path / "big.bin"
    target.write_bytes(b"A" * size)
    root = Path(__file__).resolve().parents[2]
    for round_ in range(6):
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(target), str(size)],
            cwd=root,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(root)},
        )
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"ready\n"
        # Let it run for a varying number of bytes of writes before the kill.
        deadline_reads = 1 + round_
        for _ in range(deadline_reads):
            os.stat(target)
            data = target.read_bytes()
            assert data in (b"A" * size, b"B" * size)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        data = target.read_bytes()
        assert len(data) == size and data in (b"A" * size, b"B" * size)
