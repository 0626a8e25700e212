"""The one way a benchmark times a tool against its reference, and says whether it met its goal.

Every row is measured in pairs, tool then reference (A B A B ...), so machine noise hits both
alike; what counts is the per-pair ratio tool/reference: the row prints its median and min–max
and the two sides' median times. A row is within its goal when the median per-pair ratio is at
most ``goal`` — or, for rows whose budget has a fixed allowance (``goal``× + ``slack_s``), when
the median of ``tool - (goal × reference + slack)`` is at most zero.

Rows are appended as JSON lines to the file named by ``BENCH_RESULTS`` (set by bench/run_all.py,
which `make bench` runs) so the whole table can be printed at the end of one run; a script run
by hand prints its own rows only. :func:`exit_status` is what a script returns: 1 when any of its
rows is over its goal.
"""

from __future__ import annotations

import inspect
import json
import os
import platform
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass

#: Names the results file `make bench` collects rows in (see bench/run_all.py).
RESULTS_ENV = "BENCH_RESULTS"


@dataclass
class Row:
    """One benchmark line: medians in seconds, per-pair ratio statistics, the goal, the verdict."""

    name: str
    tool_s: float
    reference_s: float
    reference: str
    ratio: float
    ratio_min: float
    ratio_max: float
    pairs: int
    goal: float | None
    slack_s: float = 0.0
    within: bool = True
    note: str = ""

    def goal_text(self) -> str:
        if self.goal is None:
            return "—"
        return f"≤ {self.goal:g}×" + (f" + {self.slack_s * 1000:g} ms" if self.slack_s else "")

    def line(self) -> str:
        verdict = "" if self.goal is None else ("ok" if self.within else "OVER")
        return (
            f"  {self.name:<52} {ms(self.tool_s):>10} vs {ms(self.reference_s):>10} {self.reference}  "
            f"{self.ratio:5.2f}× ({self.ratio_min:.2f}–{self.ratio_max:.2f}, {self.pairs} pairs)  "
            f"goal {self.goal_text()} {verdict}" + (f"  [{self.note}]" if self.note else "")
        )


_rows: list[Row] = []


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 10 else f"{seconds:.1f} s"


def machine() -> str:
    return f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}"


def timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


async def timed_async(call: Callable[[], Awaitable[object]]) -> float:
    start = time.perf_counter()
    await call()
    return time.perf_counter() - start


def record(
    name: str,
    tool_times: list[float],
    reference_times: list[float],
    *,
    reference: str,
    goal: float | None,
    slack_s: float = 0.0,
    note: str = "",
) -> Row:
    """Turn paired timings (``tool_times[i]`` beside ``reference_times[i]``) into a printed row."""
    assert tool_times and len(tool_times) == len(reference_times), "timings come in pairs"
    ratios = [t / max(r, 1e-9) for t, r in zip(tool_times, reference_times, strict=True)]
    ratio = statistics.median(ratios)
    within = True
    if goal is not None:
        if slack_s:
            excess = [t - (goal * r + slack_s) for t, r in zip(tool_times, reference_times, strict=True)]
            within = statistics.median(excess) <= 0
        else:
            within = ratio <= goal
    row = Row(
        name, statistics.median(tool_times), statistics.median(reference_times), reference, ratio,
        min(ratios), max(ratios), len(ratios), goal, slack_s, within, note,
    )  # fmt: skip
    _rows.append(row)
    print(row.line(), flush=True)
    results = os.environ.get(RESULTS_ENV)
    if results:
        with open(results, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(asdict(row)) + "\n")
    return row


async def pairs_async(
    name: str,
    tool: Callable[[], object],
    reference: Callable[[], object],
    *,
    runs: int,
    reference_name: str,
    goal: float | None,
    slack_s: float = 0.0,
    warmup: int = 1,
    note: str = "",
) -> Row:
    """Time ``tool`` and ``reference`` alternately ``runs`` times each, after ``warmup`` pairs.
    Either may be a plain call or return an awaitable (``Session.run``, an MCP client call)."""
    for _ in range(warmup):
        await _call(tool)
        await _call(reference)
    tool_times, reference_times = [], []
    for _ in range(runs):
        tool_times.append(await _timed_call(tool))
        reference_times.append(await _timed_call(reference))
    return record(
        name, tool_times, reference_times, reference=reference_name, goal=goal, slack_s=slack_s, note=note
    )


async def _call(call: Callable[[], object]) -> None:
    result = call()
    if inspect.isawaitable(result):
        await result


async def _timed_call(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    await _call(call)
    return time.perf_counter() - start


def exit_status() -> int:
    """1 when a row of this script is over its goal (each is printed with OVER), else 0."""
    over = [row.name for row in _rows if not row.within]
    if over:
        print(f"over goal: {', '.join(over)}", flush=True)
    return 1 if over else 0
