"""grep in each output mode and option vs raw rg with the same flags.

Trees: a copy of the interpreter's standard library (~2.5k files) and, with ``--big``, the
generated 60k-file tree of bench/search.py (where content mode hits the collection cap). The
tool runs in-process through Session.run; rg runs as a subprocess with the flags the tool
passes, printing everything (no cap). Tool and rg alternate (bench/harness.py); each row is the
median of the per-pair ratios with their min–max.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import sys
import tempfile
from pathlib import Path

from agent_toolsmith.config import Config
from agent_toolsmith.session import Session
from harness import exit_status, pairs_async
from search import COMMON, copy_stdlib, generate_tree, rg

#: Goal (docs/benchmarks.md): every mode ≤ 1.3× raw rg with the same flags.
MODE_GOAL = 1.3
RUNS = 15
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


async def bench_tree(name: str, tree: Path, pattern: str) -> None:
    session = Session(tree, config=Config(lsp_enabled=False))
    print(f"\n{name}: {len(rg(['--files', *COMMON, str(tree)], tree).splitlines())} files, pattern {pattern!r}")
    for label, params, rg_args in cases(tree, pattern):

        async def call(params: dict[str, object] = params) -> None:
            response = await session.run("grep", params)
            assert not response.is_error, response.content[:300]

        response = await session.run("grep", params)
        capped = "cap hit: rg stopped early" if response.metadata.get("count_is_lower_bound") else ""
        await pairs_async(
            f"grep {label}, {name}",
            call,
            functools.partial(rg, rg_args, tree),
            runs=RUNS,
            reference_name="rg",
            goal=MODE_GOAL,
            note=capped,
        )


async def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--big", action="store_true", help="also the generated 60k-file tree")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        stdlib = copy_stdlib(Path(tmp) / "stdlib")
        print(f"{RUNS} interleaved pairs per row", flush=True)
        await bench_tree("stdlib copy", stdlib, "def __init__")
        if args.big:
            await bench_tree("generated tree", generate_tree(Path(tmp) / "generated"), "TODO")
    return exit_status()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
