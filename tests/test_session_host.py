"""The per-session host behind CLI ``--session`` calls: real CLI subprocesses, a real host
process, real language servers, checked through /proc (see docs/cli-session-host.md)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from agent_toolsmith.session_host import HOST_ENV, HostPaths, end_host, running_hosts

ROOT = Path(__file__).resolve().parents[1]
#: Generous bound for any wait on a process (hang guard, not a timing assertion).
WAIT_S = 60.0


def cli(workspace: Path, *args: str, session: str = "s", env: dict[str, str] | None = None,
        stdin: str = "") -> subprocess.CompletedProcess[str]:  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "cmd.tools", "--cwd", str(workspace), "--session", session, *args],
        cwd=ROOT, input=stdin, capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})},
    )  # fmt: skip


def state_dir() -> Path:
    return Path(os.environ["TOOLSMITH_STATE_DIR"])


def paths(session: str = "s") -> HostPaths:
    return HostPaths(state_dir() / "sessions" / session)


def host_pid(session: str = "s") -> int:
    pid, _start = paths(session).pid_file.read_text().split()
    return int(pid)


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (by parent links in /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if alive(child):
                found.add(child)
                todo.append(child)
    return found


def wait_until(condition: Callable[[], bool], what: str, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def processes_with(token: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if token.encode() in Path(f"/proc/{entry}/cmdline").read_bytes() and alive(int(entry)):
                    found.append(int(entry))
            except OSError:
                continue
    return found


def test_the_second_edit_gets_confirmed_diagnostics_from_a_warm_server(workspace: Path) -> None:
    (workspace / "pyproject.toml").write_text("[project]\nname = 'w'\n")
    (workspace / "m.py").write_text("count: int = 1\n")
    assert cli(workspace, "view", '{"file_path": "m.py"}').returncode == 0
    first = cli(workspace, "edit", '{"file_path": "m.py", "old_string": "= 1", "new_string": "= \\"one\\""}')
    assert first.returncode == 0, first.stdout + first.stderr  # cold: may be unconfirmed
    host = host_pid()
    servers = {pid for pid in descendants(host) if re.search(rb"langserver|pylsp", _read(Path(f"/proc/{pid}/cmdline")))}
    assert servers, "the edit started no language server in the host"
    second = cli(workspace, "edit", '{"file_path": "m.py", "old_string": "count", "new_string": "total"}')
    assert second.returncode == 0, second.stdout + second.stderr
    assert "reportAssignmentType" in second.stdout or "[pylsp]" in second.stdout, second.stdout
    assert "unconfirmed" not in second.stdout and "unavailable" not in second.stdout, second.stdout
    assert host_pid() == host and servers <= descendants(host)  # the same, warm servers


def test_concurrent_first_calls_start_exactly_one_host(workspace: Path) -> None:
    (workspace / "f.txt").write_text("x\n")
    calls = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "cmd.tools",
                "--cwd",
                str(workspace),
                "--session",
                "race",
                "view",
                '{"file_path": "f.txt"}',
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(5)
    ]
    for call in calls:
        out, err = call.communicate(timeout=120)
        assert call.returncode == 0 and "1|x" in out and err == "", out + err
    hosts = running_hosts(state_dir())
    assert [h.directory.name for h in hosts] == ["race"]
    assert host_pid("race") in {int(p) for p in _host_pids()}


def _host_pids() -> list[int]:
    from agent_toolsmith.session_host.client import _BOOTSTRAP

    return [
        int(c.parent.name)
        for c in Path("/proc").glob("[0-9]*/cmdline")
        if _BOOTSTRAP.encode() in _read(c) and str(state_dir()).encode() in _read(c)
    ]


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def test_a_stale_socket_is_replaced(workspace: Path) -> None:
    p = paths("stale")
    p.directory.mkdir(parents=True, mode=0o700)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(p.socket))  # bound, never listening, then closed: connect is refused
    dead.close()
    p.pid_file.write_text("999999999 1\n")  # a pid that cannot exist
    (workspace / "f.txt").write_text("x\n")
    proc = cli(workspace, "view", '{"file_path": "f.txt"}', session="stale")
    assert proc.returncode == 0 and proc.stderr == "", proc.stdout + proc.stderr
    assert host_pid("stale") != 999999999 and alive(host_pid("stale"))
    assert (p.socket.stat().st_mode & 0o777) == 0o600 and (p.directory.stat().st_mode & 0o777) == 0o700



def test_a_loose_session_directory_is_made_private_before_the_socket_is_bound(workspace: Path) -> None:
    p = paths("loose")
    p.directory.mkdir(parents=True)
    p.directory.chmod(0o755)  # made by something else, readable and searchable by everyone
    (workspace / "f.txt").write_text("x\n")
    proc = cli(workspace, "view", '{"file_path": "f.txt"}', session="loose")
    assert proc.returncode == 0 and proc.stderr == "", proc.stdout + proc.stderr
    assert alive(host_pid("loose"))
    assert (p.directory.stat().st_mode & 0o777) == 0o700 and (p.socket.stat().st_mode & 0o777) == 0o600


def test_a_symlinked_session_directory_gets_no_host(workspace: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (state_dir() / "sessions").mkdir(exist_ok=True, mode=0o700)
    paths("linked").directory.symlink_to(elsewhere)
    (workspace / "f.txt").write_text("x\n")
    proc = cli(workspace, "view", '{"file_path": "f.txt"}', session="linked")
    assert proc.returncode == 0 and "1|x" in proc.stdout, proc.stdout + proc.stderr
    assert "it is a symbolic link" in proc.stderr and "running this call in-process" in proc.stderr, proc.stderr
    assert not (elsewhere / "host.sock").exists() and not (elsewhere / "host.pid").exists()
    assert running_hosts(state_dir()) == []


def test_the_socket_is_bound_in_the_checked_directory_even_if_its_path_is_swapped(tmp_path: Path) -> None:
    """The bind goes through the descriptor of the directory that was checked: a directory moved
    away and replaced at the same path afterwards never gets the socket."""
    from agent_toolsmith.session_host.host import bind_private_socket, open_private_directory

    checked = tmp_path / "d"
    checked.mkdir(mode=0o755)
    fd = open_private_directory(checked)
    try:
        checked.rename(tmp_path / "moved")
        checked.mkdir(mode=0o777)  # what someone else could put at the old path
        sock = bind_private_socket(fd, "host.sock")
    finally:
        os.close(fd)
    with sock:
        sock.listen()
        assert not (checked / "host.sock").exists()
        bound = tmp_path / "moved" / "host.sock"
        assert (bound.stat().st_mode & 0o777) == 0o600 and ((tmp_path / "moved").stat().st_mode & 0o777) == 0o700
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(WAIT_S)
            client.connect(str(bound))


def test_the_host_exits_when_idle(workspace: Path) -> None:
    (workspace / ".toolsmith").mkdir()
    (workspace / ".toolsmith" / "config.toml").write_text("[session_host]\nidle_timeout = 1\n")
    assert cli(workspace, "ls", "{}").returncode == 0
    host = host_pid()
    wait_until(lambda: not alive(host), "the idle host to exit")
    assert not paths().socket.exists() and not paths().pid_file.exists()
    assert cli(workspace, "ls", "{}").returncode == 0  # the next call starts a new one
    assert host_pid() != host


def test_end_stops_the_host_and_everything_it_runs(workspace: Path) -> None:
    (workspace / "m.py").write_text("a = 1\n")
    assert cli(workspace, "view", '{"file_path": "m.py"}').returncode == 0
    assert cli(workspace, "edit", '{"file_path": "m.py", "old_string": "1", "new_string": "2"}').returncode == 0
    host = host_pid()
    before = descendants(host) | {host}
    assert len(before) > 1  # language servers run in the host
    ended = cli(workspace, "--end")
    assert ended.returncode == 0 and "host stopped" in ended.stdout, ended.stdout + ended.stderr
    assert [pid for pid in before if alive(pid)] == []
    assert not paths().socket.exists()
    again = cli(workspace, "--end")
    assert again.returncode == 0 and "no host was running" in again.stdout


def test_shell_state_and_read_tracking_carry_across_calls_with_and_without_the_host(workspace: Path) -> None:
    (workspace / "sub").mkdir()
    (workspace / "sub" / "f.txt").write_text("one\n")
    in_process = {HOST_ENV: "0"}
    assert cli(workspace, "bash", '{"command": "cd sub && export MARK=seen"}').returncode == 0
    shown = cli(workspace, "bash", '{"command": "pwd; echo $MARK"}')
    assert shown.stdout.split() == [str(workspace / "sub"), "seen"], shown.stdout
    # A call that bypasses the host sees what the host saved, and the host sees what it saved.
    assert cli(workspace, "bash", '{"command": "pwd"}', env=in_process).stdout.strip() == str(workspace / "sub")
    assert cli(workspace, "view", '{"file_path": "sub/f.txt"}', env=in_process).returncode == 0
    wrote = cli(workspace, "write", '{"file_path": "sub/f.txt", "content": "two\\n"}')
    assert wrote.returncode == 0, wrote.stdout  # read in-process, written through the host
    assert (workspace / "sub" / "f.txt").read_text() == "two\n"
    assert cli(workspace, "bash", '{"command": "cd /"}', env=in_process).returncode == 0
    assert cli(workspace, "bash", '{"command": "pwd"}').stdout.strip() == "/"


def test_a_killed_cli_cancels_its_call_in_the_host(workspace: Path) -> None:
    token = f"t{uuid.uuid4().hex}"
    assert cli(workspace, "ls", "{}").returncode == 0  # the host is up
    call = subprocess.Popen(
        [sys.executable, "-m", "cmd.tools", "--cwd", str(workspace), "--session", "s", "bash",
         f'{{"command": "sleep 300; echo {token}", "timeout": 600000}}'],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    wait_until(lambda: bool(processes_with(token)), "the command to start in the host")
    call.send_signal(signal.SIGTERM)
    call.communicate(timeout=WAIT_S)
    wait_until(lambda: not processes_with(token), "the cancelled command to be killed")
    assert alive(host_pid())  # the host itself serves on
    assert cli(workspace, "ls", "{}").returncode == 0


def test_calls_to_one_host_run_concurrently(workspace: Path) -> None:
    token = f"t{uuid.uuid4().hex}"
    assert cli(workspace, "ls", "{}").returncode == 0  # the host is up
    # The first call finishes only once the second has run: serialised calls would hang here
    # until the bash timeout (the hang guard), and the first call would report it.
    waiting = subprocess.Popen(
        [sys.executable, "-m", "cmd.tools", "--cwd", str(workspace), "--session", "s", "bash",
         f'{{"command": "while [ ! -e go ]; do sleep 0.05; done; echo released # {token}", "timeout": 60000}}'],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    wait_until(lambda: bool(processes_with(token)), "the first call to run in the host")
    assert cli(workspace, "bash", '{"command": "touch go"}').returncode == 0
    out, err = waiting.communicate(timeout=WAIT_S * 2)
    assert waiting.returncode == 0 and out.strip() == "released", out + err


def test_a_session_batch_runs_in_the_host_and_shares_its_state(workspace: Path) -> None:
    (workspace / "f.txt").write_text("a\n")
    assert cli(workspace, "view", '{"file_path": "f.txt"}').returncode == 0  # read through the host
    calls = "\n".join(
        [
            json.dumps({"tool": "write", "params": {"file_path": "f.txt", "content": "b\n"}, "id": 1}),
            json.dumps({"tool": "bash", "params": {"command": "cat f.txt"}, "id": 2}),
        ]
    )
    proc = cli(workspace, "--batch", "-", stdin=calls)
    envelopes = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [(e["id"], e["is_error"]) for e in envelopes] == [(1, False), (2, False)], proc.stdout + proc.stderr
    assert envelopes[1]["content"].strip() == "b" and proc.stderr == ""
    assert alive(host_pid())


def test_no_lsp_goes_through_the_host_without_diagnostics(workspace: Path) -> None:
    (workspace / "m.py").write_text("n: int = 1\n")
    assert cli(workspace, "--no-lsp", "view", '{"file_path": "m.py"}').returncode == 0
    edited = cli(workspace, "--no-lsp", "edit", '{"file_path": "m.py", "old_string": "1", "new_string": "\\"x\\""}')
    assert edited.returncode == 0 and "diagnostics" not in edited.stdout.lower(), edited.stdout
    host = host_pid()
    assert descendants(host) == set()  # no language server was started for these calls


def test_a_socket_path_longer_than_unix_sockets_allow_still_gets_a_host(workspace: Path, tmp_path: Path) -> None:
    """Both sides reach the socket through the session directory's descriptor
    (/proc/self/fd/N/host.sock), so the state directory's own path may be of any length."""
    deep = tmp_path / ("d" * 100)
    (workspace / "f.txt").write_text("x\n")
    env = {"TOOLSMITH_STATE_DIR": str(deep)}
    try:
        proc = cli(workspace, "view", '{"file_path": "f.txt"}', env=env)
        assert proc.returncode == 0 and "1|x" in proc.stdout and proc.stderr == "", proc.stdout + proc.stderr
        assert len(os.fsencode(deep / "sessions" / "s" / "host.sock")) > 107
        assert [h.directory for h in running_hosts(tmp_path)] == [deep / "sessions" / "s"]
    finally:
        assert cli(workspace, "--end", env=env).returncode == 0
    assert running_hosts(tmp_path) == []


def test_another_workspace_for_the_same_session_runs_in_process(workspace: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    assert cli(workspace, "ls", "{}").returncode == 0
    proc = cli(other, "ls", "{}")
    assert proc.returncode == 0 and "serves workspace" in proc.stderr and "in-process" in proc.stderr


@pytest.fixture(autouse=True)
def _end_hosts() -> Iterator[None]:
    yield
    for p in running_hosts(state_dir()):
        end_host(p)


def test_a_cli_job_lives_across_calls_and_a_third_call_kills_it(workspace: Path) -> None:
    """Started by one CLI call, seen running by the next, killed by a third: the job lives in the
    session's host, not in the CLI process that started it."""
    token = f"job-{uuid.uuid4().hex}"
    command = json.dumps({"command": f"echo started; exec -a {token} sleep 300", "run_in_background": True})
    started = cli(workspace, "--json", "bash", command)
    assert started.returncode == 0, started.stdout + started.stderr
    job_id = json.loads(started.stdout)["metadata"]["job_id"]
    wait_until(lambda: bool(processes_with(token)), "the job's process")
    seen = cli(workspace, "--json", "job_output", json.dumps({"job_id": job_id}))
    assert seen.returncode == 0 and json.loads(seen.stdout)["metadata"]["state"] == "running", seen.stdout
    killed = cli(workspace, "--json", "job_kill", json.dumps({"job_id": job_id}))
    assert killed.returncode == 0 and json.loads(killed.stdout)["metadata"]["state"] == "killed", killed.stdout
    wait_until(lambda: not processes_with(token), "the job's process to be gone")
    assert cli(workspace, "--end").returncode == 0


def test_a_stdin_batch_that_falls_back_to_in_process_runs_every_line(workspace: Path, tmp_path: Path) -> None:
    """The host of session s serves another workspace, so this batch runs in the CLI process:
    the lines read from stdin for the host are the ones run there."""
    other = tmp_path / "other"
    other.mkdir()
    assert cli(other, "bash", '{"command": "true"}').returncode == 0  # s's host now serves `other`
    (workspace / "a.txt").write_text("hello\n")
    batch = (
        '{"tool": "view", "params": {"file_path": "a.txt"}, "id": 1}\n'
        '{"tool": "bash", "params": {"command": "echo hi"}, "id": 2}\n'
    )
    done = cli(workspace, "--batch", "-", stdin=batch)
    assert done.returncode == 0, done.stdout + done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a["id"] for a in answers] == [1, 2] and "hello" in answers[0]["content"] and answers[1]["content"] == "hi"


def test_a_host_that_dies_during_the_call_is_reported_lost_and_not_run_again(workspace: Path) -> None:
    token = f"t{uuid.uuid4().hex}"
    assert cli(workspace, "ls", "{}").returncode == 0  # the host is up
    host = host_pid()
    call = subprocess.Popen(
        [sys.executable, "-m", "cmd.tools", "--cwd", str(workspace), "--session", "s", "--json", "bash",
         f'{{"command": "echo $$ > pid.txt; echo {token} >> ran.txt; exec sleep 300", "timeout": 600000}}'],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    # The CLI's own command line holds the token too: the file says the command ran in the host.
    wait_until(lambda: (workspace / "ran.txt").exists(), "the call to start in the host")
    os.kill(host, signal.SIGKILL)
    out, _err = call.communicate(timeout=WAIT_S)
    envelope = json.loads(out)
    assert call.returncode == 1 and envelope["metadata"]["error"] == "session_host_lost", out
    assert (workspace / "ran.txt").read_text().count(token) == 1  # not run a second time in-process
    # A SIGKILLed host cannot stop what it started: the test does.
    os.kill(int((workspace / "pid.txt").read_text()), signal.SIGKILL)
