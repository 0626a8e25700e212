"""bash tool overhead, interleaved with its reference (bench/harness.py):

- `true` through the tool (Session.run) vs a raw ``subprocess.run(["bash", "-c", "true"])``;
- the first bash call of a fresh process whose line needs the full parser (bashlex), with the
  parse tables cached (internal/shell/bashlex_tables.py) vs built from the grammar (an empty
  cache directory each time, as every process paid before the cache); timed inside the child
  from the session's creation to the call's answer.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from agent_toolsmith.config import Config
from agent_toolsmith.session import Session
from harness import exit_status, pairs_async, record

RUNS = int(os.environ.get("BENCH_RUNS", "40"))
FRESH_RUNS = int(os.environ.get("BENCH_FRESH_RUNS", "12"))
#: bash `true` through the tool vs raw subprocess.run (docs/benchmarks.md).
TRUE_GOAL, TRUE_SLACK_S = 1.5, 0.020
#: First bash call of a process with cached tables vs built ones: it should cost no more.
FIRST_CALL_GOAL = 1.0
#: Hang guard for one child process.
CHILD_TIMEOUT_S = 120
#: The child: one session, one bash call that needs bashlex (`&&`), its time in seconds on stdout.
FIRST_CALL = """
import asyncio, sys, tempfile, time
from pathlib import Path
from agent_toolsmith.config import Config
from agent_toolsmith.session import Session

async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        session = Session(tmp, config=Config(lsp_enabled=False, state_dir=Path(tmp) / ".state"))
        response = await session.run("bash", {"command": "true && echo ok"})
        elapsed = time.perf_counter() - started
        assert response.content.strip() == "ok", response.content
        await session.close()
    print(elapsed)

asyncio.run(main())
"""


def first_call_seconds(cache_home: Path) -> float:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home)}
    done = subprocess.run(
        [sys.executable, "-c", FIRST_CALL], env=env, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S
    )
    if done.returncode != 0:
        raise SystemExit(f"first-call child failed: {done.stderr}")
    return float(done.stdout.strip().splitlines()[-1])


def first_call_row() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        warm = Path(tmp) / "warm"
        first_call_seconds(warm)  # builds and saves the tables once
        cached, built = [], []
        for n in range(FRESH_RUNS):
            cached.append(first_call_seconds(warm))
            built.append(first_call_seconds(Path(tmp) / f"empty-{n}"))
    record(
        "first bash call of a process, tables cached",
        cached,
        built,
        reference="tables built (no cache)",
        goal=FIRST_CALL_GOAL,
    )


async def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        session = Session(tmp, config=Config(lsp_enabled=False, state_dir=Path(tmp) / ".state"))

        async def tool() -> None:
            response = await session.run("bash", {"command": "true"})
            assert response.metadata["exit_code"] == 0, json.dumps(response.metadata)

        def raw() -> None:
            subprocess.run(["bash", "-c", "true"], check=True)

        await pairs_async(
            "bash `true` through the tool",
            tool,
            raw,
            runs=RUNS,
            reference_name="subprocess.run",
            goal=TRUE_GOAL,
            slack_s=TRUE_SLACK_S,
        )
        await session.close()
    first_call_row()
    return exit_status()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
