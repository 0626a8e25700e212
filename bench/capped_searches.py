"""Searches that hit their caps on a 60k-file tree: their cost, and no hangs.

1. Capped grep (every file matches; the tool collects MAX_MATCHES_COLLECTED matches, ranks the
   files newest first and shows the first page) vs ``rg <the tool's flags> | head -n CAP`` with
   CAP the same number of matches: the cost of what the tool adds to stopping rg at the cap
   (stat per matched file, verifying each matched file through the no-follow walk, ranking,
   rendering). Tool and reference alternate (bench/harness.py).
2. Hangs at the cap: 1000 capped grep/glob/ls calls in one process, each stopping rg with output
   still unread; every call gets a 30 s timeout and any that reaches it counts as a hang.
"""

from __future__ import annotations

import asyncio
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agent_toolsmith.config import Config
from agent_toolsmith.llm.tools.grep import MAX_MATCHES_COLLECTED
from agent_toolsmith.ripgrep import find_rg
from agent_toolsmith.session import Session
from harness import exit_status, pairs_async, record
from search import COMMON, generate_tree

#: Goal (issue #28): capped grep ≤ 1.3× `rg | head -n CAP` with the same flags, in-process.
CAPPED_GREP_GOAL = 1.3
#: Goal: no call hangs at its cap (0 in ≥ 1000 calls).
HANG_GOAL = 0
RUNS = 15
CALLS = 1002
TIMEOUT_S = 30
GREP_FLAGS = ["-H", "--no-messages", "--null", "--color=never", "-n", "--no-heading", "--field-match-separator=|"]


def rg_head(tree: Path, pattern: str, cap: int) -> None:
    binary = find_rg(None)
    assert binary
    argv = [binary, *GREP_FLAGS, *COMMON, "-e", pattern, "--", str(tree)]
    command = f"{shlex.join(argv)} | head -n {cap} > /dev/null"
    subprocess.run(command, shell=True, cwd=tree, check=False)


async def bench_capped_grep(session: Session, tree: Path) -> None:
    async def call() -> None:
        response = await session.run("grep", {"pattern": "TODO"})
        assert response.metadata["count_is_lower_bound"], response.metadata

    await pairs_async(
        "capped grep (10 000 matches), generated tree",
        call,
        lambda: rg_head(tree, "TODO", MAX_MATCHES_COLLECTED),
        runs=RUNS,
        reference_name=f"rg | head -n {MAX_MATCHES_COLLECTED}",
        goal=CAPPED_GREP_GOAL,
    )


async def hangs(session: Session) -> int:
    calls = [("glob", {"pattern": "**/*"}), ("grep", {"pattern": "TODO|return"}), ("ls", {})]
    count = 0
    times: dict[str, list[float]] = {tool: [] for tool, _ in calls}
    for i in range(CALLS):
        tool, params = calls[i % len(calls)]
        start = time.perf_counter()
        try:
            response = await asyncio.wait_for(session.run(tool, params), TIMEOUT_S)
        except TimeoutError:
            count += 1
            continue
        times[tool].append(time.perf_counter() - start)
        assert response.metadata["count_is_lower_bound"], (tool, response.metadata)
    for tool, values in times.items():
        print(f"  {tool:4} {len(values)} capped calls, median {statistics.median(values) * 1000:.1f} ms, "
              f"max {max(values) * 1000:.1f} ms")  # fmt: skip
    return count


async def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        tree = generate_tree(Path(tmp) / "tree")
        session = Session(tree, config=Config(lsp_enabled=False))
        await bench_capped_grep(session, tree)
        hung = await hangs(session)
    verdict = "ok" if hung <= HANG_GOAL else "OVER"
    print(f"  hangs: {hung} of {CALLS} capped calls (goal {HANG_GOAL}) {verdict}", flush=True)
    if hung > HANG_GOAL:
        # A row the table shows: one hang is one too many (ratio = hangs per call).
        record("hangs at the cap", [float(hung)], [float(CALLS)], reference="calls", goal=0.0)
    return exit_status()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
