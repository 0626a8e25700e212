"""CLI cold start: `python -m cmd.tools view …` vs `python -c pass` (target ≤ 8×)."""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = 15


def _time(argv: list[str]) -> float:
    samples = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(argv, cwd=ROOT, capture_output=True, check=False, timeout=60)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "f.txt"
        target.write_text("hello\n" * 100)
        baseline = _time([sys.executable, "-c", "pass"])
        view = _time([sys.executable, "-m", "cmd.tools", "--cwd", tmp, "view", f'{{"file_path": "{target}"}}'])
    print(f"python -c pass        {baseline * 1000:7.1f} ms")
    print(f"cmd.tools view        {view * 1000:7.1f} ms")
    print(f"ratio                 {view / baseline:7.2f}x  (target <= 8x)")


if __name__ == "__main__":
    main()
