"""Diagnostics round-trip: an edit through the tool vs the language server's own publish latency.

Protocol level: didChange sent → publishDiagnostics for that version received (no waiting policy).
Tool level: the whole `edit` call (match, write, sync, wait, format). Each tool edit is paired with a
protocol-level change on a second server instance of the same kind (A B A B, bench/harness.py), so
machine load hits both alike. pylsp (+ pyflakes): goal ≤ 1.2× + 50 ms (docs/benchmarks.md).
Then a large generated project with basedpyright (the Python type checker of the dev extra): warm
edits paired the same way, and the cold start of each (first publish after the server starts; one
pair), informational; how many tool results were unconfirmed is printed (``--load`` adds busy CPU
workers while measuring). Also the cold start of a first view of a .py file, and the one-shot CLI:
a `view` of a .py file costs no more than 300 ms over `--no-lsp` (no server is started for a view),
while a CLI `edit` starts the servers and reports their diagnostics (informational).
Then silent answers on a generated Django-sized project (bench/lsp_truth.py): breaking edits,
warm and cold (the edit starts the servers), idle and with every CPU busy — goal: none silent —
and the worst view, server start and lsp diagnostics against their bounds (+ 100 ms).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agent_toolsmith.config import Config
from agent_toolsmith.lsp.manager import LspManager
from agent_toolsmith.session import Session
from agent_toolsmith.state import StateDir
from harness import exit_status, record
from lsp_truth import ONLY_BASEDPYRIGHT as BASEDPYRIGHT_ALONE
from lsp_truth import api_run, cpu_load, django_sized_project, generated_breaks, worst_times

RUNS = int(os.environ.get("BENCH_RUNS", "10"))
#: Breaking edits per silent-answers row (warm), and per cold row (a session each).
SILENT_RUNS = int(os.environ.get("BENCH_SILENT_RUNS", "12"))
SILENT_COLD_RUNS = int(os.environ.get("BENCH_SILENT_COLD_RUNS", "4"))
#: What the tool adds to a diagnostics bound: reading, formatting, the rest of the call.
BOUND_SLACK_S = 0.100
CLI_RUNS = int(os.environ.get("BENCH_CLI_RUNS", "5"))
#: An edit through the tool vs the server's own publish latency for that change (pylsp).
EDIT_GOAL, EDIT_SLACK_S = 1.2, 0.050
#: A CLI view of a .py file vs the same with --no-lsp: no server starts for a view.
CLI_VIEW_GOAL, CLI_VIEW_SLACK_S = 1.0, 0.300
ROOT = Path(__file__).resolve().parents[1]
ONLY_PYLSP = {name: {"disabled": True} for name in ("basedpyright", "pyright", "ruff")}


async def publish_seconds(client: Any, path: Path, text: str) -> float:
    """didChange → the publish for that version, at the protocol level."""
    started = time.monotonic()
    version = client.sync(path, text, "python")
    while not (got := client.published.get(path.as_uri())) or got.version != version:
        assert time.monotonic() - started < 60, "pylsp published nothing for the change in 60 s"
        await asyncio.sleep(0.001)
    return time.monotonic() - started


async def answer_seconds(client: Any, path: Path, text: str) -> float:
    """didChange → the pull diagnostics answer for it (basedpyright answers pulls, and then
    publishes nothing), at the protocol level."""
    started = time.monotonic()
    client.sync(path, text, "python")
    assert await client.ask(path.as_uri(), 120) is not None, "basedpyright answered no pull diagnostics"
    return time.monotonic() - started


async def pylsp_rows(workspace: Path) -> None:
    """Tool edits and protocol changes on two pylsp instances, alternately; and the cold start."""
    config = Config(lsp_servers=ONLY_PYLSP)
    manager = LspManager(workspace, config, StateDir(config.state_dir))
    proto = workspace / "proto.py"
    proto.write_text("import os\n")
    await manager.after_view(proto)
    (client,) = manager.clients.values()
    session = Session(workspace, config=Config(lsp_servers=ONLY_PYLSP))
    (workspace / "tool.py").write_text("import os\nx = 1\n")
    started = time.monotonic()
    await session.run("view", {"file_path": "tool.py"})
    cold = time.monotonic() - started
    tool_times, protocol_times = [], []
    try:
        for i in range(RUNS):
            old, new = ("x = 1", f"x = undefined_{i}") if i % 2 == 0 else (f"x = undefined_{i - 1}", "x = 1")
            started = time.monotonic()
            response = await session.run("edit", {"file_path": "tool.py", "old_string": old, "new_string": new})
            tool_times.append(time.monotonic() - started)
            assert not response.is_error, response.content
            assert ("undefined name" in response.content) == (i % 2 == 0), response.content
            text = f"import os\nx = undefined_{i}\n" if i % 2 == 0 else "import os\nx = 1\n"
            proto.write_text(text)
            protocol_times.append(await publish_seconds(client, proto, text))
    finally:
        await session.close()
        await manager.close()
    record("LSP edit through the tool (pylsp, warm)", tool_times, protocol_times,
           reference="pylsp publish latency", goal=EDIT_GOAL, slack_s=EDIT_SLACK_S)  # fmt: skip
    print(f"  cold start (first view of a .py: server start + first diagnostics) {cold * 1000:.1f} ms")


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


async def large_project_rows(workspace: Path, target: Path) -> int:
    """basedpyright: cold (start + first answer; the tool's first edit in a fresh session) as one
    pair, then warm tool edits paired with protocol changes on a second instance. Returns how many
    tool results were unconfirmed."""
    config = Config(lsp_servers=ONLY_BASEDPYRIGHT)
    manager = LspManager(workspace, config, StateDir(workspace / ".state-proto"))
    started = time.monotonic()
    ((client, _),) = (await manager.clients_for(target, budget=120))[0]
    text = target.read_text()
    client.sync(target, text, "python")
    assert await client.ask(target.as_uri(), 120) is not None, "basedpyright answered no pull diagnostics"
    cold_server = time.monotonic() - started
    # The view starts no server (as in the one-shot CLI): the first edit is the cold one.
    session = Session(workspace, config=Config(lsp_servers=ONLY_BASEDPYRIGHT, lsp_on_view=False))
    rel = str(target.relative_to(workspace))
    await session.run("view", {"file_path": rel, "limit": 1})
    tool_times, protocol_times, unconfirmed = [], [], 0
    try:
        for i in range(RUNS + 1):
            old, new = ("return n * 0\n", "return n * 'x'\n") if i % 2 == 0 else ("return n * 'x'\n", "return n * 0\n")
            started = time.monotonic()
            response = await session.run("edit", {"file_path": rel, "old_string": old, "new_string": new})
            tool_times.append(time.monotonic() - started)
            unconfirmed += "unconfirmed" in response.content
            if i:
                changed = text + (f"\nbroken{i}: int = 'x'\n" if i % 2 == 0 else "\n")
                protocol_times.append(await answer_seconds(client, target, changed))
    finally:
        await session.close()
        await manager.close()
    record("LSP edit, large project, cold (basedpyright)", tool_times[:1], [cold_server],
           reference="server start + first answer", goal=None)  # fmt: skip
    record("LSP edit, large project, warm (basedpyright)", tool_times[1:], protocol_times,
           reference="basedpyright pull latency", goal=None)  # fmt: skip
    return unconfirmed


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
            unconfirmed = await large_project_rows(Path(tmp), target)
    finally:
        for worker in workers:
            worker.kill()
            worker.join(10)
    label = "under CPU load" if load else "machine as is"
    print(f"  large project: {LARGE_MODULES} modules, {label}; unconfirmed results: {unconfirmed} of {RUNS + 1}")


def cli_seconds(workspace: Path, state: Path, *args: str) -> float:
    """Wall time of one `python -m cmd.tools` call, the way a script runs a tool."""
    env = {**os.environ, "TOOLSMITH_STATE_DIR": str(state)}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "cmd.tools", "--cwd", str(workspace), "--session", "bench", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stdout + done.stderr
    return elapsed


def one_shot_cli_rows(workspace: Path) -> None:
    """CLI view of a .py with and without LSP, alternately; one CLI edit that reports diagnostics
    (servers started cold) beside one more --no-lsp view."""
    (workspace / "cli.py").write_text("import os\nx = 1\n")
    state = workspace / ".state"
    view = '{"file_path": "cli.py"}'
    with_lsp, without = [], []
    for _ in range(CLI_RUNS):
        with_lsp.append(cli_seconds(workspace, state, "view", view))
        without.append(cli_seconds(workspace, state, "--no-lsp", "view", view))
    record("CLI view of a .py", with_lsp, without, reference="--no-lsp", goal=CLI_VIEW_GOAL, slack_s=CLI_VIEW_SLACK_S)
    edit = '{"file_path": "cli.py", "old_string": "x = 1", "new_string": "x = undefined_name"}'
    edit_s = cli_seconds(workspace, state, "edit", edit)
    view_s = cli_seconds(workspace, state, "--no-lsp", "view", view)
    record("CLI edit with diagnostics (servers cold)", [edit_s], [view_s], reference="--no-lsp view", goal=None)


async def silent_rows(load: bool) -> int:
    """Breaking edits on a generated Django-sized project: warm and cold, answers classified
    (reported / unconfirmed / silent), and the bounds; returns how many answers were silent."""
    from agent_toolsmith.lsp import manager

    label = "loaded" if load else "idle"
    with tempfile.TemporaryDirectory() as tmp, cpu_load(load):
        root = Path(tmp)
        django_sized_project(root)
        config = Config(lsp_servers=BASEDPYRIGHT_ALONE)
        warm, warm_ref = await api_run(root, generated_breaks(root, SILENT_RUNS), cold=False, config=config)
        cold_config = Config(lsp_servers=BASEDPYRIGHT_ALONE, lsp_on_view=False)
        cold, cold_ref = await api_run(root, generated_breaks(root, SILENT_COLD_RUNS), cold=True, config=cold_config)
        heavy = [f"shop/pkg{p}/mod{m}.py" for p, m in ((3, 10), (11, 20), (17, 0))]  # 25 old errors each
        worst = await worst_times(root, heavy, config)
    reference = "the same edit without diagnostics"
    for name, tally, times in (("warm", warm, warm_ref), ("cold", cold, cold_ref)):
        record(f"LSP breaking edit, Django-sized, {name}, {label}", tally.seconds, times, reference=reference,
               goal=None, note=tally.summary())  # fmt: skip
        for case in tally.silent_cases:
            print(f"  SILENT ({name}, {label}): {case}")
    bounds = (("view", manager.VIEW_WAIT_CAP_S), ("start", manager.VIEW_COLD_CAP_S),
              ("diagnostics", manager.QUERY_WAIT_S))  # fmt: skip
    for kind, bound in bounds:
        record(f"LSP worst {kind} vs its bound, Django-sized, {label}", [worst[kind]], [bound + BOUND_SLACK_S],
               reference="bound + 100 ms", goal=1.0)  # fmt: skip
    return warm.silent + cold.silent


async def main() -> int:
    silent = 0
    if "--large-only" not in sys.argv:
        for load in (False, True):
            silent += await silent_rows(load)
        if silent:
            print(f"silent answers: {silent} (goal: none)")
    await large_project_report(load="--load" in sys.argv)
    if "--large-only" in sys.argv:
        return exit_status()
    with tempfile.TemporaryDirectory() as tmp:
        await pylsp_rows(Path(tmp))
    with tempfile.TemporaryDirectory() as tmp:
        one_shot_cli_rows(Path(tmp))
    return exit_status() or (1 if silent else 0)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
