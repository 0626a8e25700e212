"""Who may talk to a CLI session host, and what it takes from them (docs/cli-session-host.md,
"Trust"): a sandboxed command cannot reach it, a request changes nothing but the call it carries,
a client without the session's secret is refused, and the CLI never sends a call to a socket
that another user could have put there. Real CLI processes, real hosts, real bubblewrap; the
impostors are real processes of another uid where the tests run as root."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.session import Session

from tests.test_session_host import WAIT_S, cli, host_pid, paths, state_dir

NOBODY = 65534
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="a file or process of another uid needs root")

#: Run inside a command: everything it can find of the state directory ($1) and session s.
PROBE = """
import os, socket, sys
state = sys.argv[1]
try:
    print("LISTING", sorted(os.listdir(state)))
except OSError as exc:
    print("LISTING-ERROR", exc)
targets = [os.path.join(state, "sessions", "s", "host.sock")]
for top, _, names in os.walk(state):
    targets += [os.path.join(top, n) for n in names if n.endswith(".sock")]
for target in targets:
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.connect(target)
        print("CONNECTED", target)
    except OSError as exc:
        print("NOT-CONNECTED", target, exc)
try:
    print("SECRET", open(os.path.join(state, "sessions", "s", "host.secret")).read())
except OSError as exc:
    print("NO-SECRET", exc)
"""


def sandboxed_workspace(workspace: Path) -> None:
    (workspace / ".toolsmith").mkdir(exist_ok=True)
    (workspace / ".toolsmith" / "config.toml").write_text("[bash]\nsandbox = true\n")


def probe(workspace: Path, state: Path, session: str) -> str:
    (workspace / "probe.py").write_text(PROBE)
    # python3 from PATH: this test run's own interpreter may live under /tmp (a fresh clone there),
    # which the sandbox replaces with a private /tmp.
    command = json.dumps({"command": f"python3 probe.py {state}"})
    done = cli(workspace, "bash", command, session=session)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return done.stdout


def test_a_sandboxed_command_cannot_reach_the_host_socket_or_its_secret(
    bwrap: str, state_outside_tmp: Path, workspace: Path, tmp_path: Path
) -> None:
    sandboxed_workspace(workspace)
    assert cli(workspace, "bash", '{"command": "true"}').returncode == 0  # session s's host is up
    secret = (state_outside_tmp / "sessions" / "s" / "host.secret").read_text().strip()
    plain = tmp_path / "plain"
    plain.mkdir()
    # The same probe from an unsandboxed session proves it would reach both.
    seen = probe(plain, state_outside_tmp, session="plain")
    assert f"CONNECTED {state_outside_tmp}/sessions/s/host.sock" in seen and secret in seen, seen
    boxed = probe(workspace, state_outside_tmp, session="s")
    assert "LISTING []" in boxed, boxed  # the state directory is an empty directory in there
    assert "CONNECTED" not in boxed.replace("NOT-CONNECTED", "") and "NO-SECRET" in boxed, boxed
    assert secret not in boxed
    assert cli(workspace, "--end").returncode == 0 and cli(plain, "--end", session="plain").returncode == 0


def test_the_sandbox_hides_a_state_directory_inside_the_workspace(bwrap: str, workspace: Path) -> None:
    state = workspace / ".state"
    state.mkdir(mode=0o700)
    (state / "secret.txt").write_text("do not show\n")
    session = Session(workspace, config=Config(lsp_enabled=False, bash_sandbox=True, state_dir=state))
    command = 'echo "[$(ls -A .state)]"; cat .state/secret.txt; touch .state/planted; echo x > in.txt && cat in.txt'
    shown = asyncio.run(session.run("bash", {"command": command})).content
    assert shown.startswith("[]\n") and "do not show" not in shown, shown
    assert "Read-only file system" in shown and shown.rstrip().endswith("x"), shown  # the workspace is writable
    assert not (state / "planted").exists() and (workspace / "in.txt").exists()


def test_a_workspace_inside_the_state_directory_stays_visible_and_writable(bwrap: str, tmp_path: Path) -> None:
    state = tmp_path / "state"
    workspace = state / "projects" / "ws"
    workspace.mkdir(parents=True)
    (state / "secret.txt").write_text("do not show\n")
    session = Session(workspace, config=Config(lsp_enabled=False, bash_sandbox=True, state_dir=state))
    command = f'echo "[$(ls -A {state})]"; cat {state}/secret.txt; echo x > inside.txt && cat inside.txt && pwd'
    shown = asyncio.run(session.run("bash", {"command": command})).content
    assert shown.startswith("[projects]\n") and "do not show" not in shown, shown
    assert shown.rstrip().endswith(f"x\n{workspace}") and (workspace / "inside.txt").read_text() == "x\n", shown


class HostConnection:
    """A raw connection to session s's host, speaking the wire protocol line by line."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(WAIT_S)
        self.sock.connect(str(paths().socket))
        self.reader = self.sock.makefile("rb")

    def send(self, message: dict[str, object]) -> None:
        self.sock.sendall(json.dumps(message).encode() + b"\n")

    def answer(self) -> dict[str, object] | None:
        line = self.reader.readline()
        return json.loads(line) if line else None

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


@pytest.fixture
def host_connection() -> Iterator[type[HostConnection]]:
    made: list[HostConnection] = []

    class Tracked(HostConnection):
        def __init__(self) -> None:
            super().__init__()
            made.append(self)

    yield Tracked
    for conn in made:
        conn.close()


def test_the_host_takes_nothing_from_a_request_but_the_call(
    bwrap: str, workspace: Path, tmp_path: Path, host_connection: type[HostConnection]
) -> None:
    """A client with the right secret sends a call together with another workspace, config,
    profile, session and audit log: the call runs in the host's own session as it was started."""
    sandboxed_workspace(workspace)
    audit = tmp_path / "audit.jsonl"
    started = cli(workspace, "--audit-log", str(audit), "bash", '{"command": "true"}')
    assert started.returncode == 0, started.stdout + started.stderr
    other = tmp_path / "other"
    other.mkdir()
    unboxed = tmp_path / "unboxed.toml"
    unboxed.write_text("[bash]\nsandbox = false\n")
    rc_file = tmp_path / "rcfile"
    conn = host_connection()
    conn.send({"secret": paths().secret.read_text().strip()})
    served = conn.answer()
    assert served == {"serves": {"session": "s", "cwd": str(workspace), "config": None, "profile": "default",
                                 "audit_log": str(audit)}}, served  # fmt: skip
    forged = {"workspace": str(other), "cwd": str(other), "config": str(unboxed), "profile": "codex",
              "session": "other", "audit_log": str(rc_file), "state_dir": str(tmp_path / "elsewhere"),
              "spec": {"cwd": str(other), "config": str(unboxed), "audit_log": str(rc_file)}}  # fmt: skip
    conn.send({"op": "run", "tool": "bash", "params": {"command": "pwd"}, "no_lsp": True, **forged})
    assert conn.answer() == {"accepted": True}
    envelope = conn.answer()["envelope"]  # type: ignore[index]
    assert envelope["content"].strip() == str(workspace), envelope
    assert envelope["metadata"]["sandboxed"] is True and envelope["metadata"]["cwd"] == str(workspace)
    assert not rc_file.exists() and not (tmp_path / "elsewhere").exists() and os.listdir(other) == []
    recorded = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [r["tool"] for r in recorded] == ["bash", "bash"] and recorded[-1]["params"] == {"command": "pwd"}


def test_a_client_without_the_secret_is_refused_and_runs_nothing(
    workspace: Path, host_connection: type[HostConnection]
) -> None:
    assert cli(workspace, "ls", "{}").returncode == 0
    run = {"op": "run", "tool": "bash", "params": {"command": "touch ran"}}
    wrong = host_connection()
    wrong.send({"secret": "0" * 64})
    assert wrong.answer() == {"refused": "wrong or missing secret"} and wrong.answer() is None
    without = host_connection()
    without.send(run)  # the call itself as the first line
    assert without.answer() == {"refused": "wrong or missing secret"} and without.answer() is None
    with contextlib.suppress(OSError):
        wrong.send(run)
        without.send(run)
    right = host_connection()  # the host serves on
    right.send({"secret": paths().secret.read_text().strip()})
    assert "serves" in (right.answer() or {})
    right.send({"op": "run", "tool": "bash", "params": {"command": "pwd"}})
    assert right.answer() == {"accepted": True} and right.answer() is not None
    assert not (workspace / "ran").exists()


def test_the_secret_and_socket_are_private_and_the_secret_changes_with_the_host(workspace: Path) -> None:
    assert cli(workspace, "ls", "{}").returncode == 0
    first = paths().secret.read_text().strip()
    assert len(first) == 64 and (paths().secret.stat().st_mode & 0o777) == 0o600
    assert cli(workspace, "--end").returncode == 0
    assert not paths().secret.exists()
    assert cli(workspace, "ls", "{}").returncode == 0
    assert paths().secret.read_text().strip() != first


# --- impostors: a socket or directory that another user made, or may change ---------------------


class Impostor:
    """A listening socket at session ``imp``'s host.sock, made by the test: it must never be
    connected to (a pending connection shows it was)."""

    def __init__(self) -> None:
        self.paths = paths("imp")
        self.paths.directory.mkdir(parents=True, mode=0o700)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(self.paths.socket))
        self.sock.listen(8)
        self.sock.setblocking(False)

    def was_contacted(self) -> bool:
        try:
            conn, _ = self.sock.accept()
        except BlockingIOError:
            return False
        conn.close()
        return True


@pytest.fixture
def impostor() -> Iterator[Impostor]:
    made = Impostor()
    yield made
    made.sock.close()


def refused_call(workspace: Path, *, session: str = "imp") -> subprocess.CompletedProcess[str]:
    token = uuid.uuid4().hex
    done = cli(workspace, "--json", "bash", json.dumps({"command": f"touch ran-{token}"}), session=session)
    assert done.returncode == 1, done.stdout + done.stderr
    envelope = json.loads(done.stdout)
    assert envelope["metadata"]["error"] == "unsafe_state_dir" and "Nothing was sent" in envelope["content"]
    assert not list(workspace.glob("ran-*")), "the call ran in-process"
    return done


@needs_root
def test_an_impostor_in_a_directory_of_another_user_never_gets_the_call(workspace: Path, impostor: Impostor) -> None:
    os.chown(impostor.paths.socket, NOBODY, NOBODY)
    os.chown(impostor.paths.directory, NOBODY, NOBODY)
    done = refused_call(workspace)
    assert f"belongs to uid {NOBODY}" in done.stdout, done.stdout
    assert not impostor.was_contacted()
    ended = cli(workspace, "--end", session="imp")
    assert ended.returncode == 1 and f"belongs to uid {NOBODY}" in ended.stderr, ended.stdout + ended.stderr
    assert not impostor.was_contacted()


@needs_root
def test_an_impostor_socket_of_another_user_in_our_directory_never_gets_the_call(
    workspace: Path, impostor: Impostor
) -> None:
    os.chown(impostor.paths.socket, NOBODY, NOBODY)
    assert f"{impostor.paths.socket}: it belongs to uid {NOBODY}" in refused_call(workspace).stdout
    assert not impostor.was_contacted()


@pytest.mark.parametrize("where", ["session directory", "sessions", "state directory"])
def test_a_directory_that_others_may_write_is_refused(workspace: Path, impostor: Impostor, where: str) -> None:
    loose = {"session directory": impostor.paths.directory, "sessions": impostor.paths.directory.parent,
             "state directory": state_dir()}[where]  # fmt: skip
    os.chmod(loose, 0o777)  # what another user could have planted an impostor in
    try:
        done = refused_call(workspace)
    finally:
        os.chmod(loose, 0o700)
    assert f"refusing {loose}: it is writable by group and others (mode 0777)" in done.stdout, done.stdout
    assert not impostor.was_contacted()


IMPOSTOR_PROCESS = """
import socket, sys
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(sys.argv[1])
server.listen(1)
print("ready", flush=True)
server.settimeout(60)
conn, _ = server.accept()
conn.settimeout(10)
received = b""
try:
    while chunk := conn.recv(65536):
        received += chunk
except OSError:
    pass
print(repr(received), flush=True)
"""


@needs_root
def test_a_socket_whose_listener_runs_as_another_user_never_gets_the_call(workspace: Path) -> None:
    """The socket file is ours, in our private directory; the process listening on it is not
    (SO_PEERCRED): the CLI closes the connection without sending a byte."""
    python = shutil.which("python3", path="/usr/bin:/bin")  # the test's own may be in root's home
    if python is None:
        pytest.fail("no python3 in /usr/bin or /bin for the impostor process")
    shared = Path(tempfile.mkdtemp(prefix="toolsmith-impostor-"))
    os.chmod(shared, 0o777)
    listener = subprocess.Popen([python, "-c", IMPOSTOR_PROCESS, str(shared / "s.sock")], user=NOBODY,
                                stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert listener.stdout is not None and listener.stdout.readline().strip() == "ready"
        target = paths("imp")
        target.directory.mkdir(parents=True, mode=0o700)
        os.rename(shared / "s.sock", target.socket)
        os.chown(target.socket, os.getuid(), os.getgid())
        done = refused_call(workspace)
        assert f"the process listening on it runs as uid {NOBODY}" in done.stdout, done.stdout
        received, _ = listener.communicate(timeout=WAIT_S)
        assert received.strip() == "b''", received  # connected, and not one byte sent
    finally:
        listener.kill()
        listener.wait(timeout=WAIT_S)
        shutil.rmtree(shared, ignore_errors=True)


def test_the_cli_still_talks_to_its_own_host_after_the_checks(workspace: Path) -> None:
    """The checks refuse what is not ours, not what is: a running host keeps serving."""
    assert cli(workspace, "bash", '{"command": "export MARK=kept"}').returncode == 0
    host = host_pid()
    shown = cli(workspace, "bash", '{"command": "echo $MARK"}')
    assert shown.stdout.strip() == "kept" and shown.stderr == "" and host_pid() == host
