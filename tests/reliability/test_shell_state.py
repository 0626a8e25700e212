"""The shell's saved directory and environment against a hostile command (internal/shell/runner.py,
state.py): what it plants in the state directory never hangs or leaks into a later call, and
redefining the save hook or the EXIT trap does not change what is saved. Real bash, real
bubblewrap, real CLI processes and session hosts."""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat
from pathlib import Path

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.session import Session
from agent_toolsmith.shell.state import MAX_SHELL_STATE_BYTES

from tests.test_session_host import cli, wait_until

#: Hang guard for one call (a planted FIFO used to block forever).
CALL_TIMEOUT_MS = 30_000
#: What a host-only file behind a planted symbolic link holds: a session state that must never
#: be taken for ours.
LEAKED_DIR = "/leaked-directory-marker"
LEAKED_VALUE = "leaked-secret-value"

#: How a command plants each kind of trap at a path ({p}): a FIFO, a link to an endless device
#: ({zero}), a link to a host-only file ({outside}).
PLANTS = {
    "fifo": "rm -f {p} && mkfifo {p}",
    "dev_zero": "rm -f {p} && ln -s {zero} {p}",
    "outside": "rm -f {p} && ln -s {outside} {p}",
}


def zero_device(tmp_path: Path) -> Path:
    """A private node of /dev/zero's device when we may make one (root): a regression that wrote
    through the link would replace this node, not the machine's /dev/zero."""
    node = tmp_path / "zero"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 5))
    except PermissionError:
        return Path("/dev/zero")  # not root: nor could a regression replace /dev/zero
    return node


def host_only_file(tmp_path: Path) -> Path:
    secret = tmp_path / "host-only.json"
    secret.write_text(json.dumps({"shell": {"cwd": LEAKED_DIR, "env": {"LEAK": LEAKED_VALUE}}, "files": {}}))
    return secret


def sandbox_config(workspace: Path, sandboxed: bool) -> None:
    (workspace / ".toolsmith").mkdir(exist_ok=True)
    (workspace / ".toolsmith" / "config.toml").write_text(f"[bash]\nsandbox = {str(sandboxed).lower()}\n")


def bash(session: Session, command: str) -> str:
    response = asyncio.run(session.run("bash", {"command": command, "timeout": CALL_TIMEOUT_MS}))
    return response.content


def no_leak(text: str) -> None:
    assert LEAKED_DIR not in text and LEAKED_VALUE not in text, text


@pytest.mark.parametrize("sandboxed", [False, True], ids=["plain", "sandbox"])
@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_api_a_planted_state_file_neither_hangs_nor_leaks(
    bwrap: str, state_outside_tmp: Path, workspace: Path, tmp_path: Path, plant: str, sandboxed: bool
) -> None:
    outside = host_only_file(tmp_path)
    (workspace / "sub").mkdir()
    config = Config(lsp_enabled=False, bash_sandbox=sandboxed)
    session = Session(workspace, session_id="api", config=config)
    assert bash(session, "cd sub && export MARK=real") == "no output"
    session.save_state()
    state_file = session.state_file()
    planted = bash(session, PLANTS[plant].format(p=state_file, outside=outside, zero=zero_device(tmp_path)))
    if sandboxed:  # the state directory is not even visible
        assert "No such file or directory" in planted or "Read-only file system" in planted, planted
        assert stat.S_ISREG(os.lstat(state_file).st_mode)
    else:
        assert not stat.S_ISREG(os.lstat(state_file).st_mode)
    again = Session(workspace, session_id="api", config=config)
    again.load_state()  # returns at once: a FIFO is not waited on, /dev/zero not read
    shown = bash(again, "pwd; echo ${MARK-unset}; echo ${LEAK-none}")
    no_leak(shown)
    expected_dir = workspace / "sub" if sandboxed else workspace  # not loaded: a fresh session
    assert shown.split() == [str(expected_dir), "real" if sandboxed else "unset", "none"], shown
    again.save_state()  # replaces whatever was planted
    assert stat.S_ISREG(os.lstat(state_file).st_mode)


@pytest.mark.parametrize("sandboxed", [False, True], ids=["plain", "sandbox"])
def test_cli_state_files_planted_by_a_job_neither_hang_nor_leak(
    bwrap: str, state_outside_tmp: Path, workspace: Path, tmp_path: Path, sandboxed: bool
) -> None:
    """A background job (it outlives the call, so the host's save after the call does not undo
    it) plants a FIFO, a link to /dev/zero and a link to a host-only file at each of the
    session's files; the next calls return, start where the session was and show nothing of the
    host-only file."""
    sandbox_config(workspace, sandboxed)
    outside = host_only_file(tmp_path)
    (workspace / "sub").mkdir()
    directory = state_outside_tmp / "sessions" / "s"
    first = cli(workspace, "bash", json.dumps({"command": "cd sub && export MARK=real"}))
    assert first.returncode == 0, first.stdout + first.stderr
    targets = {
        directory / "state.json": "fifo",
        directory / "host.pid": "dev_zero",
        directory / "host.secret": "outside",
        directory / "host.lock": "fifo",
    }
    assert all(path.exists() for path in targets)
    zero = zero_device(tmp_path)
    script = "; ".join(PLANTS[kind].format(p=path, outside=outside, zero=zero) for path, kind in targets.items())
    # It plants once the call that started it has returned (and the host saved the state).
    wait_for_go = f"while [ ! -e {workspace}/go ]; do sleep 0.05; done"
    job = cli(workspace, "bash", json.dumps({"command": f"{wait_for_go}; {script}; touch {workspace}/done",
                                             "run_in_background": True}))  # fmt: skip
    assert job.returncode == 0, job.stdout + job.stderr
    (workspace / "go").touch()
    wait_until(lambda: (workspace / "done").exists(), "the planting job to finish")
    for path in targets:
        assert stat.S_ISREG(os.lstat(path).st_mode) == sandboxed, path
    for _ in range(2):  # the first call meets the planted files; the second what the first left
        # Without the sandbox the host's secret is now a link, so the call runs in-process
        # (saying so on stderr); the host is left to its idle timeout.
        shown = cli(workspace, "bash", json.dumps({"command": "pwd; echo ${MARK-unset}; echo ${LEAK-none}"}))
        assert shown.returncode == 0, shown.stdout + shown.stderr
        no_leak(shown.stdout + shown.stderr)
        assert shown.stdout.split()[2:] == ["none"] and shown.stdout.split()[0] != LEAKED_DIR, shown.stdout
        assert sandboxed == (shown.stderr == ""), shown.stderr
    if sandboxed:  # nothing was planted: the state carried over untouched
        assert shown.stdout.split() == [str(workspace / "sub"), "real", "none"], shown.stdout
    assert cli(workspace, "--end").returncode == 0


def test_a_redefined_hook_or_trap_does_not_change_what_is_saved(workspace: Path) -> None:
    (workspace / "sub").mkdir()
    fake = "builtin printf 'toolsmith-shell-state\\0/etc\\n\\0MARK=forged\\0end\\0'"
    # The state pipe's descriptor, as the command can find it (the script's text names it).
    state_fd = "$(grep -o '>&[0-9]*' <<<\"$BASH_EXECUTION_STRING\" | head -1 | tr -d '>&')"
    attacks = {
        "redefined hook": f"cd sub && export MARK=real; __ts_save() {{ {fake} >&{state_fd}; }}",
        "replaced trap": "cd sub && export MARK=real; trap 'cd /; export MARK=trapped' EXIT",
        "trap that forges": f"cd sub && export MARK=real; N={state_fd}; trap \"{fake} >&$N\" EXIT",
        "child that forges": (
            "cd sub && export MARK=real; python3 -c \"import os\n"
            "for fd in range(3, 1024):\n"
            "    try: os.write(fd, b'toolsmith-shell-state\\0/etc\\n\\0MARK=forged\\0end\\0')\n"
            "    except OSError: pass\""
        ),
        "hook unset": "cd sub && export MARK=real; unset -f __ts_save",
    }
    for name, attack in attacks.items():
        session = Session(workspace, config=Config(lsp_enabled=False))
        bash(session, attack)
        shown = bash(session, "pwd; echo $MARK")
        assert shown.split() == [str(workspace / "sub"), "real"], (name, shown)


def test_an_exit_in_the_command_still_saves_and_keeps_its_status(workspace: Path) -> None:
    (workspace / "sub").mkdir()
    session = Session(workspace, config=Config(lsp_enabled=False))
    response = asyncio.run(session.run("bash", {"command": "cd sub; export MARK=kept; exit 7"}))
    assert response.metadata["exit_code"] == 7 and response.metadata["cwd"] == str(workspace / "sub")
    assert bash(session, "pwd; echo $MARK").split() == [str(workspace / "sub"), "kept"]


def test_what_a_command_skips_saving_keeps_the_previous_state(workspace: Path) -> None:
    """``exec`` and a removed trap before ``exit`` leave no record: the previous state stays."""
    (workspace / "a").mkdir()
    (workspace / "b").mkdir()
    session = Session(workspace, config=Config(lsp_enabled=False))
    bash(session, "cd a && export MARK=a")
    for command in ("cd ../b; export MARK=b; exec true", "cd ../b; export MARK=b; trap - EXIT; exit 0"):
        bash(session, command)
        assert bash(session, "pwd; echo $MARK").split() == [str(workspace / "a"), "a"], command


def test_an_environment_over_the_cap_is_not_kept_and_the_result_says_so(workspace: Path) -> None:
    (workspace / "sub").mkdir()
    session = Session(workspace, config=Config(lsp_enabled=False))
    bash(session, "export MARK=before")
    count = MAX_SHELL_STATE_BYTES // (100 * 1024) + 2  # 100 KiB each: under the per-variable limit
    big = f"cd sub; for i in $(seq {count}); do export BIG$i=$(head -c 102400 /dev/zero | tr '\\0' x); done; echo done"
    text = bash(session, big)
    assert "done" in text and re.search(r"environment is over \d+ KiB", text), text[:500]
    assert bash(session, "pwd; echo $MARK; echo ${BIG1-none}").split() == [str(workspace), "before", "none"]
