"""`make bench`: every benchmark script in turn, then the whole table from that one run.

Each script prints its rows as it goes (bench/harness.py) and appends them to one results file;
at the end the table is printed again in one piece (Markdown, ready for docs/benchmarks.md) with
the machine and date. Exits 1 when any script failed or any row was over its goal.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from harness import RESULTS_ENV, Row, machine, ms

BENCH = Path(__file__).resolve().parent
#: The scripts `make bench` runs, in this order (the slow, whole-tree ones last).
SCRIPTS = (
    "cli_startup.py", "view_paging.py", "edit_scale.py", "edit_stages.py", "search.py", "search_modes.py",
    "capped_searches.py", "edit_fidelity.py", "structure.py", "documents.py", "bash.py", "jobs.py",
    "cli_session.py", "lsp.py", "mcp_server.py", "mcp_sessions.py", "mcp_startup.py", "peers.py",
    "outside_writer.py",
)  # fmt: skip


def table(rows: list[Row]) -> str:
    lines = ["| benchmark | tool | reference | ratio (median, min–max) | goal | |", "|---|---|---|---|---|---|"]
    for row in rows:
        verdict = "" if row.goal is None else ("ok" if row.within else "**over**")
        lines.append(
            f"| {row.name} | {ms(row.tool_s)} | {ms(row.reference_s)} {row.reference} | "
            f"{row.ratio:.2f}× ({row.ratio_min:.2f}–{row.ratio_max:.2f}) | {row.goal_text()} | {verdict} |"
        )
    return "\n".join(lines)


def main(only: list[str]) -> int:
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results.jsonl"
        results.touch()
        for script in only or SCRIPTS:
            print(f"\n== {script}", flush=True)
            env = {**os.environ, RESULTS_ENV: str(results)}
            status = subprocess.run([sys.executable, str(BENCH / script)], env=env, check=False)
            if status.returncode != 0:
                failed.append(f"{script} (exit {status.returncode})")
        rows = [Row(**json.loads(line)) for line in results.read_text(encoding="utf-8").splitlines()]
    print(f"\n## The table ({machine()}, {datetime.date.today().isoformat()})\n")
    print(table(rows))
    if failed:
        print(f"\nnot within goal: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
