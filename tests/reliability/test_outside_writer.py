"""An outside writer (an editor or script that does not take our lock) saving at 100 Hz while
the tools edit the same file: none of its saves may be lost, however it saves — renaming a new
file over the name, writing in place (at once or in two pieces), or truncating first (testdata/outside_writer/writer.py,
which counts its own lost saves).

The windows themselves are staged deterministically in tests/fsutil/test_swap.py; this is the
whole flow under a real writer. bench/outside_writer.py runs the long measurement (2 000 saves
per row, at 100 Hz and 250 Hz).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.session import Session

WRITER = Path(__file__).resolve().parents[2] / "testdata" / "outside_writer" / "writer.py"
#: The outside writer's rate (saves per second) and the run's bounds. The run lasts until the
#: writer has made MIN_SAVES saves (6 s at 100 Hz; longer on a busy machine, where it saves
#: more slowly).
WRITER_HZ = 100
MIN_SAVES = 600
MAX_RUN_S = 90.0
#: Edits tried (views that find only our own last edit are polls, bounded by MAX_RUN_S alone: a
#: fast view polls many times between two saves).
MAX_EDIT_ATTEMPTS = 4000
#: Hang guards.
CALL_TIMEOUT_S = 30.0
WRITER_EXIT_TIMEOUT_S = 30.0


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["rename", "in_place", "truncate", "chunked"])
def test_outside_saves_are_not_lost(tmp_path: Path, mode: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    target, stop = ws / "f.txt", tmp_path / "stop"
    target.write_text("save 0\n")
    writer = subprocess.Popen(
        [sys.executable, str(WRITER), str(target), str(stop), mode, str(WRITER_HZ)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
        edited = asyncio.run(_edit_while_writer_runs(ws))
        stop.touch()
        out, _ = writer.communicate(timeout=WRITER_EXIT_TIMEOUT_S)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait(timeout=WRITER_EXIT_TIMEOUT_S)
    saves, lost = map(int, out.split())
    print(f"outside writer ({mode}, {WRITER_HZ} Hz): {saves} saves, {lost} lost; {edited} tool edits landed")
    assert saves >= MIN_SAVES // 2, f"the writer made only {saves} saves"
    assert edited > 0, "no edit landed: the run raced nothing"
    assert lost == 0, f"{lost} of {saves} outside saves lost"


async def _edit_while_writer_runs(ws: Path) -> int:
    session = Session(ws, config=Config(lsp_enabled=False))
    edited = 0
    attempts = 0
    deadline = time.monotonic() + MAX_RUN_S
    while attempts < MAX_EDIT_ATTEMPTS and time.monotonic() < deadline:
        view = await asyncio.wait_for(session.run("view", {"file_path": "f.txt"}), CALL_TIMEOUT_S)
        words = view.content.replace("|", " ").split()
        if view.is_error or "save" not in words:
            continue
        number = words[words.index("save") + 1]
        if int(number) >= MIN_SAVES:  # the writer's own count: enough saves made
            break
        attempts += 1
        params = {"file_path": "f.txt", "old_string": f"save {number}", "new_string": f"edited {number}"}
        response = await asyncio.wait_for(session.run("edit", params), CALL_TIMEOUT_S)
        edited += not response.is_error
    await session.close()
    return edited
