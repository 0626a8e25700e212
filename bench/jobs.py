"""Background jobs vs raw processes, interleaved, medians and ratios:

- start: bash run_in_background of `cat` (silent: returns after the first-output window) vs
  subprocess.Popen of `bash -c cat` (returns when forked);
- start + first line: `echo ready; cat` as a job (returns with "ready") vs Popen and reading it;
- output round trip: job_input of a line to a `cat` job, answered through job_output, vs a
  write to a raw `cat` pipe and a read of its echo;
- tty echo: job_input to `python3 -i` on a terminal answering `1+1` vs the same on a raw pty.

A job start waits up to its first-output window when a program prints nothing (cat), so the
start ratio is bounded by that window, not by process creation; the round trips are the
per-call overhead of the tools. Each pair is raw then tool; rows go through bench/harness.py
(median and min–max of per-pair ratios). No goal is documented for jobs: the rows are
informational.
"""

from __future__ import annotations

import asyncio
import os
import pty
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agent_toolsmith.config import Config
from agent_toolsmith.session import Session
from harness import exit_status, record

RUNS = int(os.environ.get("BENCH_RUNS", "20"))
#: Hang guard for one raw read.
READ_TIMEOUT_S = 30.0


def read_until(fd: int, needle: bytes) -> bytes:
    seen = b""
    deadline = time.monotonic() + READ_TIMEOUT_S
    while needle not in seen:
        ready, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0))
        if not ready:
            raise TimeoutError(f"no {needle!r} in {seen!r}")
        seen += os.read(fd, 65536)
    return seen


def raw_start() -> float:
    start = time.perf_counter()
    process = subprocess.Popen(["bash", "-c", "cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    process.kill()
    process.communicate()
    return elapsed


def raw_start_and_banner() -> float:
    start = time.perf_counter()
    process = subprocess.Popen(["bash", "-c", "echo ready; cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert process.stdout is not None
    read_until(process.stdout.fileno(), b"ready\n")
    elapsed = time.perf_counter() - start
    process.kill()
    process.communicate()
    return elapsed


def raw_pipe_round_trip(process: subprocess.Popen[bytes], n: int) -> float:
    assert process.stdin is not None and process.stdout is not None
    start = time.perf_counter()
    process.stdin.write(f"line {n}\n".encode())
    process.stdin.flush()
    read_until(process.stdout.fileno(), f"line {n}\n".encode())
    return time.perf_counter() - start


def raw_pty_echo(master: int, n: int) -> float:
    start = time.perf_counter()
    os.write(master, f"{n}+1\n".encode())
    read_until(master, f"{n + 1}\r\n>>> ".encode())
    return time.perf_counter() - start


async def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        session = Session(tmp, config=Config(lsp_enabled=False, state_dir=Path(tempfile.mkdtemp()), max_jobs=64))
        starts: tuple[list[float], list[float]] = ([], [])
        banners: tuple[list[float], list[float]] = ([], [])
        trips: tuple[list[float], list[float]] = ([], [])
        echoes: tuple[list[float], list[float]] = ([], [])

        cat = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        pid, master = pty.fork()
        if pid == 0:
            os.execvpe("python3", ["python3", "-i", "-q"], {**os.environ, "TERM": "dumb"})
        read_until(master, b">>> ")
        cat_job = (await session.run("bash", {"command": "cat", "run_in_background": True})).metadata["job_id"]
        repl = await session.run("bash", {"command": "python3 -i -q", "run_in_background": True, "tty": True})
        repl_job = repl.metadata["job_id"]
        try:
            for n in range(RUNS):
                starts[0].append(raw_start())
                start = time.perf_counter()
                started = await session.run("bash", {"command": "cat", "run_in_background": True})
                starts[1].append(time.perf_counter() - start)
                await session.run("job_kill", {"job_id": started.metadata["job_id"]})

                banners[0].append(raw_start_and_banner())
                start = time.perf_counter()
                started = await session.run("bash", {"command": "echo ready; cat", "run_in_background": True})
                banners[1].append(time.perf_counter() - start)
                assert "ready" in started.content, started.content
                await session.run("job_kill", {"job_id": started.metadata["job_id"]})

                trips[0].append(raw_pipe_round_trip(cat, n))
                start = time.perf_counter()
                answer = await session.run("job_input", {"job_id": cat_job, "text": f"line {n}\n", "wait_ms": 10_000})
                trips[1].append(time.perf_counter() - start)
                assert f"line {n}" in answer.content, answer.content

                echoes[0].append(raw_pty_echo(master, n))
                start = time.perf_counter()
                answer = await session.run("job_input", {"job_id": repl_job, "text": f"{n}+1\n", "wait_ms": 10_000})
                echoes[1].append(time.perf_counter() - start)
                assert str(n + 1) in answer.content, answer.content
        finally:
            cat.kill()
            cat.communicate()
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            os.close(master)
            await session.close()
    for label, reference, (raw, tool) in (
        ("silent job start (waits its first-output window)", "Popen", starts),
        ("job start + first line (echo ready; cat)", "Popen + read", banners),
        ("job_input+output round trip", "pipe write/read", trips),
        ("tty job_input echo (python3 -i)", "raw pty", echoes),
    ):
        record(label, tool, raw, reference=reference, goal=None)
    return exit_status()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
