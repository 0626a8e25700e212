"""Diagnostics round-trip with pylsp: an edit through the tool vs the server's own publish latency.

Protocol level: didChange sent → publishDiagnostics for that version received (no waiting policy).
Tool level: the whole `edit` call (match, write, sync, wait, format). Target ≤ 1.2× + 50 ms.
Also prints the cold start (first view of a .py file: server start + first diagnostics).
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from toolsmith.config import Config
from toolsmith.lsp.manager import LspManager
from toolsmith.session import Session
from toolsmith.state import StateDir

RUNS = 8
ONLY_PYLSP = {name: {"disabled": True} for name in ("basedpyright", "pyright", "ruff")}


async def protocol_latency(workspace: Path) -> float:
    config = Config(lsp_servers=ONLY_PYLSP)
    manager = LspManager(workspace, config, StateDir(config.state_dir))
    f = workspace / "proto.py"
    f.write_text("import os\n")
    await manager.after_view(f)
    (client,) = manager.clients.values()
    samples = []
    for i in range(RUNS):
        text = f"import os\nx = undefined_{i}\n" if i % 2 == 0 else "import os\nx = 1\n"
        f.write_text(text)
        start = time.monotonic()
        version = client.sync(f, text, "python")
        while not (got := client.published.get(f.as_uri())) or got.version != version:
            await asyncio.sleep(0.001)
        samples.append(time.monotonic() - start)
    await manager.close()
    return statistics.median(samples)


async def tool_latency(workspace: Path) -> tuple[float, float]:
    session = Session(workspace, config=Config(lsp_servers=ONLY_PYLSP))
    f = workspace / "tool.py"
    f.write_text("import os\nx = 1\n")
    start = time.monotonic()
    await session.run("view", {"file_path": "tool.py"})
    cold = time.monotonic() - start
    samples = []
    for i in range(RUNS):
        old, new = ("x = 1", f"x = undefined_{i}") if i % 2 == 0 else (f"x = undefined_{i - 1}", "x = 1")
        start = time.monotonic()
        response = await session.run("edit", {"file_path": "tool.py", "old_string": old, "new_string": new})
        samples.append(time.monotonic() - start)
        assert not response.is_error, response.content
        assert ("undefined name" in response.content) == (i % 2 == 0), response.content
    await session.close()
    return cold, statistics.median(samples)


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        protocol = await protocol_latency(Path(tmp))
        cold, tool = await tool_latency(Path(tmp))
    budget = 1.2 * protocol + 0.050
    print(f"pylsp publish latency (protocol)  {protocol * 1000:7.1f} ms")
    print(f"edit through the tool (warm)      {tool * 1000:7.1f} ms")
    print(f"ratio {tool / protocol:.2f}x; budget 1.2x + 50 ms = {budget * 1000:.1f} ms -> "
          f"{'within' if tool <= budget else 'OVER'}")  # fmt: skip
    print(f"cold start (first view of a .py)  {cold * 1000:7.1f} ms")


if __name__ == "__main__":
    asyncio.run(main())
