"""Shared fixtures. Hypothesis runs derandomized in CI (profile "ci", the Makefile's default)."""

from __future__ import annotations

import asyncio
import os
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

from toolsmith.config import Config  # noqa: E402
from toolsmith.llm.tools.tools import ToolResponse  # noqa: E402
from toolsmith.session import Session  # noqa: E402


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
    from toolsmith.session_host import end_host, running_hosts

    for paths in running_hosts(tmp_path_factory.getbasetemp()):
        end_host(paths)
