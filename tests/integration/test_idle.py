"""Idle sessions give their language servers back: stopped after ``lsp_idle_s`` without a call,
started again by the next call that needs one."""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path

from agent_toolsmith.config import Config
from agent_toolsmith.session import Session

from tests.integration.test_lsp import MARKER_SERVER
from tests.integration.test_mcp import WAIT_S, processes_with, until


def test_language_servers_stop_when_idle_and_start_again_on_demand(workspace: Path) -> None:
    token = f"idle-{uuid.uuid4().hex}"
    servers = {"marker": {"command": [sys.executable, str(MARKER_SERVER), token], "extensions": [".mark"]}}
    config = Config(lsp_servers=servers, lsp_idle_s=1)

    async def main() -> None:
        async with Session(workspace, config=config) as session:
            first = await session.run("write", {"file_path": "a.mark", "content": "fine\n"})
            assert not first.is_error, first.content
            assert processes_with(token), "the first change starts the language server"
            await until(lambda: not processes_with(token), "the idle session's language server stops")
            again = await session.run("write", {"file_path": "b.mark", "content": "fine\n"})
            assert not again.is_error, again.content
            assert processes_with(token), "the next change starts it again"
        await until(lambda: not processes_with(token), "closing the session stops it")

    asyncio.run(asyncio.wait_for(main(), 3 * WAIT_S))


def test_a_busy_session_keeps_its_language_servers(workspace: Path) -> None:
    token = f"busy-{uuid.uuid4().hex}"
    servers = {"marker": {"command": [sys.executable, str(MARKER_SERVER), token], "extensions": [".mark"]}}
    config = Config(lsp_servers=servers, lsp_idle_s=1)

    async def main() -> None:
        async with Session(workspace, config=config) as session:
            await session.run("write", {"file_path": "a.mark", "content": "fine\n"})
            assert processes_with(token)
            # A call running for longer than the idle time: the servers stay.
            running = await session.run("bash", {"command": "sleep 2.5"})
            assert not running.is_error
            assert processes_with(token), "a session with a call running is not idle"

    asyncio.run(asyncio.wait_for(main(), 3 * WAIT_S))
