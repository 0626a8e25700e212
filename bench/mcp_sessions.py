"""Throughput of one `toolsmith-mcp --http` server as sessions grow: 32 concurrent sessions vs one.

Each session runs rounds of mixed calls — view and edit of its own file, grep over a small tree,
bash `echo` — over streamable HTTP on 127.0.0.1. A pair (bench/harness.py) is one session's
rounds, then 32 sessions' rounds at once; each side's time is its wall time per call, so the
ratio 32-session/one-session is the inverse of the speed-up in calls per second. Goal: 32
sessions get ≥ 2.5× one session's calls per second (ratio ≤ 0.4), every call answered without
error. The row's note gives calls per second, the 32-session p50/p99 latency, the memory per
session (the server's process tree RSS with the 32 sessions open, less before, over 32), and the
CPU per call (the server's process tree, reaped children included, and this client) with the
lowest ratio it allows on this machine's cores: with every core busy, the sessions' time per call
is at least that CPU over the cores, and one session's time per call is at most its CPU plus its
waits, so a one-session call that spends less time waiting leaves less room below the goal.

The load comes from a minimal MCP client written here (HTTP/1.1 over asyncio streams, one
keep-alive connection per session: initialize, tools/call with the event-stream answer, DELETE),
not the SDK's: the client runs on the same cores as the server, and the SDK client's ~3 ms of CPU
per call would be what is measured. The protocol is the same; the tests
(tests/integration/test_mcp*.py) use the SDK client.

``BENCH_MCP_WORKERS`` passes ``--workers`` (e.g. 1: everything in one process, to compare);
``BENCH_MCP_SERVER`` names another checkout whose ``cmd.mcp`` to run (the "before" numbers).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import exit_status, record

ROOT = Path(__file__).resolve().parents[1]
PAIRS = int(os.environ.get("BENCH_RUNS_SESSIONS", "5"))
SESSIONS = 32
#: Rounds of the four calls: one session runs SESSIONS / 4 times as many as each of the many, so
#: both sides take a second or two.
ROUNDS_MANY, ROUNDS_ONE = 6, 48
#: 32 sessions: at least 2.5× one session's calls per second, i.e. time per call ≤ 0.4×.
GOAL = 0.4
#: Hang guards: the server prints its address; one call answers.
SERVER_START_TIMEOUT_S, CALL_TIMEOUT_S = 60.0, 60.0
#: Sessions that warm the server up (each worker loads its tools) before the baseline memory.
WARM_SESSIONS = 4
#: A small tree for grep: files that each hold one match.
GREP_FILES = 50


class McpHttp:
    """One MCP session over HTTP/1.1 on one keep-alive connection (as httpx-based clients keep)."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.session_id: str | None = None
        self.next_id = 0
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, message: dict[str, Any], method: str = "POST") -> tuple[int, dict[str, Any] | None]:
        body = json.dumps(message).encode() if message else b""
        head = (
            f"{method} /mcp HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nAccept: application/json, text/event-stream"
            f"\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\nMCP-Protocol-Version: 2025-11-25\r\n"
            + (f"Mcp-Session-Id: {self.session_id}\r\n" if self.session_id else "")
            + "\r\n"
        )
        if self.writer is None or self.writer.is_closing():
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        self.writer.write(head.encode() + body)
        status, headers, payload = await asyncio.wait_for(_response(self.reader), CALL_TIMEOUT_S)
        if headers.get("connection", "").lower() == "close":
            self.writer.close()
        if "mcp-session-id" in headers:
            self.session_id = headers["mcp-session-id"]
        for line in payload.splitlines():
            line = line.strip()
            if line.startswith(b"data: {") or line.startswith(b"{"):
                decoded = json.loads(line.removeprefix(b"data: "))
                if decoded.get("id") == message.get("id"):
                    return status, decoded
        return status, None

    async def open(self) -> None:
        hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
        status, _ = await self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello})
        assert status == 200 and self.session_id, status
        await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def call(self, tool: str, arguments: dict[str, Any]) -> bool:
        """Whether the call was answered without error."""
        self.next_id += 1
        request = {"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                   "params": {"name": tool, "arguments": arguments}}  # fmt: skip
        status, answer = await self.post(request)
        return status == 200 and answer is not None and not answer.get("result", {}).get("isError", True)

    async def close(self) -> None:
        await self.post({}, method="DELETE")
        if self.writer is not None:
            self.writer.close()


async def _response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    """One response: status, headers (lower-case names), body (chunked encoding undone)."""
    status = int((await reader.readline()).split(b" ", 2)[1])
    headers = {}
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        chunks = []
        while size := int((await reader.readline()).split(b";")[0].strip() or b"0", 16):
            chunks.append((await reader.readexactly(size + 2))[:-2])
        await reader.readline()  # the blank line after the last chunk
        return status, headers, b"".join(chunks)
    return status, headers, await reader.readexactly(int(headers.get("content-length", "0")))


async def session_rounds(client: McpHttp, workspace: Path, name: str, rounds: int, latencies: list[float]) -> int:
    """Run ``rounds`` of the mixed calls; the number of calls that failed."""
    own = workspace / f"{name}.txt"
    own.write_text("line\n" * 40 + "value = 0\n")
    failed = 0 if await client.call("view", {"file_path": own.name}) else 1
    for n in range(rounds):
        calls = (
            ("view", {"file_path": own.name}),
            ("edit", {"file_path": own.name, "old_string": f"value = {n}", "new_string": f"value = {n + 1}"}),
            ("grep", {"pattern": "needle", "path": "src"}),
            ("bash", {"command": "echo ok"}),
        )
        for tool, arguments in calls:
            started = time.perf_counter()
            ok = await client.call(tool, arguments)
            latencies.append(time.perf_counter() - started)
            failed += not ok
    return failed


@dataclass
class Phase:
    """What one phase measured."""

    per_call: float  # wall seconds per call
    latencies: list[float]
    failed: int
    rss: int  # the server's RSS (bytes) with every session open, after their calls
    cpu_per_call: float  # CPU seconds per call: the server's process tree and this client


async def phase(host: str, port: int, workspace: Path, sessions: int, rounds: int, tag: str) -> Phase:
    """``sessions`` sessions at once, each running ``rounds`` rounds."""
    clients = [McpHttp(host, port) for _ in range(sessions)]
    await asyncio.gather(*(c.open() for c in clients))
    latencies: list[float] = []
    cpu_before = tree_cpu() + time.process_time()
    started = time.perf_counter()
    failures = await asyncio.gather(
        *(session_rounds(c, workspace, f"{tag}-{i}", rounds, latencies) for i, c in enumerate(clients))
    )
    elapsed = time.perf_counter() - started
    cpu = tree_cpu() + time.process_time() - cpu_before
    rss = tree_rss()
    await asyncio.gather(*(c.close() for c in clients))
    return Phase(elapsed / len(latencies), latencies, sum(failures), rss, cpu / len(latencies))


SERVER_PID: list[int] = []


def server_tree() -> list[int]:
    """The server and all its descendants (workers, shells)."""
    pids, table, tree = [SERVER_PID[0]], _parents(), []
    while pids:
        pid = pids.pop()
        tree.append(pid)
        pids += [child for child, parent in table.items() if parent == pid]
    return tree


def tree_rss() -> int:
    """RSS of the server's process tree, in bytes."""
    total = 0
    for pid in server_tree():
        try:
            with open(f"/proc/{pid}/statm") as statm:
                total += int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:
            continue
    return total


def tree_cpu() -> float:
    """CPU seconds the server's process tree has used: its processes' own and that of the
    children they reaped (shells, rg)."""
    total = 0
    for pid in server_tree():
        try:
            with open(f"/proc/{pid}/stat") as stat:
                total += sum(int(field) for field in stat.read().rsplit(")", 1)[1].split()[11:15])
        except (OSError, ValueError):
            continue
    return total / os.sysconf("SC_CLK_TCK")


def _parents() -> dict[int, int]:
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    table[int(entry)] = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    return table


async def main() -> int:
    checkout = Path(os.environ.get("BENCH_MCP_SERVER", ROOT))
    workers = os.environ.get("BENCH_MCP_WORKERS")
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(os.path.realpath(tmp))
        (workspace / "src").mkdir()
        for i in range(GREP_FILES):
            (workspace / "src" / f"m{i}.py").write_text("x = 1\n" * 40 + "needle = 3\n")
        command = [sys.executable, "-m", "cmd.mcp", "--http", "--port", "0", "--cwd", str(workspace), "--no-lsp",
                   "--max-sessions", str(2 * SESSIONS + 2), *(["--workers", workers] if workers else [])]  # fmt: skip
        env = {**os.environ, "TOOLSMITH_STATE_DIR": str(workspace / ".state")}
        server = subprocess.Popen(command, cwd=checkout, env=env, stderr=subprocess.PIPE, text=True)
        SERVER_PID.append(server.pid)
        try:
            assert server.stderr is not None
            line = await asyncio.wait_for(asyncio.to_thread(server.stderr.readline), SERVER_START_TIMEOUT_S)
            found = re.search(r"http://([\d.]+):(\d+)/mcp", line)
            assert found, line
            host, port = found.group(1), int(found.group(2))
            await phase(host, port, workspace, WARM_SESSIONS, 1, "warm")  # every worker loads its tools
            baseline = tree_rss()
            ones: list[Phase] = []
            manys: list[Phase] = []
            for pair in range(PAIRS):
                ones.append(await phase(host, port, workspace, 1, ROUNDS_ONE, f"one{pair}"))
                manys.append(await phase(host, port, workspace, SESSIONS, ROUNDS_MANY, f"many{pair}"))
        finally:
            server.terminate()
            server.wait(30)
    latencies = sorted(latency for many in manys for latency in many.latencies)
    failed = sum(side.failed for side in ones + manys)
    p50, p99 = latencies[len(latencies) // 2], latencies[int(len(latencies) * 0.99)]
    per_session = (max(many.rss for many in manys) - baseline) / SESSIONS / 1e6
    one_wall = statistics.median(one.per_call for one in ones)
    many_wall = statistics.median(many.per_call for many in manys)
    one_cpu = statistics.median(one.cpu_per_call for one in ones)
    many_cpu = statistics.median(many.cpu_per_call for many in manys)
    # With every core busy, the sessions' time per call is at least their CPU per call over the
    # cores: the lowest ratio this machine allows for the CPU the calls take.
    cores = len(os.sched_getaffinity(0))
    floor = many_cpu / cores / one_wall
    note = (
        f"{1 / many_wall:.0f} vs {1 / one_wall:.0f} calls/s; 32 sessions: p50 {p50 * 1000:.0f} ms, p99 "
        f"{p99 * 1000:.0f} ms; {per_session:.1f} MB per session; CPU per call (server and client) "
        f"{many_cpu * 1000:.1f} ms vs {one_cpu * 1000:.1f} ms one session, so on {cores} cores the ratio cannot go "
        f"below {floor:.2f}×; {failed} errors" + (f"; --workers {workers}" if workers else "")
    )
    row = record(
        f"MCP HTTP {SESSIONS} sessions × mixed calls (time per call)",
        [many.per_call for many in manys], [one.per_call for one in ones], reference="one session",
        goal=GOAL, note=note,
    )  # fmt: skip
    if failed:
        print(f"  {failed} calls failed", flush=True)
        return 1
    return exit_status() if row else 1


if __name__ == "__main__":
    started = time.perf_counter()
    status = asyncio.run(main())
    print(f"  ({time.perf_counter() - started:.0f} s)")
    sys.exit(status)
