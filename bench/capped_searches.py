"""Hangs at the cap: 1000 capped grep/glob/ls calls on a 60k-file tree, in one process.

Each call hits its collection cap, so rg is stopped with output still unread; every call gets
a 30 s timeout and any that reaches it counts as a hang. Target: 0 hangs in >= 1000 calls.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from agent_toolsmith.config import Config
from agent_toolsmith.session import Session
from search import generate_tree

CALLS = 1002
TIMEOUT_S = 30


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tree = generate_tree(Path(tmp) / "tree")
        session = Session(tree, config=Config(lsp_enabled=False))
        calls = [("glob", {"pattern": "**/*"}), ("grep", {"pattern": "TODO|return"}), ("ls", {})]
        hangs = 0
        times: dict[str, list[float]] = {tool: [] for tool, _ in calls}
        for i in range(CALLS):
            tool, params = calls[i % len(calls)]
            start = time.perf_counter()
            try:
                response = await asyncio.wait_for(session.run(tool, params), TIMEOUT_S)
            except TimeoutError:
                hangs += 1
                continue
            times[tool].append(time.perf_counter() - start)
            assert response.metadata["count_is_lower_bound"], (tool, response.metadata)
    for tool, values in times.items():
        print(f"{tool:4} {len(values)} capped calls, median {statistics.median(values) * 1000:.1f} ms, "
              f"max {max(values) * 1000:.1f} ms")  # fmt: skip
    print(f"hangs: {hangs} of {CALLS} (target 0) {'ok' if hangs == 0 else 'FAILED'}")


if __name__ == "__main__":
    asyncio.run(main())
