"""CLI cold start: one tool call through the installed `toolsmith` script, whole process.

view, grep and bash vs `python -c pass` (target ≤ 8×), and `bash true` vs `--list` (target ≤ 1.3×:
a shell call must not pay for imports a listing does not). Interleaved, medians.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 15
SCRIPT = str(Path(sys.executable).parent / "toolsmith")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "f.txt").write_text("hello\n" * 100)
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "toolsmith --list": [SCRIPT, "--list"],
            "toolsmith view": [SCRIPT, "--cwd", tmp, "view", '{"file_path": "f.txt"}'],
            "toolsmith grep": [SCRIPT, "--cwd", tmp, "grep", '{"pattern": "hello"}'],
            "toolsmith bash true": [SCRIPT, "--cwd", tmp, "bash", '{"command": "true"}'],
        }
        samples: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(RUNS):
            for name, argv in commands.items():
                start = time.perf_counter()
                subprocess.run(argv, capture_output=True, check=True, timeout=60)
                samples[name].append(time.perf_counter() - start)
    median = {name: statistics.median(values) for name, values in samples.items()}
    base = median["python -c pass"]
    for name, value in median.items():
        print(f"{name:22} {value * 1000:7.1f} ms  {value / base:5.2f}x python -c pass")
    for name in ("toolsmith view", "toolsmith grep", "toolsmith bash true"):
        verdict = "ok" if median[name] / base <= 8 else "OVER"
        print(f"{name} / python -c pass: {median[name] / base:.2f}x (target <= 8x) {verdict}")
    ratio = median["toolsmith bash true"] / median["toolsmith --list"]
    print(f"bash true / --list: {ratio:.2f}x (target <= 1.3x) {'ok' if ratio <= 1.3 else 'OVER'}")


if __name__ == "__main__":
    main()
