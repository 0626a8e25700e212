"""view on a 1 GiB file, the whole call through Session.run, vs `tail -n +N | head -n 2000`.

- offset 0: cost must not depend on the file size (compared with a 1 MiB file too);
- near the end (the last 3000 lines): the first view in a fresh session scans for line starts
  (memcmp-speed newline counting); a later view in the same session starts from the session's
  sparse index.

Each row alternates tool and reference (bench/harness.py) and reports the median of the
per-pair ratios.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agent_toolsmith.config import Config
from agent_toolsmith.session import Session
from harness import exit_status, record

#: Goals (docs/benchmarks.md): a view at offset 0 of a 1 GiB file ≤ 2× the same view of a 1 MiB
#: file; a deep view (fresh session) ≤ 3× `tail -n +N | head -n 2000`.
OFFSET_ZERO_GOAL = 2.0
DEEP_VIEW_GOAL = 3.0
LINE = ("x" * 99 + "\n").encode()
RUNS = 11


def make(path: Path, size: int) -> int:
    block = LINE * (1024 * 1024 // len(LINE) + 1)
    block = block[: len(block) - len(block) % len(LINE)]
    with path.open("wb") as handle:
        written = 0
        while written < size:
            handle.write(block)
            written += len(block)
    return written // len(LINE)


async def view(session: Session, path: Path, offset: int) -> float:
    start = time.perf_counter()
    response = await session.run("view", {"file_path": str(path), "offset": offset, "limit": 2000})
    elapsed = time.perf_counter() - start
    assert not response.is_error, response.content[:300]
    return elapsed


def tail_head(path: Path, offset: int) -> float:
    start = time.perf_counter()
    subprocess.run(f"tail -n +{offset + 1} {path} | head -n 2000 > /dev/null", shell=True, check=True)
    return time.perf_counter() - start


async def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        small, big = Path(tmp) / "small.txt", Path(tmp) / "big.txt"
        make(small, 1024 * 1024)
        lines = make(big, 1024 * 1024 * 1024)
        deep = lines - 3000
        print(f"1 GiB file: {lines} lines; {RUNS} interleaved pairs per row", flush=True)
        config = Config(lsp_enabled=False)
        warm = Session(tmp, config=config)
        await view(warm, big, 0), await view(warm, small, 0)
        big_zero, small_zero = [], []
        for _ in range(RUNS):
            big_zero.append(await view(warm, big, 0))
            small_zero.append(await view(warm, small, 0))
        record("view offset 0: 1 GiB file", big_zero, small_zero, reference="the same view of a 1 MiB file",
               goal=OFFSET_ZERO_GOAL)  # fmt: skip
        cold, raw = [], []
        for _ in range(RUNS):  # a fresh session each time: no index yet
            cold.append(await view(Session(tmp, config=config), big, deep))
            raw.append(tail_head(big, deep))
        record("deep view (last 3000 lines), fresh session", cold, raw, reference="tail -n +N | head -n 2000",
               goal=DEEP_VIEW_GOAL)  # fmt: skip
        await view(warm, big, deep)
        hot, raw = [], []
        for i in range(RUNS):  # later pages in the same session start from its sparse index
            hot.append(await view(warm, big, deep - 2000 * i))
            raw.append(tail_head(big, deep - 2000 * i))
        record("deep view, same session (indexed)", hot, raw, reference="tail -n +N | head -n 2000", goal=None)
    return exit_status()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
