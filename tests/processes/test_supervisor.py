"""The process supervisor with real processes: nothing a cancelled or finished call started
survives it, however it forked (setsid, nohup, subshells), adopted orphans are reaped, and what
ignores SIGTERM is killed when the grace is over. (Processes that also clear their environment or
use CLONE_PARENT: test_detached.py.)"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest
from agent_toolsmith.cancel import CancelToken
from agent_toolsmith.proc import KILL_GRACE_S, TREE_ENV, become_subreaper, process_table, spawn

from tests.conftest import make_session

#: A sleep length no other process on the machine uses (this pytest's pid in the fraction): how
#: the test finds its own processes, also those that escaped to init.
MARK = f"1000.{os.getpid()}"
FORKING = (
    f"setsid sleep {MARK} & nohup sleep {MARK} >/dev/null 2>&1 & (sleep {MARK} &); "
    f"(setsid sh -c 'sleep {MARK}' &); echo up > {{marker}}; wait"
)
#: Hang guard for a job to reach a state.
STATE_TIMEOUT_S = 60.0


def leftovers(mark: str = MARK) -> list[str]:
    """Running processes with ``mark`` in their command line, and zombies we failed to reap
    (each as its /proc stat line, so a failure shows what was left)."""
    found = []
    me = os.getpid()
    for stat in process_table().values():
        if stat.zombie:
            if stat.ppid == me:
                found.append(_describe(stat.pid))
            continue
        try:
            with open(f"/proc/{stat.pid}/cmdline", "rb") as handle:
                if mark.encode() in handle.read():
                    found.append(_describe(stat.pid))
        except OSError:
            continue
    return found


def _describe(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().strip()
    except OSError:
        return f"{pid} (gone)"


async def wait_for_file(path: Path, timeout: float = 30.0) -> None:
    async with asyncio.timeout(timeout):
        while not (path.exists() and path.read_text().strip()):
            await asyncio.sleep(0.01)


def test_the_supervisor_is_a_subreaper() -> None:
    assert become_subreaper() is True  # Linux with /proc: the test machine
    with open("/proc/self/status") as handle:
        assert "PPid" in handle.read()


def test_fifty_cancels_leave_no_process(workspace: Path) -> None:
    session = make_session(workspace)

    async def main() -> None:
        for attempt in range(50):
            marker = workspace / f"up-{attempt}"
            token = CancelToken()
            call = asyncio.ensure_future(
                session.run("bash", {"command": FORKING.format(marker=marker), "timeout": 600_000}, cancel=token)
            )
            await wait_for_file(marker)
            if attempt % 2 == 0:
                token.cancel()
                response = await asyncio.wait_for(call, 30)
                assert response.is_error and response.metadata["aborted"]
            else:
                call.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await asyncio.wait_for(call, 30)
            assert leftovers() == [], f"attempt {attempt} ({'token' if attempt % 2 == 0 else 'task'})"
        await session.close()

    asyncio.run(main())
    assert leftovers() == []


def test_timeout_stops_setsid_and_nohup_descendants(workspace: Path) -> None:
    session = make_session(workspace)
    marker = workspace / "up"
    response = asyncio.run(session.run("bash", {"command": FORKING.format(marker=marker), "timeout": 1500}))
    assert response.metadata["timed_out"]
    assert leftovers() == []


def test_session_close_stops_a_running_call(workspace: Path) -> None:
    session = make_session(workspace)
    marker = workspace / "up"

    async def main() -> None:
        call = asyncio.ensure_future(session.run("bash", {"command": FORKING.format(marker=marker)}))
        await wait_for_file(marker)
        await session.close()
        response = await asyncio.wait_for(call, 30)
        assert response.metadata["exit_code"] != 0 or response.is_error

    asyncio.run(main())
    assert leftovers() == []


def test_every_spawned_process_carries_its_tree_tag(workspace: Path) -> None:
    async def main() -> str:
        child = await spawn(["sh", "-c", f"echo ${TREE_ENV}"], merge_stderr=True)
        out = await asyncio.wait_for(child.stdout.read(), 30)
        await child.stop(0)
        assert out.decode().strip() == child.tree.tag
        return child.tree.tag

    assert len(asyncio.run(main())) == 32


def test_a_term_ignoring_command_is_killed_on_timeout(workspace: Path) -> None:
    """SIGTERM first; what ignores it gets SIGKILL after KILL_GRACE_S."""
    session = make_session(workspace)
    command = f"trap '' TERM; echo ready; sleep {MARK}; echo never"
    response = asyncio.run(session.run("bash", {"command": command, "timeout": 1000}))
    assert response.metadata["timed_out"], response.content
    assert "never" not in response.content
    # It outlived the SIGTERM: it went only when the grace was over.
    assert response.metadata["duration_ms"] >= (1 + KILL_GRACE_S) * 1000
    assert leftovers(MARK) == []
    asyncio.run(session.close())


def test_a_term_ignoring_job_is_killed_on_its_timeout(workspace: Path) -> None:
    session = make_session(workspace)

    async def main() -> None:
        command = f"trap '' TERM; sleep {MARK}"
        response = await session.run("bash", {"command": command, "run_in_background": True, "timeout": 500})
        job_id = str(response.metadata["job_id"])
        deadline = time.monotonic() + STATE_TIMEOUT_S
        status = ""
        while "timed out" not in status and time.monotonic() < deadline:
            status = (await session.run("job_output", {"job_id": job_id, "wait_ms": 2000})).content
        assert "timed out" in status, status
        assert leftovers(MARK) == []
        await session.close()

    asyncio.run(main())
