"""view on a 1 GiB file, the whole call through Session.run, vs `tail -n +N | head -n 2000`.

- offset 0: cost must not depend on the file size (compared with a 1 MiB file too);
- near the end (the last 3000 lines): the first view in a fresh session scans for line starts
  (memcmp-speed newline counting); a later view in the same session starts from the session's
  sparse index. Target: deep view ≤ 3× `tail | head`.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from agent_toolsmith.config import Config
from agent_toolsmith.session import Session

LINE = ("x" * 99 + "\n").encode()
RUNS = 7


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


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        small, big = Path(tmp) / "small.txt", Path(tmp) / "big.txt"
        make(small, 1024 * 1024)
        lines = make(big, 1024 * 1024 * 1024)
        deep = lines - 3000
        config = Config(lsp_enabled=False)
        rows: list[tuple[str, float, float, float | None]] = []
        warm = Session(tmp, config=config)
        t0_small = statistics.median([await view(warm, small, 0) for _ in range(RUNS)])
        t0_big = statistics.median([await view(warm, big, 0) for _ in range(RUNS)])
        rows.append(("offset 0: 1 GiB vs 1 MiB file", t0_big, t0_small, 2.0))
        cold, raw = [], []
        for _ in range(RUNS):  # interleaved; a fresh session each time: no index yet
            cold.append(await view(Session(tmp, config=config), big, deep))
            raw.append(tail_head(big, deep))
        rows.append(("near the end, fresh session", statistics.median(cold), statistics.median(raw), 3.0))
        await view(warm, big, deep)
        hot = statistics.median([await view(warm, big, deep - 2000 * i) for i in range(RUNS)])
        rows.append(("near the end, indexed", hot, statistics.median(raw), 3.0))
    print(f"1 GiB file: {lines} lines")
    for label, tool, base, target in rows:
        ratio = tool / base
        verdict = "" if target is None else f" (target <= {target}x) {'ok' if ratio <= target else 'OVER'}"
        print(f"{label:32} tool {tool * 1000:8.1f} ms  baseline {base * 1000:8.1f} ms  {ratio:5.2f}x{verdict}")
    print("(baseline: the 1 MiB view for offset 0; `tail -n +N | head -n 2000` otherwise)")


if __name__ == "__main__":
    asyncio.run(main())
