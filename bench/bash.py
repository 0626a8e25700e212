"""bash tool overhead: `true` through the tool vs a raw subprocess.run (target ≤ 1.5× + 20 ms)."""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from agent_toolsmith.config import Config
from agent_toolsmith.session import Session

RUNS = 30


async def main() -> None:
    raw = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(["bash", "-c", "true"], check=True)
        raw.append(time.perf_counter() - start)
    with tempfile.TemporaryDirectory() as tmp:
        session = Session(tmp, config=Config(lsp_enabled=False, state_dir=Path(tempfile.mkdtemp())))
        tool = []
        for _ in range(RUNS):
            start = time.perf_counter()
            response = await session.run("bash", {"command": "true"})
            tool.append(time.perf_counter() - start)
            assert response.metadata["exit_code"] == 0
    t_raw, t_tool = statistics.median(raw), statistics.median(tool)
    budget = 1.5 * t_raw + 0.020
    print(f"subprocess.run(bash -c true)  {t_raw * 1000:6.2f} ms")
    print(f"bash tool 'true'              {t_tool * 1000:6.2f} ms")
    print(f"ratio {t_tool / t_raw:.2f}x; budget 1.5x + 20 ms = {budget * 1000:.2f} ms -> "
          f"{'within' if t_tool <= budget else 'OVER'}")  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
