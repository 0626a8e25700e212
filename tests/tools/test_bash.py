"""bash with real processes: state, exit codes, timeouts, cancellation, bounds and policy."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from agent_toolsmith.cancel import CancelToken
from agent_toolsmith.permission import Decision, PermissionRequest
from agent_toolsmith.session import Session
from agent_toolsmith.shell import policy
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import Runner, make_session

ROOT = Path(__file__).resolve().parents[2]


def pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def test_cwd_and_env_persist(workspace: Path, run: Runner) -> None:
    (workspace / "sub dir").mkdir()
    assert not run("bash", {"command": 'cd "sub dir" && export GREETING=hello'}).is_error
    r = run("bash", {"command": "pwd; echo $GREETING"})
    assert r.content.splitlines() == [str(workspace / "sub dir"), "hello"]
    assert r.metadata["cwd"] == str(workspace / "sub dir")


def test_a_command_inherits_only_the_standard_streams(run: Runner) -> None:
    """The shell's own pipes (the state record, the start gate) are closed before the command
    runs: nothing it starts can write a record or hold the start open."""
    r = run("bash", {"command": "ls /proc/self/fd"})
    # ls's own descriptor on the directory it lists is the one past 0, 1, 2.
    assert r.content.split() == ["0", "1", "2", "3"], r.content


def test_venv_activation_persists(workspace: Path, run: Runner) -> None:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(workspace / "venv")], check=True, timeout=120)
    run("bash", {"command": "source venv/bin/activate"})
    r = run("bash", {"command": "echo $VIRTUAL_ENV; command -v python"})
    assert r.content.splitlines() == [str(workspace / "venv"), str(workspace / "venv/bin/python")]


def test_state_persists_across_cli_invocations(workspace: Path) -> None:
    def cli(command: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-m", "cmd.tools", "--cwd", str(workspace), "--session", "sh", "bash",
             json.dumps({"command": command})],
            cwd=ROOT, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        return proc.stdout.strip()

    (workspace / "d").mkdir()
    cli("cd d; export MARK=42")
    assert cli("echo $PWD:$MARK") == f"{workspace}/d:42"


def test_exit_codes_and_messages(run: Runner) -> None:
    r = run("bash", {"command": "echo out; echo err >&2; exit 7"})
    assert r.metadata["exit_code"] == 7
    assert r.content == "out\nerr\n\nExit code 7"
    assert not r.is_error  # a failing command is a result, not a tool error
    r = run("bash", {"command": "true"})
    assert r.content == "no output" and r.metadata["exit_code"] == 0
    r = run("bash", {"command": "if then"})
    assert r.metadata["exit_code"] == 2 and "syntax error" in r.content


def test_timeout_kills_the_whole_group(run: Runner) -> None:
    started = time.monotonic()
    r = run("bash", {"command": "sleep 1000 & echo $! ; wait", "timeout": 500})
    assert time.monotonic() - started < 5
    assert r.is_error and r.metadata["timed_out"] and "Command timed out after 500 ms" in r.content
    child = int(r.content.splitlines()[0])
    assert not pid_alive(child)



def test_a_stopped_shell_adds_nothing_of_its_own_to_the_output(run: Runner) -> None:
    """Saving its state as it is stopped (the exit hook) never reaches the command's output."""
    r = run("bash", {"command": "sleep 30", "timeout": 1000})
    assert r.metadata["timed_out"] and r.content.startswith("no output\n"), r.content


def test_background_child_holding_stdout_does_not_block(run: Runner) -> None:
    started = time.monotonic()
    r = run("bash", {"command": "(sleep 30; echo late) & echo now"})
    assert time.monotonic() - started < 5
    assert r.content.startswith("now\n") and r.metadata["exit_code"] == 0
    # the subshell and its sleep
    assert "2 background processes were stopped when the command ended; use run_in_background" in r.content
    assert r.metadata["stopped_background"] == 2


def test_setsid_and_nohup_children_are_stopped_and_counted(workspace: Path, run: Runner) -> None:
    r = run("bash", {"command": "setsid sleep 300 & echo $!; nohup sleep 300 >/dev/null 2>&1 & echo $!"})
    pids = [int(line) for line in r.content.splitlines()[:2]]
    assert "2 background processes were stopped when the command ended" in r.content
    assert not any(pid_alive(pid) for pid in pids)
    r = run("bash", {"command": "echo quiet"})
    assert r.content == "quiet" and r.metadata["stopped_background"] == 0


def test_cancel_token_and_task_cancel_stop_the_command(workspace: Path) -> None:
    session: Session = make_session(workspace)
    marker = workspace / "pid"

    async def with_token() -> Any:
        token = CancelToken()
        call = asyncio.ensure_future(
            session.run("bash", {"command": f"sleep 1000 & echo $! > {marker}; wait"}, cancel=token)
        )
        while not marker.exists() or not marker.read_text().strip():
            await asyncio.sleep(0.01)
        token.cancel()
        return await asyncio.wait_for(call, 10)

    r = asyncio.run(with_token())
    assert r.is_error and "Command was aborted" in r.content
    assert not pid_alive(int(marker.read_text()))
    marker.unlink()

    async def with_task_cancel() -> None:
        call = asyncio.ensure_future(session.run("bash", {"command": f"sleep 1000 & echo $! > {marker}; wait"}))
        while not marker.exists() or not marker.read_text().strip():
            await asyncio.sleep(0.01)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(call, 10)

    asyncio.run(with_task_cancel())
    pid = int(marker.read_text())
    assert not pid_alive(pid), Path(f"/proc/{pid}/stat").read_text()


@pytest.mark.parametrize("command", ["git commit", "read x; echo got=$x", "cat", "less -F /etc/hostname"])
def test_commands_that_would_prompt_return(workspace: Path, run: Runner, command: str) -> None:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True, timeout=30)
    started = time.monotonic()
    r = run("bash", {"command": command, "timeout": 20_000})
    assert not r.metadata["timed_out"], r.content
    assert time.monotonic() - started < 15


@pytest.mark.parametrize(
    "command", ["vi newfile", "vim -c ':q!' x || true", "echo x | less", "nano f", "emacs f", "top", "watch ls"]
)
def test_interactive_programs_are_refused(run: Runner, command: str) -> None:
    r = run("bash", {"command": command})
    assert r.is_error and "is interactive and waits for a terminal" in r.content and "edit" in r.content


@pytest.mark.parametrize(
    ("command", "safe"),
    [
        ("sort x", True), ("sort -o out x", False), ("sort -uo out x", False), ("uniq a", True), ("uniq a b", False),
        ("git diff", True), ("git diff --output=x", False), ("git -c core.fsmonitor=x status", False),
        ("rg foo", True), ("rg --pre ./x.sh foo", False), ("date +%s", True), ("date -s 2020-01-01", False),
        ("date 0101", False), ("hostname", True), ("hostname evil", False), ("ls -la | wc -l", True),
    ],
)  # fmt: skip
def test_the_safe_list_looks_at_flags(command: str, safe: bool) -> None:
    assert policy.is_safe(command) is safe


def test_huge_output_bounded_memory_and_capped_file(workspace: Path) -> None:
    from agent_toolsmith.truncate import SPILL_FILE_MAX_BYTES

    size = 300_000_000
    script = (
        "import asyncio, json\n"
        "from agent_toolsmith.session import Session\n"
        "from agent_toolsmith.config import Config\n"
        f"s = Session({str(workspace)!r}, config=Config(lsp_enabled=False))\n"
        f"r = asyncio.run(s.run('bash', {{'command': 'yes | head -c {size}'}}))\n"
        # VmHWM is this process image's own peak; ru_maxrss would include the forking parent's.
        "peak = next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:'))\n"
        "print(json.dumps({'rss_kb': peak, 'meta': r.metadata,"
        " 'content_len': len(r.content), 'marker': 'lines truncated] ...' in r.content}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    report = json.loads(proc.stdout)
    assert report["rss_kb"] < 150_000, report["rss_kb"]  # far below the 300 MB streamed through
    path = Path(report["meta"]["full_output_path"])
    half = SPILL_FILE_MAX_BYTES // 2
    with open(path, "rb") as spilled:
        head = spilled.read(half)
        marker = spilled.readline() + spilled.readline()
        tail = spilled.read()
    assert head == b"y\n" * (half // 2) and tail == b"y\n" * (half // 2)  # the first and last 50 MB, whole
    omitted = f"[{size - 2 * half} bytes omitted: a spill file keeps the first and last {half} bytes]"
    assert marker == f"\n... {omitted} ...\n".encode()
    assert report["meta"]["truncated"] is True
    assert report["content_len"] < 32_000
    assert report["marker"] is True


def test_truncation_never_splits_utf8(run: Runner) -> None:
    r = run("bash", {"command": "python3 -c \"print('é中' * 50000)\"; python3 -c \"print('x' * 10)\""})
    assert r.metadata["truncated"]
    assert "\ufffd" not in r.content
    assert Path(r.metadata["full_output_path"]).read_text(encoding="utf-8").startswith("é中é中")


@pytest.mark.parametrize(
    "command",
    ["echo ok && curl x", "echo $(wget -q http://x)", "/usr/bin/curl x", "ls | xargs curl", "bash -c 'ssh h'",
     "sudo ls", "npm install -g left-pad", "echo `nc -l 1`", "env X=1 wget y", "find . -exec curl {} \\;"],
)  # fmt: skip
def test_banned_commands_refused(run: Runner, command: str) -> None:
    r = run("bash", {"command": command})
    assert r.is_error and r.content.startswith("Command refused")


def test_safe_lines_skip_the_ask_and_bypasses_do_not(workspace: Path) -> None:
    asked: list[str] = []

    async def deny(request: PermissionRequest) -> Decision:
        asked.append(request.target)
        return Decision.DENY

    session = make_session(workspace, asker=deny)
    for safe in ["ls -la", "git status", "cat README 2>/dev/null | head -5", "pwd && echo hi"]:
        r = asyncio.run(session.run("bash", {"command": safe}))
        assert not r.content.startswith("Permission denied"), safe
    bypasses = ["ls; touch pwned", "git status && git push", "ls > out.txt", "echo $(touch pwned)",
                "cat x | sh", "find . -delete", "git log; rm -rf .", "echo hi | tee file"]  # fmt: skip
    for attempt in bypasses:
        r = asyncio.run(session.run("bash", {"command": attempt}))
        assert r.is_error and r.content.startswith("Permission denied"), attempt
    assert asked == bypasses
    assert not (workspace / "pwned").exists() and not (workspace / "out.txt").exists()


def test_progress_is_streamed_and_throttled(workspace: Path) -> None:
    events: list[float] = []

    def progress(message: str, data: dict[str, Any]) -> None:
        events.append(time.monotonic())

    session = make_session(workspace, progress=progress)
    asyncio.run(session.run("bash", {"command": "for i in $(seq 1 8); do echo $i; sleep 0.1; done"}))
    assert len(events) >= 3
    gaps = [b - a for a, b in itertools.pairwise(events[:-1])]  # the last is the final flush
    assert min(gaps) >= 0.099


def test_progress_is_lossless(workspace: Path) -> None:
    texts: list[str] = []
    session = make_session(workspace, progress=lambda message, data: texts.append(data["text"]))
    response = asyncio.run(session.run("bash", {"command": "seq 1 20000; printf 'é中 end'"}))
    expected = "".join(f"{i}\n" for i in range(1, 20001)) + "é中 end"
    assert "".join(texts) == expected
    assert response.metadata["exit_code"] == 0


def test_output_progress_coalesces_and_never_splits_a_character() -> None:
    from agent_toolsmith.progress import PROGRESS_INTERVAL_S, OutputProgress

    now = [0.0]
    sent: list[str] = []
    stream = OutputProgress(lambda message, data: sent.append(data["text"]), "bash", clock=lambda: now[0])
    data = "aé中😀b".encode() * 50
    for i in range(len(data)):  # one byte at a time, time standing still: one call, then silence
        stream.write(data[i : i + 1])
    assert len(sent) == 1
    now[0] += PROGRESS_INTERVAL_S
    stream.write(b"")
    stream.close()
    assert "".join(sent) == data.decode() and "\ufffd" not in "".join(sent)


def test_dead_directory_restarts_in_workspace(workspace: Path, run: Runner) -> None:
    (workspace / "gone").mkdir()
    run("bash", {"command": "cd gone"})
    os.rmdir(workspace / "gone")
    r = run("bash", {"command": "pwd"})
    assert "no longer exists" in r.content and r.content.endswith(str(workspace))


PLAIN_WORDS = st.lists(
    st.sampled_from(
        ["ls", "git", "status", "-la", "curl", "env", "X=1", "timeout", "5", "'a b'", '"c d"', "sudo", "rg",
         "--pre", "./x.sh", "sort", "-o", "out.txt", "bash", "-c", "'curl x'", "python3", "f.py", "=x", "é"]
    ),
    min_size=1,
    max_size=6,
)  # fmt: skip


@given(PLAIN_WORDS)
def test_plain_lines_skip_bashlex_with_the_same_analysis(words: list[str]) -> None:
    import re

    line = " ".join(words)
    fast = policy.analyse(line)
    saved = policy._PLAIN_LINE
    policy._PLAIN_LINE = re.compile(r"(?!)")  # never plain: the full parser
    try:
        full = policy.analyse(line)
    finally:
        policy._PLAIN_LINE = saved
    assert (fast.commands, fast.writes_files) == (full.commands, full.writes_files)
