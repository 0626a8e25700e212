"""Background jobs with real processes: a loopback HTTP server reached from a later call, a
REPL on a terminal, deltas, limits, timeouts, policy, and nothing left when the session ends.

Each tool call runs under its own ``asyncio.run`` (the ``run`` helper), so these tests also
show that a job outlives the event loop that started it.
"""

from __future__ import annotations

import asyncio
import re
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.llm.tools.contract import ToolResponse
from agent_toolsmith.permission import Decision, PermissionRequest
from agent_toolsmith.session import Session
from agent_toolsmith.shell.job_buffer import JOB_RING_BYTES

from tests.conftest import make_session
from tests.processes.test_supervisor import leftovers
from tests.tools.test_bash import pid_alive

#: Hang guard for a job to reach a state: far above the sub-second it takes.
STATE_TIMEOUT_S = 60.0

Run = Callable[..., ToolResponse]


@pytest.fixture
def jobs_session(workspace: Path) -> Iterator[Session]:
    session = make_session(workspace)
    yield session
    asyncio.run(session.close())


@pytest.fixture
def run(jobs_session: Session) -> Run:
    def _run(tool: str, params: Any) -> ToolResponse:
        return asyncio.run(jobs_session.run(tool, params))

    return _run


def read_until(run: Run, job_id: str, done: Callable[[str, ToolResponse], bool]) -> str:
    """job_output deltas joined until ``done(all_text, last_response)``; fails after the guard."""
    seen = ""
    deadline = time.monotonic() + STATE_TIMEOUT_S
    while time.monotonic() < deadline:
        r = run("job_output", {"job_id": job_id, "wait_ms": 2000})
        assert not r.is_error, r.content
        seen += r.content.rsplit("\n\nJob ", 1)[0].replace("(no new output)", "")
        if done(seen, r):
            return seen
    pytest.fail(f"job {job_id} never got there; output so far: {seen!r}")


def connect_refused(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(5)
        try:
            sock.connect(("127.0.0.1", port))
        except ConnectionRefusedError:
            return True
    return False


def test_a_loopback_server_as_a_job(run: Run) -> None:
    started = run("bash", {"command": "python3 -u -m http.server 0 --bind 127.0.0.1", "run_in_background": True})
    assert not started.is_error, started.content
    job_id = started.metadata["job_id"]
    assert f"Started background job {job_id}" in started.content and started.metadata["state"] == "running"
    banner = started.content + read_until(run, job_id, lambda text, _: "Serving HTTP" in started.content + text)
    port = int(re.search(r"port (\d+)", banner).group(1))  # type: ignore[union-attr]

    fetch = f"import urllib.request as u; print(u.urlopen('http://127.0.0.1:{port}/').status)"
    fetched = run("bash", {"command": f'python3 -c "{fetch}"'})
    assert fetched.content == "200" and fetched.metadata["stopped_background"] == 0

    log = read_until(run, job_id, lambda text, _: '"GET / HTTP/1.1" 200' in text)
    assert "Serving HTTP" not in log  # a delta: the banner was read already
    again = run("job_output", {"job_id": job_id})
    assert again.content.startswith("(no new output)") and "GET /" not in again.content

    listed = run("job_output", {})
    assert listed.content.startswith(f"{job_id} | python3 -u -m http.server") and "| running |" in listed.content

    killed = run("job_kill", {"job_id": job_id})
    assert killed.metadata["state"] == "killed" and f"Job {job_id} was killed" in killed.content
    assert not pid_alive(killed.metadata["pid"])
    assert connect_refused(port)
    assert run("job_kill", {"job_id": job_id}).metadata["state"] == "killed"  # idempotent


def test_a_python_repl_on_a_terminal_answers(run: Run) -> None:
    started = run("bash", {"command": "python3 -i -q", "run_in_background": True, "tty": True})
    job_id = started.metadata["job_id"]
    assert started.metadata["tty"] and "on a terminal" in started.content
    read_until(run, job_id, lambda text, _: ">>>" in started.content + text)
    answer = run("job_input", {"job_id": job_id, "text": "6*7\n", "wait_ms": 10_000})
    assert re.search(r"^42$", answer.content, re.M), answer.content
    # Ctrl-C reaches the program as SIGINT through its controlling terminal.
    # Wait until the sleep runs (the echo of the typed line cannot contain the joined word), so the
    # Ctrl-C interrupts it rather than racing the line it follows.
    # (What arrives before job_input answers is in its answer: deltas are never read twice.)
    sent = run("job_input", {"job_id": job_id, "text": "import time; print('sl' + 'eeping'); time.sleep(600)\n",
                             "wait_ms": 0})  # fmt: skip
    read_until(run, job_id, lambda t, _: "sleeping" in sent.content + t)
    interrupted = run("job_input", {"job_id": job_id, "text": "\u0003", "wait_ms": 10_000})
    text = interrupted.content + read_until(run, job_id, lambda t, _: "KeyboardInterrupt" in interrupted.content + t)
    assert "KeyboardInterrupt" in text
    # Ctrl-D ends the REPL.
    run("job_input", {"job_id": job_id, "text": "\u0004", "wait_ms": 0})
    read_until(run, job_id, lambda _, r: r.metadata["state"] == "exited")
    ended = run("job_output", {"job_id": job_id})
    assert ended.metadata["state"] == "exited" and f"Job {job_id} exited with code" in ended.content


def test_deltas_never_repeat_and_input_answers_prompts(run: Run) -> None:
    script = "echo first; read a; echo second-$a; read b; echo third-$b"
    started = run("bash", {"command": script, "run_in_background": True})
    job_id = started.metadata["job_id"]
    seen = started.content + read_until(run, job_id, lambda t, _: "first" in started.content + t)
    assert seen.count("first") == 1
    answer = run("job_input", {"job_id": job_id, "text": "A\n", "wait_ms": 10_000})
    assert "second-A" in answer.content and "first" not in answer.content
    assert run("job_output", {"job_id": job_id}).content.startswith("(no new output)")
    rest = run("job_input", {"job_id": job_id, "text": "B\n", "wait_ms": 10_000})
    rest_text = rest.content + read_until(run, job_id, lambda _, r: r.metadata["state"] == "exited")
    assert "third-B" in rest_text and "second-A" not in rest_text
    late = run("job_input", {"job_id": job_id, "text": "C\n"})
    assert late.is_error and late.metadata["error"] == "job_ended"


def test_output_past_the_ring_is_skipped_and_kept_in_the_spill_file(run: Run) -> None:
    size = 3 * JOB_RING_BYTES
    # The job waits for a go, so all its output arrives between two reads.
    command = f"read go; head -c {size} /dev/zero | tr '\\0' x; echo; echo END"
    started = run("bash", {"command": command, "run_in_background": True})
    job_id = started.metadata["job_id"]
    assert "(no output yet)" in started.content
    go = run("job_input", {"job_id": job_id, "text": "go\n", "wait_ms": 0})
    deadline = time.monotonic() + STATE_TIMEOUT_S
    while "exited with code 0" not in run("job_output", {}).content and time.monotonic() < deadline:
        time.sleep(0.05)  # the listing reads nothing; poll it until the job ended
    last = run("job_output", {"job_id": job_id})
    skipped = last.metadata["skipped_bytes"]
    # job_input returns what already arrived too (at most output_bytes at that moment).
    most = size + len("\nEND\n") - JOB_RING_BYTES
    assert most - go.metadata["output_bytes"] <= skipped <= most and skipped > 0
    assert f"{skipped} bytes of output were skipped" in last.content
    assert "END" in last.content and last.metadata["truncated"]
    full = Path(last.metadata["full_output_path"])
    assert full.stat().st_size == size + len("\nEND\n") and str(full) in last.content
    assert run("job_output", {"job_id": job_id}).metadata["skipped_bytes"] == 0


def test_the_job_limit_refuses_with_the_list(workspace: Path) -> None:
    session = make_session(workspace, config=Config(lsp_enabled=False, max_jobs=2))

    async def main() -> ToolResponse:
        try:
            for _ in range(2):
                r = await session.run("bash", {"command": "sleep 600", "run_in_background": True})
                assert not r.is_error
            return await session.run("bash", {"command": "sleep 601", "run_in_background": True})
        finally:
            await session.close()

    refused = asyncio.run(main())
    assert refused.is_error and refused.metadata["error"] == "too_many_jobs"
    assert "max_jobs = 2" in refused.content and "j1 | sleep 600 | running" in refused.content
    assert "j2 | sleep 600" in refused.content and "sleep 601" not in refused.content


def test_session_close_stops_live_jobs_and_what_they_forked(workspace: Path) -> None:
    from tests.processes.test_supervisor import MARK

    session = make_session(workspace)

    async def main() -> None:
        for command in (f"sleep {MARK}", f"setsid sleep {MARK} & nohup sleep {MARK} & (sleep {MARK} &); wait"):
            r = await session.run("bash", {"command": command, "run_in_background": True, "tty": "setsid" in command})
            assert not r.is_error, r.content
        async with asyncio.timeout(STATE_TIMEOUT_S):
            while len(leftovers()) < 4:
                await asyncio.sleep(0.02)
        await session.close()

    asyncio.run(main())
    assert leftovers() == []


def test_a_job_timeout_stops_it(run: Run) -> None:
    started = run("bash", {"command": "echo going; sleep 600", "run_in_background": True, "timeout": 300})
    job_id = started.metadata["job_id"]
    read_until(run, job_id, lambda _, r: r.metadata["state"] != "running")
    final = run("job_output", {"job_id": job_id})
    assert final.metadata["state"] == "timed out" and "timed out after 0.3 s" in final.content


def test_unknown_jobs_and_tty_without_background_are_clear_errors(run: Run) -> None:
    r = run("job_output", {"job_id": "j99"})
    assert r.is_error and r.metadata["error"] == "unknown_job" and "No background job 'j99'" in r.content
    r = run("bash", {"command": "python3 -i", "tty": True})
    assert r.is_error and r.metadata["error"] == "tty_needs_background"
    assert run("job_output", {}).content == "No background jobs in this session."


def test_input_to_a_shell_job_goes_through_the_command_policy(workspace: Path) -> None:
    asked: list[PermissionRequest] = []

    async def deny(request: PermissionRequest) -> Decision:
        asked.append(request)
        return Decision.DENY

    session = make_session(workspace, asker=deny)

    async def main() -> tuple[ToolResponse, ToolResponse, ToolResponse]:
        try:
            # Starting `bash` itself asks (it is not on the safe list): allow that one.
            session.ctx.permissions._asker = _allow_first(deny)  # type: ignore[attr-defined]
            shell = await session.run("bash", {"command": "bash", "run_in_background": True})
            banned = await session.run("job_input", {"job_id": shell.metadata["job_id"], "text": "curl http://x\n"})
            unsafe = await session.run("job_input", {"job_id": shell.metadata["job_id"], "text": "rm -rf ~\n"})
            safe = await session.run("job_input", {"job_id": shell.metadata["job_id"], "text": "echo ok\n"})
            return banned, unsafe, safe
        finally:
            await session.close()

    banned, unsafe, safe = asyncio.run(main())
    assert banned.is_error and "Command refused" in banned.content
    assert unsafe.is_error and any(r.target == "rm -rf ~" for r in asked)
    assert not safe.is_error and "ok" in safe.content


def _allow_first(then: Any) -> Any:
    calls = {"n": 0}

    async def asker(request: PermissionRequest) -> Decision:
        calls["n"] += 1
        return Decision.ALLOW_ONCE if calls["n"] == 1 else await then(request)

    return asker


def test_code_for_an_interpreter_job_asks(workspace: Path) -> None:
    asked: list[PermissionRequest] = []

    async def record(request: PermissionRequest) -> Decision:
        asked.append(request)
        return Decision.ALLOW_ONCE

    session = make_session(workspace, asker=record)

    async def main() -> ToolResponse:
        try:
            repl = await session.run("bash", {"command": "python3 -i -q", "run_in_background": True, "tty": True})
            job_id = repl.metadata["job_id"]
            return await session.run("job_input", {"job_id": job_id, "text": "print(7*6)\n", "wait_ms": 20_000})
        finally:
            await session.close()

    answered = asyncio.run(main())
    assert "42" in answered.content
    assert any(r.tool == "job_input" and r.target == "print(7*6)\n" for r in asked)


def test_jobs_run_inside_the_sandbox(workspace: Path, tmp_path: Path, bwrap: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    session = make_session(workspace, config=Config(lsp_enabled=False, bash_sandbox=True))

    async def main() -> ToolResponse:
        try:
            command = f"touch {outside}/x 2>&1; echo inside > in.txt; echo done"
            job = await session.run("bash", {"command": command, "run_in_background": True})
            out = job
            async with asyncio.timeout(STATE_TIMEOUT_S):
                while out.metadata.get("state") == "running":
                    out = await session.run("job_output", {"job_id": job.metadata["job_id"], "wait_ms": 2000})
            return job
        finally:
            await session.close()

    job = asyncio.run(main())
    assert not job.is_error, job.content
    assert not (outside / "x").exists() and (workspace / "in.txt").read_text() == "inside\n"


def test_a_one_shot_cli_job_ends_with_the_cli_process(workspace: Path) -> None:
    import json
    import subprocess
    import sys

    from tests.processes.test_supervisor import MARK

    root = Path(__file__).resolve().parents[2]
    params = json.dumps({"command": f"setsid sleep {MARK} & sleep {MARK}", "run_in_background": True})
    proc = subprocess.run(
        [sys.executable, "-m", "cmd.tools", "--cwd", str(workspace), "bash", params],
        cwd=root, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert "Started background job j1" in proc.stdout, proc.stdout + proc.stderr
    assert leftovers() == []


def test_ctrl_c_reaches_a_terminal_job_even_when_we_ignore_sigint(run: Run) -> None:
    """A server started with `&` from a script ignores SIGINT, and children inherit that; a
    terminal job still gets Ctrl-C as a person's terminal would deliver it."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        started = run("bash", {"command": "python3 -i -q", "run_in_background": True, "tty": True})
    finally:
        signal.signal(signal.SIGINT, previous)
    job_id = started.metadata["job_id"]
    read_until(run, job_id, lambda text, _: ">>>" in started.content + text)
    sent = run("job_input", {"job_id": job_id, "text": "import time; print('sl' + 'eeping'); time.sleep(600)\n",
                             "wait_ms": 0})  # fmt: skip
    read_until(run, job_id, lambda t, _: "sleeping" in sent.content + t)
    interrupted = run("job_input", {"job_id": job_id, "text": "\u0003", "wait_ms": 10_000})
    text = interrupted.content + read_until(run, job_id, lambda t, _: "KeyboardInterrupt" in interrupted.content + t)
    assert "KeyboardInterrupt" in text
    run("job_kill", {"job_id": job_id})
