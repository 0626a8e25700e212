"""grep/glob/ls through the tool vs raw rg on the interpreter's standard library.

Targets: grep ≤ 1.3× raw `rg` (identical match set), glob ≤ 1.5× `rg --files -g`, ls ≤ 1.5× `rg --files`.
Both sides are timed from Python: the tool in-process through the async API, rg as a subprocess.
"""

from __future__ import annotations

import asyncio
import shutil
import statistics
import subprocess
import sysconfig
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from toolsmith.config import Config
from toolsmith.ripgrep.runner import find_rg
from toolsmith.session import Session

RUNS = 31
STDLIB = Path(sysconfig.get_path("stdlib"))


async def _interleaved(tool: Callable[[], Awaitable[object]], raw: Callable[[], object]) -> tuple[float, float]:
    """Medians of alternating tool and raw-rg calls, so machine noise hits both alike."""
    tool_times, raw_times = [], []
    for _ in range(RUNS):
        start = time.perf_counter()
        await tool()
        tool_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        raw()
        raw_times.append(time.perf_counter() - start)
    return statistics.median(tool_times), statistics.median(raw_times)


def _rg(*args: str) -> str:
    rg = find_rg(None)
    assert rg
    return subprocess.run([rg, *args], capture_output=True, text=True, check=False).stdout


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "stdlib"
        # The interpreter's own library, without installed packages and caches (~2k files).
        shutil.copytree(STDLIB, tree, ignore=shutil.ignore_patterns("site-packages", "__pycache__"))
        await _bench(tree)


async def _bench(tree: Path) -> None:
    session = Session(tree, config=Config(lsp_enabled=False))
    files = len(_rg("--files", "--hidden", str(tree)).splitlines())
    print(f"tree: {tree} ({files} files)")
    cases: list[tuple[str, dict[str, object], list[str]]] = [
        ("grep", {"pattern": "def __repr__"}, ["-H", "-n", "--hidden", "-e", "def __repr__", str(tree)]),
        ("glob", {"pattern": "**/*.py"}, ["--files", "--hidden", "-g", "**/*.py", str(tree)]),
        ("ls", {}, ["--files", "--hidden", str(tree)]),
    ]
    targets = {"grep": 1.3, "glob": 1.5, "ls": 1.5}
    for tool, params, rg_args in cases:
        response = await session.run(tool, params)
        assert not response.is_error, response.content[:500]

        async def call_tool(tool: str = tool, params: dict[str, object] = params) -> object:
            return await session.run(tool, params)

        def call_rg(rg_args: list[str] = rg_args) -> object:
            return _rg(*rg_args)

        t_tool, t_rg = await _interleaved(call_tool, call_rg)
        print(f"{tool:5} tool {t_tool * 1000:8.1f} ms   rg {t_rg * 1000:8.1f} ms   ratio {t_tool / t_rg:5.2f}x"
              f"  (target <= {targets[tool]}x)")  # fmt: skip
        if tool == "grep":
            raw = {tuple(line.split(":", 2)[:2]) for line in _rg(*rg_args).splitlines()}
            print(f"      match set: tool {response.metadata['matches']} vs rg {len(raw)}"
                  f" -> {'identical count' if response.metadata['matches'] == len(raw) else 'DIFFERENT'}")  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
