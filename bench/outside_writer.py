"""Outside saves lost to tool edits: a program saving a file without our lock (testdata/
outside_writer/writer.py) while the edit tool edits it as fast as it can, for every way of saving
(rename, in place, truncate-then-write, in place in two chunks) at 100 Hz and 250 Hz, until the writer has made
MIN_SAVES saves. The goal is 0 lost saves in every row.

Also counted: how the edits ended (landed, or refused and why), and how often a swap had to give
an outside save its name back (the one moment our content was visible in place of theirs: between
the exchange and the exchange back, microseconds). Not a timing benchmark: its rows are counts,
printed here, and the script exits 1 when a save was lost.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from agent_toolsmith.config import Config
from agent_toolsmith.session import Session

WRITER = Path(__file__).resolve().parents[1] / "testdata" / "outside_writer" / "writer.py"
MODES = tuple(os.environ.get("BENCH_OUTSIDE_MODES", "rename,in_place,truncate,chunked").split(","))
RATES_HZ = (100, 250)
MIN_SAVES = int(os.environ.get("BENCH_OUTSIDE_SAVES", "2000"))
#: Hang guards: one run, one call, the writer's exit.
MAX_RUN_S = 600.0
CALL_TIMEOUT_S = 30.0
WRITER_EXIT_TIMEOUT_S = 30.0


class GiveBacks(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += "giving the name back" in record.getMessage()


async def edit_until(ws: Path, saves: int) -> Counter[str]:
    """Edit f.txt (``save N`` → ``edited N``) until the writer's count reaches ``saves``."""
    outcomes: Counter[str] = Counter()
    async with Session(ws, config=Config(lsp_enabled=False)) as session:
        deadline = time.monotonic() + MAX_RUN_S
        while time.monotonic() < deadline:
            view = await asyncio.wait_for(session.run("view", {"file_path": "f.txt"}), CALL_TIMEOUT_S)
            words = view.content.replace("|", " ").split()
            if view.is_error or "save" not in words:
                continue
            number = words[words.index("save") + 1]
            if int(number) >= saves:
                break
            params = {"file_path": "f.txt", "old_string": f"save {number}", "new_string": f"edited {number}"}
            response = await asyncio.wait_for(session.run("edit", params), CALL_TIMEOUT_S)
            outcomes[str(response.metadata.get("error", "landed")) if response.is_error else "landed"] += 1
    return outcomes


def one_run(mode: str, hz: int, give_backs: GiveBacks) -> tuple[int, int, Counter[str], int]:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(os.path.realpath(tmp)) / "ws"
        ws.mkdir()
        target, stop = ws / "f.txt", Path(tmp) / "stop"
        target.write_text("save 0\n")
        before = give_backs.count
        writer = subprocess.Popen(
            [sys.executable, str(WRITER), str(target), str(stop), mode, str(hz)], stdout=subprocess.PIPE, text=True
        )
        try:
            assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
            outcomes = asyncio.run(edit_until(ws, MIN_SAVES))
            stop.touch()
            out, _ = writer.communicate(timeout=WRITER_EXIT_TIMEOUT_S)
        finally:
            if writer.poll() is None:
                writer.kill()
                writer.wait(timeout=WRITER_EXIT_TIMEOUT_S)
        saves, lost = map(int, out.split())
        return saves, lost, outcomes, give_backs.count - before


def main() -> int:
    give_backs = GiveBacks()
    logging.getLogger("toolsmith.fsutil").addHandler(give_backs)
    logging.getLogger("toolsmith.fsutil").setLevel(logging.INFO)
    total_lost = 0
    print(f"outside writer vs the edit tool, until {MIN_SAVES} saves per row")
    print(f"  {'mode':<9} {'rate':>6} {'saves':>6} {'lost':>5} {'give-backs':>10}  edits")
    for mode in MODES:
        for hz in RATES_HZ:
            saves, lost, outcomes, backs = one_run(mode, hz, give_backs)
            total_lost += lost
            edits = ", ".join(f"{name} {count}" for name, count in outcomes.most_common())
            print(f"  {mode:<9} {hz:>4} Hz {saves:>6} {lost:>5} {backs:>10}  {edits}", flush=True)
    print("0 lost: ok" if total_lost == 0 else f"{total_lost} outside saves lost: OVER")
    return 0 if total_lost == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
