"""An outside writer (an editor or script that does not take our lock) saving at 100 Hz while
the tools edit the same file: at most 1% of its saves may be lost (the target is 0).

The writer detects a lost save itself: before each save it reads the file; ``edited K`` with K
older than its own last save means one of our edits replaced a save it had made since.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.session import Session

#: The outside writer's rate (saves per second), the run's bounds, and the allowed loss. The run
#: lasts until the writer has made MIN_SAVES saves (6 s at 100 Hz; longer on a busy machine, where
#: it saves more slowly), so that 1% of them is a rate, not a single unlucky save.
WRITER_HZ = 100
MIN_SAVES = 600
MAX_RUN_S = 90.0
#: Edits tried (views that find only our own last edit are polls, bounded by MAX_RUN_S alone: a
#: fast view polls many times between two saves).
MAX_EDIT_ATTEMPTS = 4000
MAX_LOSS_RATE = 0.01
#: Hang guards.
CALL_TIMEOUT_S = 30.0
WRITER_EXIT_TIMEOUT_S = 30.0

WRITER = textwrap.dedent(
    """
    import os, sys, time
    path, stop, mode, hz = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    last = saves = lost = 0
    print("ready", flush=True)
    while not os.path.exists(stop):
        with open(path) as handle:
            current = handle.read().split()
        if len(current) == 2 and current[0] == "edited" and int(current[1]) < last:
            lost += 1
        last += 1
        data = f"save {last}\\n"
        if mode == "rename":  # how most editors save: a temp file renamed over the name
            with open(path + ".w", "w") as handle:
                handle.write(data)
            os.replace(path + ".w", path)
        else:  # in place (vim's default, shell redirections)
            with open(path, "r+") as handle:
                handle.write(data)
                handle.truncate()
        saves += 1
        time.sleep(1 / hz)  # pacing the saves, not synchronisation
    with open(path) as handle:
        current = handle.read().split()
    if len(current) == 2 and current[0] == "edited" and int(current[1]) < last:
        lost += 1
    print(saves, lost, flush=True)
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["rename", "in_place"])
def test_outside_saves_are_not_lost(tmp_path: Path, mode: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    target, stop = ws / "f.txt", tmp_path / "stop"
    target.write_text("save 0\n")
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(target), str(stop), mode, str(WRITER_HZ)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
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
    print(f"outside writer ({mode}, {WRITER_HZ} Hz): {saves} saves, {lost} lost ({lost / max(saves, 1):.2%}); "
          f"{edited} tool edits landed")  # fmt: skip
    assert saves >= MIN_SAVES // 2, f"the writer made only {saves} saves: too few to judge 1% by"
    assert lost <= MAX_LOSS_RATE * saves, f"{lost} of {saves} outside saves lost"


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
    return edited
