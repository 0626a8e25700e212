"""CLI calls through a warm session host vs one-shot calls (docs/cli-session-host.md).

Interleaved, so machine load hits both alike: `view` of a small text file without and with
`--session`, and `edit` of a Python file with language-server diagnostics through the host
(servers warm) vs a `--session` call with the host turned off (`TOOLSMITH_SESSION_HOST=0`: the
servers start cold every call, as every CLI edit did before the host). The raw reference is the bare
interpreter start (`python -c pass`). Rows go through bench/harness.py (median and min–max of the
per-pair ratios); none has a documented goal, so all are informational. The host is ended at the end.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import exit_status, record

ROOT = Path(__file__).resolve().parents[1]
RUNS = int(os.environ.get("BENCH_RUNS", "9"))
#: Hang guard per CLI call (a cold edit with language servers takes seconds).
CALL_TIMEOUT_S = 120


def timed(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=CALL_TIMEOUT_S)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[3:])} failed: {proc.stdout}{proc.stderr}")
    return elapsed


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        (workspace / "pyproject.toml").write_text("[project]\nname = 'bench'\n")
        (workspace / "a.txt").write_text("".join(f"line {i}\n" for i in range(200)))
        (workspace / "m.py").write_text("value: int = 0\n")
        env = {**os.environ, "TOOLSMITH_STATE_DIR": str(Path(tmp) / "state")}
        cli = [sys.executable, "-m", "cmd.tools", "--cwd", str(workspace)]
        session = [*cli, "--session", "bench"]
        # An edit needs a read first, which a call without --session cannot carry over: the cold
        # edit is a --session call without the host, i.e. how every --session edit ran before.
        cold = [*cli, "--session", "cold"]
        cold_env = {**env, "TOOLSMITH_SESSION_HOST": "0"}
        broken = [False]

        def edit(prefix: list[str]) -> list[str]:
            # Toggle a type error in and out, so every call has diagnostics to compute.
            old, new = ('"s"', "0") if broken[0] else ("0", '"s"')
            broken[0] = not broken[0]
            params = json.dumps({"file_path": "m.py", "old_string": f"= {old}", "new_string": f"= {new}"})
            return [*prefix, "edit", params]

        view = ["view", '{"file_path": "a.txt"}']
        samples: dict[str, list[float]] = {k: [] for k in ("raw", "view", "view_s", "edit", "edit_s")}
        try:
            # Warm up: the host starts, its servers start.
            timed([*session, "view", '{"file_path": "m.py"}'], env)
            timed(edit(session), env)
            for _ in range(RUNS):
                samples["raw"].append(timed([sys.executable, "-c", "pass"], env))
                samples["view"].append(timed([*cli, *view], env))
                samples["view_s"].append(timed([*session, *view], env))
                timed([*cold, "view", '{"file_path": "m.py"}'], cold_env)
                samples["edit"].append(timed(edit(cold), cold_env))
                timed([*session, "view", '{"file_path": "m.py"}'], env)
                samples["edit_s"].append(timed(edit(session), env))
        finally:
            subprocess.run([*session, "--end"], cwd=ROOT, env=env, capture_output=True, timeout=CALL_TIMEOUT_S)
    for name, tool, reference, reference_name in (
        ("CLI view, one-shot", "view", "raw", "python -c pass"),
        ("CLI view, --session (warm host)", "view_s", "raw", "python -c pass"),
        ("CLI view, --session (warm host) vs one-shot", "view_s", "view", "one-shot view"),
        ("CLI edit .py, --session (warm host, servers warm)", "edit_s", "edit", "no host (servers cold)"),
    ):
        record(name, samples[tool], samples[reference], reference=reference_name, goal=None)
    return exit_status()


if __name__ == "__main__":
    sys.exit(main())
