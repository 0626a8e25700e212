"""An embedder's own source that offers navigation: the lsp tool asks it through the
NavigationSource protocol, whatever its class (here one wrapping toolsmith's LSP layer, as an
embedder might to log or filter what is asked), against the marker server."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agent_toolsmith.config import Config
from agent_toolsmith.lsp.api import NavigationSource
from agent_toolsmith.lsp.client import LspClient
from agent_toolsmith.lsp.diagnostics import Outcome
from agent_toolsmith.lsp.manager import LspManager
from agent_toolsmith.lsp.servers import ServerConfig
from agent_toolsmith.session import Session
from agent_toolsmith.state import StateDir

from tests.integration.test_lsp_robust import marker


class Wrapping:
    """Diagnostics and navigation, each call passed on to an LspManager and noted."""

    def __init__(self, inner: LspManager) -> None:
        self.inner = inner
        self.asked: list[str] = []

    async def after_view(self, path: Path) -> str:
        return await self.inner.after_view(path)

    async def after_change(self, paths: list[Path]) -> str:
        return await self.inner.after_change(paths)

    async def close(self) -> None:
        await self.inner.close()

    def to_json(self) -> dict[str, Any]:
        return self.inner.to_json()

    def load_json(self, data: Any) -> None:
        self.inner.load_json(data)

    def servers_for(self, path: Path) -> list[ServerConfig]:
        return self.inner.servers_for(path)

    def missing_for(self, path: Path) -> list[str]:
        return self.inner.missing_for(path)

    async def diagnostics(self, path: Path) -> Outcome:
        self.asked.append("diagnostics")
        return await self.inner.diagnostics(path)

    async def navigate(self, path: Path, operation: str) -> tuple[LspClient, list[str]]:
        self.asked.append(operation)
        return await self.inner.navigate(path, operation)

    async def request(self, server: LspClient, name: str, params: Any) -> Any:
        return await self.inner.request(server, name, params)


def test_an_embedders_navigation_source_answers_the_lsp_tool(workspace: Path) -> None:
    config = Config(lsp_servers={"marker": marker()})
    source = Wrapping(LspManager(workspace, config, StateDir(config.state_dir)))
    assert isinstance(source, NavigationSource) and not isinstance(source, LspManager)
    (workspace / "n.mark").write_text("def greet():\n    pass\n\ngreet()\n")
    loop = asyncio.new_event_loop()
    session = Session(workspace, config=config, lsp=source)

    def run(params: dict[str, Any]) -> Any:
        return loop.run_until_complete(asyncio.wait_for(session.run("lsp", params), 60))

    try:
        found = run({"file_path": "n.mark", "operation": "definition", "line": 4, "character": 2})
        assert found.content == "n.mark:1:5: def greet():"
        checked = run({"file_path": "n.mark"})
        assert checked.content == "No diagnostics for n.mark.", checked.content
        assert source.asked == ["definition", "diagnostics"]
    finally:
        loop.run_until_complete(asyncio.wait_for(session.close(), 30))
        loop.close()
    assert source.inner.clients == {}  # the session's close reached the servers through the wrapper
