"""The CLI on a terminal: progress on stderr while a call runs (a real pty), nothing otherwise;
usage errors on stderr; --list aligned."""

from __future__ import annotations

import errno
import io
import json
import os
import pty
import select
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from agent_toolsmith.cli_progress import CLEAR_LINE, TerminalProgress

from tests.test_cli import cli

ROOT = Path(__file__).resolve().parents[1]
#: Every wait on the CLI or its terminal is bounded by this.
WAIT_S = 30.0


class Terminal:
    """The CLI with its stderr on a pseudo-terminal (stdout a pipe, as when piping the result)."""

    def __init__(self, *args: str) -> None:
        master, slave = pty.openpty()
        self.master = master
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cmd.tools", *args], cwd=ROOT, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=slave, text=True,
        )  # fmt: skip
        os.close(slave)
        self.seen = b""

    def read_until(self, wanted: bytes) -> bytes:
        """What the terminal shows, read until ``wanted`` appears (or the CLI closes it)."""
        deadline = time.monotonic() + WAIT_S
        while wanted not in self.seen:
            left = deadline - time.monotonic()
            assert left > 0, f"{wanted!r} never showed on the terminal: {self.seen!r}"
            ready, _, _ = select.select([self.master], [], [], min(left, 0.5))
            if not ready:
                continue
            try:
                chunk = os.read(self.master, 65536)
            except OSError as exc:  # EIO: the CLI closed its end
                assert exc.errno == errno.EIO
                chunk = b""
            if not chunk:
                break
            self.seen += chunk
        return self.seen

    def finish(self) -> tuple[int, str]:
        stdout, _ = self.process.communicate(timeout=WAIT_S)
        self.read_until(b"\x00never")  # drain to EOF
        return self.process.returncode, stdout

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(WAIT_S)
        if self.process.stdout is not None:
            self.process.stdout.close()
        os.close(self.master)


@pytest.fixture
def terminal() -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    yield opened
    for each in opened:
        each.close()


@pytest.mark.parametrize("session", [False, True], ids=["one-shot", "session-host"])
def test_bash_output_shows_on_the_terminal_as_it_comes(
    workspace: Path, terminal: list[Terminal], session: bool
) -> None:
    command = "echo first line; while [ ! -e go ]; do sleep 0.05; done; echo second line"
    extra = ["--session", "live"] if session else []
    shown = Terminal("--cwd", str(workspace), *extra, "bash", json.dumps({"command": command}))
    terminal.append(shown)
    shown.read_until(b"first line")
    assert shown.process.poll() is None  # shown while the command still runs
    (workspace / "go").touch()
    code, stdout = shown.finish()
    assert code == 0 and stdout == "first line\nsecond line\n"  # the result, on stdout as before
    assert b"second line" in shown.seen and b"Traceback" not in shown.seen
    assert b"no session host" not in shown.seen  # with --session, the host sent the progress


class _Body(BaseHTTPRequestHandler):
    body = b"<html><body><p>" + b"word " * 60_000 + b"</p></body></html>"

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: object) -> None:
        return None


def test_fetch_shows_its_bytes_on_the_terminal(workspace: Path, terminal: list[Terminal]) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Body)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/page"
        shown = Terminal("--cwd", str(workspace), "fetch", json.dumps({"url": url, "format": "text"}))
        terminal.append(shown)
        code, stdout = shown.finish()
    finally:
        server.shutdown()
        server.server_close()
    assert code == 0 and stdout.startswith("word word")
    total = len(_Body.body)
    assert f"fetch: {total / 1024:.1f} KiB downloaded of {total / 1024:.1f} KiB".encode() in shown.seen


def test_nothing_is_shown_when_stderr_is_not_a_terminal(workspace: Path) -> None:
    ran = cli("--cwd", str(workspace), "bash", json.dumps({"command": "echo quiet"}))
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "quiet\n", "")


def test_the_display_orders_output_status_and_event_lines() -> None:
    now = [0.0]
    screen = io.StringIO()
    progress = TerminalProgress(screen, clock=lambda: now[0])
    progress("output", {"tool": "bash", "text": "compiling"})
    progress("diagnostics", {"text": "checking with the language servers"})
    progress("download", {"tool": "fetch", "bytes": 2048, "total": 4096})
    progress("download", {"tool": "fetch", "bytes": 3072, "total": 4096})  # within the interval: not redrawn
    now[0] = 1.0
    progress("progress", {"tool": "add", "text": "step 2 of 3"})
    progress("download", {"tool": "fetch", "bytes": 4096, "total": 4096, "done": True})
    progress.finish()
    plain = screen.getvalue().replace("\x1b[2m", "").replace("\x1b[0m", "")
    assert plain == (
        "compiling\n"  # the partial output line is ended before the next line
        "checking with the language servers\n"
        f"{CLEAR_LINE}fetch: 2.0 KiB downloaded of 4.0 KiB"
        f"{CLEAR_LINE}[add] step 2 of 3\n"  # the status line is cleared for it
        f"{CLEAR_LINE}fetch: 4.0 KiB downloaded of 4.0 KiB\n"
    )


def test_usage_errors_go_to_stderr_and_json_envelopes_to_stdout(workspace: Path) -> None:
    for args, said in [(("veiw", "{}"), "Unknown tool 'veiw'. Did you mean 'view'?"),
                       (("view", '{"file_path": 5}'), "Invalid parameters for view: 'file_path' must be a string"),
                       (("view", "{oops"), "not valid JSON")]:  # fmt: skip
        done = cli("--cwd", str(workspace), *args)
        assert done.returncode == 2 and done.stdout == "" and done.stderr.startswith("toolsmith: ")
        assert said in done.stderr
        as_json = cli("--cwd", str(workspace), "--json", *args)
        envelope = json.loads(as_json.stdout)
        assert as_json.returncode == 2 and as_json.stderr == "" and said in envelope["content"]
    failed = cli("--cwd", str(workspace), "view", '{"file_path": "missing.txt"}')
    assert failed.returncode == 1 and failed.stdout.startswith("File not found") and failed.stderr == ""


def test_list_columns_line_up_whatever_the_longest_name() -> None:
    listed = cli("--list").stdout.splitlines()
    column = max(len(line.split()[0]) for line in listed) + 2
    for line in listed:
        name = line.split()[0]
        assert line[:column] == f"{name:<{column}}" and line[column] != " ", line
    assert any(line.startswith("notebook_edit  Edits a Jupyter notebook") for line in listed)

