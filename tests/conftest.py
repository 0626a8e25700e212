"""Shared fixtures. Hypothesis runs derandomized in CI (profile "ci", the Makefile's default).

Each run gets its own base temp dir (parallel runs on one machine never share
/tmp/pytest-of-USER), and fails if any process a test started is still alive at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile(
    "dev",
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

#: Every process a test starts inherits this variable (with this run's value), so one that
#: outlives the run is found in /proc even after it was re-parented (setsid, double fork).
RUN_MARKER_ENV = "TOOLSMITH_TEST_RUN"
#: How long processes a test stopped get to finish exiting before they count as leaked.
LEAK_GRACE_S = 10.0
LEAK_POLL_S = 0.1


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if config.option.basetemp is None:
        config.option.basetemp = tempfile.mkdtemp(prefix="toolsmith-tests-")
        config.stash[_OWN_BASETEMP] = True
    os.environ[RUN_MARKER_ENV] = uuid.uuid4().hex


_OWN_BASETEMP = pytest.StashKey[bool]()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    leaked = _leaked_processes(os.environ.get(RUN_MARKER_ENV, ""))
    if leaked:
        lines = "\n".join(f"  pid {pid}: {cmdline}" for pid, cmdline in leaked)
        print(f"\nProcesses started by the tests are still running after the run (now killed):\n{lines}")
        for pid, _ in leaked:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    basetemp = session.config.option.basetemp
    if session.config.stash.get(_OWN_BASETEMP, False) and session.exitstatus == 0:
        shutil.rmtree(basetemp, ignore_errors=True)
    elif session.config.stash.get(_OWN_BASETEMP, False):
        print(f"\nThe tests' temporary files are kept in {basetemp}")


def _leaked_processes(marker: str) -> list[tuple[int, str]]:
    """Live processes carrying this run's marker, after a grace period for ones still exiting."""
    if not marker:
        return []
    needle = f"{RUN_MARKER_ENV}={marker}".encode()
    deadline = time.monotonic() + LEAK_GRACE_S
    while True:
        found = [(pid, cmd) for pid, cmd in _marked_processes(needle) if pid != os.getpid()]
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(LEAK_POLL_S)


def _marked_processes(needle: bytes) -> Iterator[tuple[int, str]]:
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()[0] == b"Z":
                continue
            if needle not in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                continue
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError):
            continue
        yield int(entry), cmdline.strip()

from agent_toolsmith.config import Config  # noqa: E402
from agent_toolsmith.llm.tools.contract import ToolResponse  # noqa: E402
from agent_toolsmith.session import Session  # noqa: E402
from agent_toolsmith.shell import sandbox  # noqa: E402


@pytest.fixture(autouse=True)
def _isolated_state(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never touch the real ~/.local/state, nor read the user's config or custom tools."""
    monkeypatch.setenv("TOOLSMITH_STATE_DIR", str(tmp_path_factory.mktemp("state")))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return Path(os.path.realpath(root))


Runner = Callable[..., ToolResponse]


def make_session(workspace: Path, **kwargs: Any) -> Session:
    config = kwargs.pop("config", None) or Config(lsp_enabled=False)
    return Session(workspace, config=config, **kwargs)


@pytest.fixture
def session(workspace: Path) -> Iterator[Session]:
    yield make_session(workspace)


@pytest.fixture
def run(session: Session) -> Runner:
    """Run a tool synchronously in the test's session."""

    def _run(tool: str, params: Any) -> ToolResponse:
        return asyncio.run(session.run(tool, params))

    return _run


@pytest.fixture(autouse=True)
def _no_session_host_left(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """CLI ``--session`` calls start host processes that outlive them: end every one a test
    started (found by its state directory below this run's temporary root)."""
    yield
    from agent_toolsmith.session_host import end_host, running_hosts

    for paths in running_hosts(tmp_path_factory.getbasetemp()):
        end_host(paths)
    _reap_adopted_zombies()


def _reap_adopted_zombies() -> None:
    """The test process is a child subreaper (the process supervisor makes it one), so a
    session host that a CLI subprocess started and that has since exited becomes our zombie:
    collect it, by pid (only dead children, so nothing a test still waits on)."""
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] == b"Z" and int(fields[1]) == me:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(int(entry), os.WNOHANG)


@pytest.fixture
def state_outside_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A state directory outside /tmp, where ``TOOLSMITH_STATE_DIR`` now points. The bash sandbox
    gives commands a private /tmp, which would hide a state directory under it (as the tests'
    usual one is) by accident: this one shows what the sandbox hides on purpose. Its session
    hosts are ended and it is removed afterwards."""
    from agent_toolsmith.session_host import end_host, running_hosts

    base = Path("/var/tmp") if os.access("/var/tmp", os.W_OK) else Path.home()
    path = Path(os.path.realpath(tempfile.mkdtemp(prefix="toolsmith-state-", dir=base)))
    monkeypatch.setenv("TOOLSMITH_STATE_DIR", str(path))
    yield path
    for paths in running_hosts(path):
        end_host(paths)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def bwrap() -> str:
    """bubblewrap, able to sandbox here: missing fails (`make test` installs it); a machine
    without user namespaces skips, saying so."""
    found = sandbox.find_bwrap()
    if found is None:
        pytest.fail("bubblewrap is not installed: `make test` installs it (Debian package bubblewrap)")
    problem = sandbox.probe(found)
    if problem is not None:
        pytest.skip(f"user namespaces are not available on this machine: {problem}")
    return found
