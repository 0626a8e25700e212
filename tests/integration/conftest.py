"""Fixtures of the MCP integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.test_mcp import HttpServer


@pytest.fixture
def http_server(workspace: Path, tmp_path: Path) -> Iterator[HttpServer]:
    """``python -m cmd.mcp --http`` on 127.0.0.1, stopped after the test."""
    server = HttpServer(workspace, tmp_path)
    try:
        yield server
    finally:
        if server.process.poll() is None:
            server.stop()
