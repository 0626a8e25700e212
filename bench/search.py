"""grep/glob/ls through the tool vs raw rg with the same flags, on two trees.

Trees: a copy of the interpreter's standard library (~2.5k files) and a generated tree of 60k
files (real-repo scale). Cases include patterns that hit the tools' caps. Both sides are timed
from Python, interleaved so machine noise hits both alike: the tool through Session.run (what
an embedding backend waits for), rg as a subprocess with the flags the tool passes (minus the
cap: raw rg lists everything, which is what a user would run by hand).

Targets: grep ≤ 1.3×, glob ≤ 1.5×, ls ≤ 1.5×.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import subprocess
import sysconfig
import tempfile
import time
from pathlib import Path

from agent_toolsmith.config import Config
from agent_toolsmith.ripgrep import find_rg
from agent_toolsmith.session import Session

RUNS = 21
STDLIB = Path(sysconfig.get_path("stdlib"))
TARGETS = {"grep": 1.3, "glob": 1.5, "ls": 1.5}
GENERATED_FILES = 60_000
COMMON = ["--hidden", "--no-require-git", "--glob", "!.git"]


def generate_tree(root: Path, files: int = GENERATED_FILES) -> Path:
    """``files`` small Python files in 600-file directories, with matches in every file."""
    per_dir = 600
    body = b"import os\n\n\ndef handler(request):\n    # TODO: validate\n    return os.getcwd()\n"
    for d in range(files // per_dir):
        directory = root / f"service_{d:03d}" / "src" / "handlers"
        directory.mkdir(parents=True)
        for f in range(per_dir):
            (directory / f"handler_{f:04d}.py").write_bytes(body)
    return root


def rg(args: list[str], cwd: Path) -> str:
    binary = find_rg(None)
    assert binary
    return subprocess.run([binary, *args], cwd=cwd, capture_output=True, text=True, check=False).stdout


async def interleaved(
    session: Session, tool: str, params: dict[str, object], rg_args: list[str], cwd: Path
) -> tuple[float, float]:
    tool_times, raw_times = [], []
    for _ in range(RUNS):
        start = time.perf_counter()
        response = await session.run(tool, params)
        tool_times.append(time.perf_counter() - start)
        assert not response.is_error, response.content[:300]
        start = time.perf_counter()
        rg(rg_args, cwd)
        raw_times.append(time.perf_counter() - start)
    return statistics.median(tool_times), statistics.median(raw_times)


def cases(tree: Path, big: bool) -> list[tuple[str, str, dict[str, object], list[str]]]:
    grep_flags = ["-H", "-n", "--no-heading", "--null", "--field-match-separator=|", "--color=never", *COMMON]
    files = ["--files", "--null", "--no-messages", *COMMON]
    out: list[tuple[str, str, dict[str, object], list[str]]] = [
        ("grep", "def __repr__" if not big else "TODO", {"pattern": "def __repr__" if not big else "TODO"},
         [*grep_flags, "-e", "def __repr__" if not big else "TODO", "--", str(tree)]),
        ("glob", "**/*.py", {"pattern": "**/*.py"}, [*files, "--glob", "**/*.py", "--", str(tree)]),
        ("ls", "(all)", {}, [*files, "--", str(tree)]),
    ]  # fmt: skip
    if not big:
        out.append(("grep", "include *.py", {"pattern": "import", "include": "*.py"},
                    [*grep_flags, "--glob", "*.py", "-e", "import", "--", str(tree)]))  # fmt: skip
    return out


async def bench_tree(name: str, tree: Path, big: bool) -> list[tuple[str, float]]:
    session = Session(tree, config=Config(lsp_enabled=False))
    count = len(rg(["--files", *COMMON, str(tree)], tree).splitlines())
    print(f"\n{name}: {count} files")
    ratios = []
    for tool, label, params, rg_args in cases(tree, big):
        t_tool, t_rg = await interleaved(session, tool, params, rg_args, tree)
        response = await session.run(tool, params)
        capped = " (collection cap hit: rg stopped early)" if response.metadata.get("count_is_lower_bound") else ""
        ratio = t_tool / t_rg
        verdict = "ok" if ratio <= TARGETS[tool] else "OVER"
        print(f"  {tool:4} {label:14} tool {t_tool * 1000:8.1f} ms  rg {t_rg * 1000:8.1f} ms  "
              f"{ratio:5.2f}x (target <= {TARGETS[tool]}x) {verdict}{capped}")  # fmt: skip
        ratios.append((tool, ratio))
    return ratios


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        stdlib = Path(tmp) / "stdlib"
        shutil.copytree(STDLIB, stdlib, ignore=shutil.ignore_patterns("site-packages", "__pycache__"))
        generated = generate_tree(Path(tmp) / "generated")
        print(f"machine: {os.cpu_count()} cores; medians of {RUNS} interleaved runs")
        await bench_tree("stdlib copy", stdlib, big=False)
        await bench_tree("generated tree", generated, big=True)


if __name__ == "__main__":
    asyncio.run(main())
