"""Processes that detach every way they can die with the call, the job and the session that
started them: ``( env -i setsid sleep … & )`` (no tag in its environment, its own session, its
parent gone) and a ``clone(CLONE_PARENT)`` child that also leaves the session and clears its
environment (testdata/processes/clone_parent.py: a child of its creator's parent).

Each test runs twice: with a cgroup per tree (where the kernel offers one and we may create it;
skipped elsewhere) and with the limit mark alone (what a machine without cgroup delegation has).
An orphan whose call ended without finding it is killed by the next call's end and by
``Session.close()``; a process without marks of ours (the embedder's) is never touched.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_toolsmith.proc import TREE_ENV, become_subreaper, cgroup, spawn
from agent_toolsmith.proc.marks import MARK_BASE, MARK_SPAN, mark_setter
from agent_toolsmith.session import Session
from agent_toolsmith.shell import runner

from tests.conftest import make_session
from tests.helpers import processes_with, running
from tests.processes.test_supervisor import leftovers

#: Distinct from test_supervisor's MARK (both carry this pytest's pid, so no other run matches).
MARK = f"1001.{os.getpid()}"
HELPER = Path(__file__).parents[2] / "testdata" / "processes" / "clone_parent.py"
#: Prints the clone's pid, its parent's pid and its session, then the leader's pid.
DETACH = (
    f"( env -i setsid sleep {MARK} & ); pid=$({sys.executable} {HELPER} {MARK}); "
    "echo \"clone $(cut -d' ' -f4,6 /proc/$pid/stat) leader $$\""
)
#: The processes with MARK in their command line while a detaching job runs.
RUNNING_IN_JOB = 4
#: Hang guard for a job's output.
STATE_TIMEOUT_S = 60.0


@pytest.fixture(params=["cgroup", "marks"])
def containment(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "marks":
        monkeypatch.setattr(cgroup, "_base", False)
    elif not cgroup.available():
        pytest.skip("no cgroup v2 this process may create here: the marks alone are tested")
    yield request.param
    assert leftovers(MARK) == []


def test_commands_carry_the_limit_mark_and_run_in_their_cgroup(workspace: Path, containment: str) -> None:
    session = make_session(workspace)
    response = asyncio.run(session.run("bash", {"command": "ulimit -x; cat /proc/self/cgroup"}))
    lines = response.content.split()
    assert MARK_BASE <= int(lines[0]) < MARK_BASE + MARK_SPAN, response.content
    assert (f"/toolsmith-{os.getpid()}/" in response.content) == (containment == "cgroup"), response.content
    asyncio.run(session.close())


@pytest.mark.parametrize("way", ["BASH_ENV", "PATH"])
def test_what_the_environment_runs_before_a_command_is_contained(workspace: Path, containment: str, way: str) -> None:
    """A shell's start runs code the previous command chose — the file BASH_ENV names, a ``bash``
    put first on the PATH — before the command itself: what that code detaches dies with the call
    all the same (the tree is set up before it runs)."""
    startup = f"echo started-by-{way}; ( env -i setsid sleep {MARK} & )"
    if way == "BASH_ENV":
        (workspace / "startup.sh").write_text(startup + "\n")
        chosen = f"export BASH_ENV={workspace / 'startup.sh'}"
    else:
        (workspace / "bin").mkdir()
        fake = workspace / "bin" / "bash"
        fake.write_text(f"#!{shutil.which('bash')}\n{startup}\nexec {shutil.which('bash')} \"$@\"\n")
        fake.chmod(0o755)
        chosen = f"export PATH={workspace / 'bin'}:$PATH"
    session = make_session(workspace)
    assert not asyncio.run(session.run("bash", {"command": chosen})).is_error
    response = asyncio.run(session.run("bash", {"command": "echo command"}))
    assert response.content.splitlines()[:2] == [f"started-by-{way}", "command"], response.content
    assert "1 background process was stopped" in response.content, response.content
    assert leftovers(MARK) == []
    asyncio.run(session.close())


@pytest.mark.parametrize(
    "chosen",
    [{"BASH_ENV": "/tmp/x"}, {"LD_PRELOAD": "/tmp/x.so"}, {"BASH_FUNC_read%%": "() { :; }"}, {"SHELLOPTS": "xtrace"},
     {"PS4": "$(touch /tmp/x)"}, {"GCONV_PATH": "/tmp"}, {"PATH": "{bin}"}],
    ids=lambda chosen: next(iter(chosen)),
)  # fmt: skip
def test_a_shell_starts_behind_a_gate_only_where_nothing_runs_first(workspace: Path, chosen: dict[str, str]) -> None:
    """The gate (the tree set up from here while the shell waits) is for an environment that runs
    nothing before the shell's first command, and for our own bash; race-free to check here,
    where the start itself may or may not win the race against the set-up."""
    plain = dict(os.environ)
    ours = runner.gated_bash(plain)
    assert ours is not None and os.path.isabs(ours) and os.path.samefile(ours, shutil.which("bash") or "")
    (workspace / "bin").mkdir()
    (workspace / "bin" / "bash").write_text("#!/bin/sh\n")
    (workspace / "bin" / "bash").chmod(0o755)
    first_on_path = f"{workspace / 'bin'}:{plain['PATH']}"
    env = {**plain, **{name: value.replace("{bin}", first_on_path) for name, value in chosen.items()}}
    assert runner.gated_bash(env) is None


def test_a_bash_anyone_but_root_can_change_gets_no_gate(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What runs before the gate is a file only root may change, started by its real path: a
    bash in a directory another user may write (a temporary directory), or owned by another
    user, is started as before (its tree set up in the child); a symlink to ours on the PATH,
    which a command could point elsewhere, is not what is started."""
    real = os.path.realpath(shutil.which("bash") or "")
    chain = [real, *(str(parent) for parent in Path(real).parents)]
    root_only = all(os.lstat(p).st_uid == 0 and not os.lstat(p).st_mode & 0o022 for p in chain)
    assert runner._only_root_changes(real) == root_only, chain
    (workspace / "bin").mkdir()
    copy = workspace / "bin" / "bash"
    shutil.copyfile(real, copy)
    copy.chmod(0o755)
    assert not runner._only_root_changes(str(copy))
    plain = dict(os.environ)
    assert runner.gated_bash({**plain, "PATH": f"{workspace / 'bin'}:{plain['PATH']}"}) is None
    copy.unlink()
    copy.symlink_to(real)
    started = runner.gated_bash({**plain, "PATH": f"{workspace / 'bin'}:{plain['PATH']}"})
    assert started == (real if root_only else None)
    monkeypatch.chdir(workspace)  # where the relative PATH entry finds the link: the shell's cwd may not
    assert shutil.which("bash", path="bin") == "bin/bash"
    assert runner.gated_bash({**plain, "PATH": "bin"}) is None
    copy.unlink()
    other = os.path.realpath(shutil.which("true") or "")  # a program that is not bash, wherever it links
    assert os.path.basename(other) != "bash"
    copy.symlink_to(other)
    assert runner.gated_bash({**plain, "PATH": f"{workspace / 'bin'}:{plain['PATH']}"}) is None


def test_clone_parent_makes_a_sibling_out_of_the_session(workspace: Path, containment: str) -> None:
    """The helper does what it says: the clone's parent is the leader (the helper's parent),
    and it leads its own session."""
    session = make_session(workspace)
    response = asyncio.run(session.run("bash", {"command": DETACH}))
    words = response.content.split()
    at = words.index("clone")
    ppid, sid, leader = words[at + 1], words[at + 2], words[at + 4]
    assert ppid == leader and sid != leader, response.content
    assert "2 background processes were stopped" in response.content
    assert leftovers(MARK) == []
    asyncio.run(session.close())


@pytest.mark.parametrize("exec_helper", [False, True], ids=["child-of-bash", "child-of-us"])
def test_detached_children_die_with_the_call(workspace: Path, containment: str, exec_helper: bool) -> None:
    """``exec``: the helper replaces the leader, so its clone is a direct child of this process."""
    command = f"( env -i setsid sleep {MARK} & ); " + (
        f"exec {sys.executable} {HELPER} {MARK}" if exec_helper else f"{sys.executable} {HELPER} {MARK}"
    )
    session = make_session(workspace)
    response = asyncio.run(session.run("bash", {"command": command}))
    assert not response.is_error, response.content
    assert leftovers(MARK) == []
    asyncio.run(session.close())


async def _start_detaching_job(session: Session) -> str:
    command = f"{DETACH}; sleep {MARK} & echo ready; wait"  # every fork of bash has MARK in its argv
    response = await session.run("bash", {"command": command, "run_in_background": True})
    assert not response.is_error, response.content
    job_id = str(response.metadata["job_id"])
    seen = response.content
    deadline = time.monotonic() + STATE_TIMEOUT_S
    while "ready" not in seen and time.monotonic() < deadline:
        seen += (await session.run("job_output", {"job_id": job_id, "wait_ms": 2000})).content
    assert "ready" in seen, seen
    # The job's shell and its sleep, the env -i sleep, the clone.
    assert len(processes_with(MARK.encode())) == RUNNING_IN_JOB, seen
    return job_id


def test_job_kill_ends_detached_children(workspace: Path, containment: str) -> None:
    session = make_session(workspace)

    async def main() -> None:
        job_id = await _start_detaching_job(session)
        response = await session.run("job_kill", {"job_id": job_id})
        assert not response.is_error, response.content
        assert leftovers(MARK) == []
        await session.close()

    asyncio.run(main())


def test_session_close_ends_a_jobs_detached_children(workspace: Path, containment: str) -> None:
    session = make_session(workspace)

    async def main() -> None:
        await _start_detaching_job(session)
        await session.close()

    asyncio.run(main())
    assert leftovers(MARK) == []


def test_a_call_ending_spares_a_running_jobs_detached_children(workspace: Path, containment: str) -> None:
    """Detached processes are attributed to the tree that started them, not to whichever call
    ends next: a live job's are its own."""
    session = make_session(workspace)

    async def main() -> None:
        await _start_detaching_job(session)
        response = await session.run("bash", {"command": "echo done"})
        assert "stopped" not in response.content
        assert len(processes_with(MARK.encode())) == RUNNING_IN_JOB
        await session.close()

    asyncio.run(main())
    assert leftovers(MARK) == []


@pytest.mark.parametrize("ender", ["next call", "session close"])
def test_an_orphan_left_by_an_ended_call_is_swept(workspace: Path, ender: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tree released without being stopped (as if its kill had missed a member) leaves an
    adopted orphan carrying its mark: the next call's end, or the session's close, kills it."""
    monkeypatch.setattr(cgroup, "_base", False)  # a cgroup would take its members with it
    session = make_session(workspace)

    async def main() -> None:
        await session.run("bash", {"command": "true"})  # the session has run a process
        child = await spawn(["bash", "-c", f"( env -i setsid sleep {MARK} & )"])
        assert await child.wait(STATE_TIMEOUT_S) == 0
        child.close()
        assert len(running(MARK.encode(), "sleep")) == 1  # setsid has become sleep
        child.tree.release()  # forgotten, not stopped
        assert len(processes_with(MARK.encode())) == 1
        if ender == "next call":
            await session.run("bash", {"command": "true"})
            assert leftovers(MARK) == []
        await session.close()

    asyncio.run(main())
    assert leftovers(MARK) == []


def test_an_orphan_without_our_marks_is_never_swept(workspace: Path) -> None:
    """The embedder's own processes (started outside the tools, no mark of ours) are left alone,
    even when they are orphans adopted by our subreaper."""
    session = make_session(workspace)
    assert become_subreaper()  # as the first command would make us
    subprocess.run(["bash", "-c", f"( env -i setsid sleep {MARK} & )"], check=True, timeout=STATE_TIMEOUT_S)
    try:
        orphans = processes_with(MARK.encode(), parent=os.getpid())
        assert len(orphans) == 1
        asyncio.run(session.run("bash", {"command": "true"}))
        asyncio.run(session.close())
        assert processes_with(MARK.encode(), parent=os.getpid()) == orphans
    finally:
        for pid in processes_with(MARK.encode()):
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)


#: A session inside a command of another Toolsmith: it carries that command's tag and mark, and so
#: does what it starts outside the tools (a language server): those are never swept as orphans.
NESTED = textwrap.dedent(
    """
    import asyncio, subprocess, sys
    from pathlib import Path
    from agent_toolsmith.config import Config
    from agent_toolsmith.proc import process_table
    from agent_toolsmith.session import Session

    async def main() -> None:
        session = Session(Path(sys.argv[1]), config=Config(lsp_enabled=False))
        own = subprocess.Popen(["sleep", sys.argv[2]])  # the embedder's, with the outer marks
        await session.run("bash", {"command": "true"})
        await session.close()
        print("alive" if own.pid in process_table() and own.poll() is None else "swept", flush=True)
        own.kill()
        own.wait()

    asyncio.run(main())
    """
)


def test_processes_carrying_the_marks_we_inherited_are_never_swept(workspace: Path) -> None:
    outer = subprocess.run(
        [sys.executable, "-c", NESTED, str(workspace), MARK],
        env={**os.environ, TREE_ENV: "outer-tree"}, preexec_fn=mark_setter(MARK_BASE + 7),
        capture_output=True, text=True, timeout=STATE_TIMEOUT_S,
    )  # fmt: skip
    assert outer.stdout.strip() == "alive", outer.stderr


#: A Toolsmith session inside a command: it starts a job, then dies by SIGKILL (no cleanup of
#: its own), leaving the job's process and, with cgroups, its own cgroups inside ours.
KILLED_INSIDE = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from pathlib import Path
    from agent_toolsmith.config import Config
    from agent_toolsmith.session import Session

    async def main() -> None:
        session = Session(Path(sys.argv[1]), config=Config(lsp_enabled=False))
        await session.run("bash", {"command": f"sleep {sys.argv[2]}", "run_in_background": True})
        print("started", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

    asyncio.run(main())
    """
)


def test_what_a_killed_inner_session_left_dies_with_the_call(workspace: Path, containment: str) -> None:
    session = make_session(workspace)
    command = f"{sys.executable} -c '{KILLED_INSIDE}' {workspace} {MARK}; echo inner done"
    response = asyncio.run(session.run("bash", {"command": command}))
    assert "started" in response.content and "inner done" in response.content, response.content
    assert leftovers(MARK) == []
    asyncio.run(session.close())
    if containment == "cgroup":  # the inner session's cgroups went with the call's
        base = Path(cgroup.own_cgroup_dir() or "/nonexistent", f"toolsmith-{os.getpid()}")
        assert [path for path in base.iterdir() if path.is_dir()] == []
    cgroup.remove_stale()  # marks alone: the inner session made its own cgroups beside ours
