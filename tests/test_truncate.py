"""Output bounding: capped spill files and the spill budget shared by every session."""

from __future__ import annotations

import os
import time
from pathlib import Path

from agent_toolsmith.state import StateDir
from agent_toolsmith.truncate import SPILL_BUDGET_FILES, SpillingBuffer, new_spill_path, prune_spill_files
from hypothesis import given
from hypothesis import strategies as st

CAP = 64


@given(st.lists(st.binary(max_size=50), max_size=12))
def test_capped_spill_file_keeps_head_and_tail_exactly(chunks: list[bytes]) -> None:
    import tempfile

    directory = Path(tempfile.mkdtemp())
    buffer = SpillingBuffer(1, lambda: directory / "out.txt", file_cap=CAP)
    for chunk in chunks:
        buffer.write(chunk)
    buffer.render()
    buffer.close()
    data = b"".join(chunks)
    if not buffer.spilled:  # short enough to show whole
        assert len(data.decode("utf-8", "replace")) <= 1
        return
    written = (directory / "out.txt").read_bytes()
    half = CAP // 2
    if len(data) <= CAP:
        assert written == data
    else:
        marker = f"\n... [{len(data) - CAP} bytes omitted: a spill file keeps the first and last {half} bytes] ...\n"
        assert written == data[:half] + marker.encode() + data[-half:]
    assert sorted(os.listdir(directory)) == ["out.txt"]  # the ring file is gone
    assert (os.stat(directory / "out.txt").st_mode & 0o777) == 0o600


def test_spill_budget_deletes_oldest_first_across_sessions(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "state")
    directory = state.directory("output")
    now = time.time()
    for i in range(SPILL_BUDGET_FILES + 20):
        f = directory / f"bash-{i:04d}.txt"
        f.write_bytes(b"x")
        os.utime(f, (now - 1000 + i, now - 1000 + i))  # higher i = newer
    old = directory / "ancient.txt"
    old.write_bytes(b"x")
    os.utime(old, (now - 2 * 86400, now - 2 * 86400))
    new_spill_path(state, "session-b", "bash")
    left = sorted(p.name for p in directory.iterdir())
    assert "ancient.txt" not in left
    assert len(left) == SPILL_BUDGET_FILES - 1  # room for the one about to be written
    assert left[0] == f"bash-{21:04d}.txt" and left[-1] == f"bash-{SPILL_BUDGET_FILES + 19:04d}.txt"


def test_spill_budget_by_bytes(tmp_path: Path, monkeypatch: object) -> None:
    import agent_toolsmith.truncate as truncate

    directory = tmp_path / "output"
    directory.mkdir()
    now = time.time()
    for i in range(10):
        f = directory / f"f{i}.txt"
        f.write_bytes(b"x" * 1000)
        os.utime(f, (now - 100 + i, now - 100 + i))
    original = truncate.SPILL_BUDGET_BYTES
    truncate.SPILL_BUDGET_BYTES = 3500
    try:
        prune_spill_files(directory)
    finally:
        truncate.SPILL_BUDGET_BYTES = original
    assert sorted(p.name for p in directory.iterdir()) == ["f7.txt", "f8.txt", "f9.txt"]
