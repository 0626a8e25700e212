"""CLI cold start: one tool call through the installed `toolsmith` script, whole process.

view, grep and bash vs `python -c pass` with the same interpreter, and `bash true` vs `--list`
(a shell call must not pay for imports a listing does not). Each row alternates the two
commands (bench/harness.py) and reports the median of the per-pair ratios.

The commands run with Python's bytecode cache allowed (PYTHONDONTWRITEBYTECODE removed from their
environment; the warm-up run writes it), as an installed package has it: without it every call
compiles the package's modules again (about 190 ms here), which no user pays. They use a fresh
state directory: what other runs on this machine left in the user's (a journal a killed process
left behind, which the first call in any workspace looks at) is not what is measured.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from harness import exit_status, pairs_async

#: Goals: CLI view ≤ 2.5× `python -c pass` (issue #28); grep and bash ≤ 8× (docs/benchmarks.md);
#: `bash true` ≤ 1.3× `--list`.
VIEW_GOAL = 2.5
GREP_GOAL = 8.0
BASH_GOAL = 8.0
BASH_VS_LIST_GOAL = 1.3
RUNS = 21
SCRIPT = str(Path(sys.executable).parent / "toolsmith")


def with_bytecode_cache() -> dict[str, str]:
    """This environment, letting Python write and use the bytecode cache as installs have it."""
    return {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def command(argv: list[str], state_dir: str) -> Callable[[], object]:
    env = {**with_bytecode_cache(), "TOOLSMITH_STATE_DIR": state_dir}

    def run() -> object:
        return subprocess.run(argv, capture_output=True, check=True, timeout=60, env=env)

    return run


async def main() -> int:
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as state:
        (Path(tmp) / "f.txt").write_text("hello\n" * 100)
        python = command([sys.executable, "-c", "pass"], state)
        tool = {
            "view": command([SCRIPT, "--cwd", tmp, "view", '{"file_path": "f.txt"}'], state),
            "grep": command([SCRIPT, "--cwd", tmp, "grep", '{"pattern": "hello"}'], state),
            "bash true": command([SCRIPT, "--cwd", tmp, "bash", '{"command": "true"}'], state),
        }
        goals = {"view": VIEW_GOAL, "grep": GREP_GOAL, "bash true": BASH_GOAL}
        print(f"{RUNS} interleaved pairs per row", flush=True)
        for name, run in tool.items():
            await pairs_async(f"CLI {name}", run, python, runs=RUNS, reference_name="python -c pass", goal=goals[name])
        listing = command([SCRIPT, "--cwd", tmp, "--list"], state)
        await pairs_async("CLI bash true vs --list", tool["bash true"], listing, runs=RUNS,
                          reference_name="toolsmith --list", goal=BASH_VS_LIST_GOAL)  # fmt: skip
    return exit_status()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
