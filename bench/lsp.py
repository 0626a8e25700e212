"""Diagnostics round-trip with pylsp: an edit through the tool vs the server's own publish latency.

Protocol level: didChange sent → publishDiagnostics for that version received (no waiting policy).
Tool level: the whole `edit` call (match, write, sync, wait, format). Target ≤ 1.2× + 50 ms.
Then a large generated project with basedpyright (the Python type checker of the dev extra):
tool time of an edit vs the server's own versioned-publish latency, cold (fresh session) and warm,
and how many tool results were unconfirmed (``--load`` adds busy CPU workers while measuring).
Also prints the cold start (first view of a .py file: server start + first diagnostics), and
the one-shot CLI: a `view` of a .py file must cost no more than 300 ms over `--no-lsp` (no server
is started for a view), while a CLI `edit` starts the servers and reports their diagnostics.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agent_toolsmith.config import Config
from agent_toolsmith.lsp.manager import LspManager
from agent_toolsmith.session import Session
from agent_toolsmith.state import StateDir

RUNS = 8
CLI_RUNS = 5
ROOT = Path(__file__).resolve().parents[1]
ONLY_PYLSP = {name: {"disabled": True} for name in ("basedpyright", "pyright", "ruff")}


async def protocol_latency(workspace: Path) -> float:
    config = Config(lsp_servers=ONLY_PYLSP)
    manager = LspManager(workspace, config, StateDir(config.state_dir))
    f = workspace / "proto.py"
    f.write_text("import os\n")
    await manager.after_view(f)
    (client,) = manager.clients.values()
    samples = []
    for i in range(RUNS):
        text = f"import os\nx = undefined_{i}\n" if i % 2 == 0 else "import os\nx = 1\n"
        f.write_text(text)
        start = time.monotonic()
        version = client.sync(f, text, "python")
        while not (got := client.published.get(f.as_uri())) or got.version != version:
            await asyncio.sleep(0.001)
        samples.append(time.monotonic() - start)
    await manager.close()
    return statistics.median(samples)


async def tool_latency(workspace: Path) -> tuple[float, float]:
    session = Session(workspace, config=Config(lsp_servers=ONLY_PYLSP))
    f = workspace / "tool.py"
    f.write_text("import os\nx = 1\n")
    start = time.monotonic()
    await session.run("view", {"file_path": "tool.py"})
    cold = time.monotonic() - start
    samples = []
    for i in range(RUNS):
        old, new = ("x = 1", f"x = undefined_{i}") if i % 2 == 0 else (f"x = undefined_{i - 1}", "x = 1")
        start = time.monotonic()
        response = await session.run("edit", {"file_path": "tool.py", "old_string": old, "new_string": new})
        samples.append(time.monotonic() - start)
        assert not response.is_error, response.content
        assert ("undefined name" in response.content) == (i % 2 == 0), response.content
    await session.close()
    return cold, statistics.median(samples)


LARGE_MODULES = 400
ONLY_BASEDPYRIGHT = {name: {"disabled": True} for name in ("pyright", "pylsp", "ruff")}


def large_project(root: Path) -> Path:
    """LARGE_MODULES modules in packages, each importing the one before and using its class."""
    (root / "pyproject.toml").write_text("[project]\nname = 'big'\nversion = '0'\n")
    for i in range(LARGE_MODULES):
        package = root / "big" / f"pkg{i // 50}"
        package.mkdir(parents=True, exist_ok=True)
        (package / "__init__.py").touch()
        head = f"from big.pkg{(i - 1) // 50}.mod{i - 1} import Thing{i - 1}\n\n\n" if i else ""
        body = "".join(f"    def method{j}(self, n: int) -> int:\n        return n * {j}\n\n" for j in range(20))
        use = f"\n\ndef use{i}() -> int:\n    return Thing{i - 1}().method1(1)\n" if i else ""
        (package / f"mod{i}.py").write_text(f"{head}class Thing{i}:\n{body}{use}")
    (root / "big" / "__init__.py").touch()
    return root / "big" / f"pkg{(LARGE_MODULES - 1) // 50}" / f"mod{LARGE_MODULES - 1}.py"


async def server_publish_latency(workspace: Path, target: Path) -> tuple[float, float]:
    """basedpyright's own latency: start + didOpen -> first publish (cold); didChange -> the
    versioned publish for it (warm, median)."""
    config = Config(lsp_servers=ONLY_BASEDPYRIGHT)
    manager = LspManager(workspace, config, StateDir(workspace / ".state-proto"))
    start = time.monotonic()
    ((client, _),) = (await manager.clients_for(target, budget=120))[0]
    text = target.read_text()
    version = client.sync(target, text, "python")
    while not (got := client.published.get(target.as_uri())) or got.version != version:
        await asyncio.sleep(0.005)
    cold = time.monotonic() - start
    samples = []
    for i in range(RUNS):
        changed = text + (f"\nbroken{i}: int = 'x'\n" if i % 2 == 0 else "\n")
        start = time.monotonic()
        version = client.sync(target, changed, "python")
        while not (got := client.published.get(target.as_uri())) or got.version != version:
            await asyncio.sleep(0.005)
        samples.append(time.monotonic() - start)
    await manager.close()
    return cold, statistics.median(samples)


async def tool_on_large(workspace: Path, target: Path) -> tuple[float, float, int]:
    """An edit through the tool: the first in a fresh session (cold), then warm (median), and
    how many of all those results were unconfirmed."""
    # The view starts no server (as in the one-shot CLI): the first edit is the cold one.
    session = Session(workspace, config=Config(lsp_servers=ONLY_BASEDPYRIGHT, lsp_on_view=False))
    rel = str(target.relative_to(workspace))
    await session.run("view", {"file_path": rel, "limit": 1})
    samples, unconfirmed = [], 0
    for i in range(RUNS + 1):
        old, new = ("return n * 0\n", "return n * 'x'\n") if i % 2 == 0 else ("return n * 'x'\n", "return n * 0\n")
        start = time.monotonic()
        response = await session.run("edit", {"file_path": rel, "old_string": old, "new_string": new})
        samples.append(time.monotonic() - start)
        unconfirmed += "unconfirmed" in response.content
    await session.close()
    return samples[0], statistics.median(samples[1:]), unconfirmed


def burn(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


async def large_project_report(load: bool) -> None:
    import multiprocessing

    workers = [multiprocessing.Process(target=burn, args=(600,)) for _ in range(os.cpu_count() or 2)] if load else []
    for worker in workers:
        worker.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            target = large_project(Path(tmp))
            cold_server, warm_server = await server_publish_latency(Path(tmp), target)
            cold_tool, warm_tool, unconfirmed = await tool_on_large(Path(tmp), target)
    finally:
        for worker in workers:
            worker.kill()
            worker.join(10)
    label = "under CPU load" if load else "machine as is"
    print(f"large project ({LARGE_MODULES} modules, basedpyright, {label}):")
    print(f"  server cold (start + first publish) {cold_server * 1000:8.1f} ms; "
          f"tool edit cold {cold_tool * 1000:8.1f} ms -> ratio {cold_tool / cold_server:.2f}x")  # fmt: skip
    print(f"  server warm (change -> publish)     {warm_server * 1000:8.1f} ms; "
          f"tool edit warm {warm_tool * 1000:8.1f} ms -> ratio {warm_tool / warm_server:.2f}x")  # fmt: skip
    print(f"  unconfirmed results: {unconfirmed} of {RUNS + 1}")


def cli_seconds(workspace: Path, state: Path, *args: str) -> float:
    """Wall time of one `python -m cmd.tools` call, the way a script runs a tool."""
    env = {**os.environ, "TOOLSMITH_STATE_DIR": str(state)}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "cmd.tools", "--cwd", str(workspace), "--session", "bench", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stdout + done.stderr
    return elapsed


def one_shot_cli(workspace: Path) -> tuple[float, float, float]:
    """Median CLI view of a .py with and without LSP, and one CLI edit that reports diagnostics."""
    (workspace / "cli.py").write_text("import os\nx = 1\n")
    state = workspace / ".state"
    view = '{"file_path": "cli.py"}'
    with_lsp = statistics.median(cli_seconds(workspace, state, "view", view) for _ in range(CLI_RUNS))
    without = statistics.median(cli_seconds(workspace, state, "--no-lsp", "view", view) for _ in range(CLI_RUNS))
    edit = '{"file_path": "cli.py", "old_string": "x = 1", "new_string": "x = undefined_name"}'
    return with_lsp, without, cli_seconds(workspace, state, "edit", edit)


async def main() -> None:
    await large_project_report(load="--load" in sys.argv)
    if "--large-only" in sys.argv:
        return
    with tempfile.TemporaryDirectory() as tmp:
        protocol = await protocol_latency(Path(tmp))
        cold, tool = await tool_latency(Path(tmp))
    with tempfile.TemporaryDirectory() as tmp:
        cli_view, cli_view_no_lsp, cli_edit = one_shot_cli(Path(tmp))
    budget = 1.2 * protocol + 0.050
    print(f"pylsp publish latency (protocol)  {protocol * 1000:7.1f} ms")
    print(f"edit through the tool (warm)      {tool * 1000:7.1f} ms")
    print(f"ratio {tool / protocol:.2f}x; budget 1.2x + 50 ms = {budget * 1000:.1f} ms -> "
          f"{'within' if tool <= budget else 'OVER'}")  # fmt: skip
    print(f"cold start (first view of a .py)  {cold * 1000:7.1f} ms")
    over = cli_view - cli_view_no_lsp
    print(f"CLI view of a .py                 {cli_view * 1000:7.1f} ms; --no-lsp {cli_view_no_lsp * 1000:.1f} ms; "
          f"over by {over * 1000:.1f} ms (budget 300 ms) -> {'within' if over <= 0.300 else 'OVER'}")  # fmt: skip
    print(f"CLI edit with diagnostics (cold)  {cli_edit * 1000:7.1f} ms")


if __name__ == "__main__":
    asyncio.run(main())
