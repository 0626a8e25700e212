"""Fixtures shared by the reliability tests."""

from __future__ import annotations

import pytest
from agent_toolsmith.shell import sandbox


@pytest.fixture(scope="module")
def bwrap() -> str:
    found = sandbox.find_bwrap()
    if found is None:
        pytest.fail("bubblewrap is not installed: `make test` installs it (Debian package bubblewrap)")
    problem = sandbox.probe(found)
    if problem is not None:
        pytest.skip(f"user namespaces are not available on this machine: {problem}")
    return found
