"""MCP stdio start-up: how long until the server answers `initialize`, whole process.

The installed `toolsmith-mcp` (every tool, a real workspace, language servers enabled) vs a
minimal server built on the same SDK (`MCPServer` with one tool), spawned alternately (A B A B)
so both see the same machine load (bench/harness.py: the median and min–max of the per-pair
ratios; exit status 1 when the median is over the 1.3× goal). The SDK's own import is most of both.
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

PAIRS = int(os.environ.get("BENCH_PAIRS", "15"))
#: toolsmith-mcp answering `initialize` vs a minimal server on the same SDK (#28, item 4).
GOAL = 1.3
#: A server that has not answered in this long has hung (far above any start-up seen).
ANSWER_TIMEOUT_S = 60.0
SERVER = str(Path(sys.executable).parent / "toolsmith-mcp")
MINIMAL = '''
from mcp.server.mcpserver import MCPServer

app = MCPServer("minimal")


@app.tool()
def echo(text: str) -> str:
    """Echo the text."""
    return text


app.run()
'''
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}


def seconds_to_initialize(argv: list[str], cwd: str) -> float:
    """Spawn, send `initialize` at once, time the first line of the answer; then close stdin."""
    started = time.perf_counter()
    process = subprocess.Popen(
        argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
        process.stdin.flush()
        line = process.stdout.readline()
        elapsed = time.perf_counter() - started
        assert b'"id":1' in line.replace(b" ", b""), line[:200]
        process.stdin.close()
        process.wait(ANSWER_TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(ANSWER_TIMEOUT_S)
    return elapsed


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        (workspace / "app.py").write_text("print('hello')\n")
        minimal = workspace / "minimal_server.py"
        minimal.write_text(MINIMAL)
        toolsmith = [SERVER, "--cwd", str(workspace)]
        reference = [sys.executable, str(minimal)]
        seconds_to_initialize(toolsmith, tmp)  # warm the page cache for both
        seconds_to_initialize(reference, tmp)
        ours, theirs = [], []
        for _ in range(PAIRS):
            ours.append(seconds_to_initialize(toolsmith, tmp))
            theirs.append(seconds_to_initialize(reference, tmp))
    record("MCP stdio initialize (process start + answer)", ours, theirs, reference="minimal MCPServer", goal=GOAL)
    return exit_status()


if __name__ == "__main__":
    sys.exit(main())
