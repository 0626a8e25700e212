"""grep in each output mode and option vs raw rg with the same flags.

Trees: a copy of the interpreter's standard library (~2.5k files) and, with ``--big``, the
generated 60k-file tree of bench/search.py (where content mode hits the collection cap). The
tool runs in-process through Session.run; rg runs as a subprocess with the flags the tool
passes, printing everything (no cap). Runs are interleaved A B A B so machine noise hits both;
the median of the per-pair ratios is printed with their min–max, and the ratio of the fastest
runs (best tool / best rg: the least noisy estimate on a busy machine).

Target: every mode ≤ 1.3× raw rg.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from agent_toolsmith.config import Config
from agent_toolsmith.session import Session
from search import COMMON, STDLIB, generate_tree, rg

RUNS = 11
TARGET = 1.3
BASE = ["--no-messages", "--null", "--color=never", *COMMON, "-H"]
CONTENT = [*BASE, "-n", "--no-heading", "--field-match-separator=|"]
CONTEXT = ["--field-context-separator=-", "--no-context-separator"]

Case = tuple[str, dict[str, object], list[str]]


def cases(tree: Path, pattern: str) -> list[Case]:
    end = ["-e", pattern, "--", str(tree)]
    return [
        ("content", {"pattern": pattern}, [*CONTENT, *end]),
        ("content, context 2", {"pattern": pattern, "context": 2}, [*CONTENT, *CONTEXT, "-B", "2", "-A", "2", *end]),
        ("content, -i --type py", {"pattern": pattern, "case_insensitive": True, "type": "py"},
         [*CONTENT, "--type", "py", "--ignore-case", *end]),
        ("content, page 3", {"pattern": pattern, "head_limit": 50, "offset": 100}, [*CONTENT, *end]),
        ("multiline", {"pattern": r"def \w+\(self\):\n\s+return", "multiline": True},
         [*CONTENT, "--multiline", "--multiline-dotall", "-e", r"def \w+\(self\):\n\s+return", "--", str(tree)]),
        ("files_with_matches", {"pattern": pattern, "output_mode": "files_with_matches"},
         [*BASE, "--files-with-matches", *end]),
        ("count", {"pattern": pattern, "output_mode": "count"}, [*BASE, "--count", *end]),
    ]  # fmt: skip


async def pairs(
    session: Session, params: dict[str, object], rg_args: list[str], cwd: Path
) -> list[tuple[float, float]]:
    out = []
    for _ in range(RUNS):
        start = time.perf_counter()
        response = await session.run("grep", params)
        tool = time.perf_counter() - start
        assert not response.is_error, response.content[:300]
        start = time.perf_counter()
        rg(rg_args, cwd)
        out.append((tool, time.perf_counter() - start))
    return out


async def bench_tree(name: str, tree: Path, pattern: str) -> None:
    session = Session(tree, config=Config(lsp_enabled=False))
    print(f"\n{name}: {len(rg(['--files', *COMMON, str(tree)], tree).splitlines())} files, pattern {pattern!r}")
    for label, params, rg_args in cases(tree, pattern):
        timed = await pairs(session, params, rg_args, tree)
        ratios = [t / r for t, r in timed]
        median = statistics.median(ratios)
        response = await session.run("grep", params)
        capped = "  (cap hit: rg stopped early)" if response.metadata.get("count_is_lower_bound") else ""
        print(
            f"  {label:22} tool {statistics.median(t for t, _ in timed) * 1000:7.1f} ms  "
            f"rg {statistics.median(r for _, r in timed) * 1000:7.1f} ms  "
            f"ratio {median:4.2f}x (min {min(ratios):4.2f}, max {max(ratios):4.2f}; "
            f"best/best {min(t for t, _ in timed) / min(r for _, r in timed):4.2f}x) "
            f"{'ok' if median <= TARGET else 'OVER'}{capped}"
        )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--big", action="store_true", help="also the generated 60k-file tree")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        stdlib = Path(tmp) / "stdlib"
        shutil.copytree(STDLIB, stdlib, ignore=shutil.ignore_patterns("site-packages", "__pycache__"))
        print(f"machine: {os.cpu_count()} cores; {RUNS} interleaved pairs per case; target <= {TARGET}x")
        await bench_tree("stdlib copy", stdlib, "def __init__")
        if args.big:
            await bench_tree("generated tree", generate_tree(Path(tmp) / "generated"), "TODO")


if __name__ == "__main__":
    asyncio.run(main())
