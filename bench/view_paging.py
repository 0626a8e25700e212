"""view paging cost: lines 0-2000 of a 1 GiB file vs a 1 MiB file (target ratio ≤ 2×)."""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from toolsmith.config import Config
from toolsmith.session import Session

LINE = ("x" * 99 + "\n").encode()
RUNS = 7


def _make(path: Path, size: int) -> None:
    block = LINE * (1024 * 1024 // len(LINE) + 1)
    block = block[: len(block) - len(block) % len(LINE)]
    with path.open("wb") as handle:
        written = 0
        while written < size:
            handle.write(block)
            written += len(block)


async def _time(session: Session, path: Path) -> float:
    samples = []
    for _ in range(RUNS):
        start = time.perf_counter()
        response = await session.run("view", {"file_path": str(path), "offset": 0, "limit": 2000})
        samples.append(time.perf_counter() - start)
        assert not response.is_error, response.content
    return statistics.median(samples)


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        small, big = Path(tmp) / "small.txt", Path(tmp) / "big.txt"
        _make(small, 1024 * 1024)
        _make(big, 1024 * 1024 * 1024)
        session = Session(tmp, config=Config(lsp_enabled=False))
        t_small = await _time(session, small)
        t_big = await _time(session, big)
    print(f"view 1 MiB  {t_small * 1000:7.2f} ms")
    print(f"view 1 GiB  {t_big * 1000:7.2f} ms")
    print(f"ratio       {t_big / t_small:7.2f}x  (target <= 2x)")


if __name__ == "__main__":
    asyncio.run(main())
