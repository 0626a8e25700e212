"""Fixtures of the reliability tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.reliability.test_mcp_transport import Server


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    """MCP HTTP server processes a test starts (append them); each is stopped after the test."""
    started: list[Server] = []
    yield started
    for server in started:
        server.stop()
