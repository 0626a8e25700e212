"""The lsp tool's seam: a session's diagnostics source that is the embedder's own.

``Session(lsp=...)`` takes any DiagnosticsSource. The lsp tool asks more of it (navigation,
rename, on-demand diagnostics) and checks for that through the NavigationSource protocol, not a
class: a source without it gets an honest answer, never "Language servers are disabled".
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agent_toolsmith.config import Config
from agent_toolsmith.lsp.api import NavigationSource
from agent_toolsmith.session import Session


class OwnDiagnostics:
    """An embedder's diagnostics source: it reports after views and edits, and offers nothing else."""

    def __init__(self) -> None:
        self.changed: list[Path] = []

    async def after_view(self, path: Path) -> str:
        return ""

    async def after_change(self, paths: list[Path]) -> str:
        self.changed += paths
        return "Error: a.py:1:1 [own] reported by the embedder's checker"

    async def close(self) -> None:
        return None

    def to_json(self) -> dict[str, Any]:
        return {}

    def load_json(self, data: Any) -> None:
        return None


def test_a_diagnostics_source_without_navigation_is_named_as_such_not_called_disabled(workspace: Path) -> None:
    (workspace / "a.py").write_text("x = 1\n")
    source = OwnDiagnostics()
    assert not isinstance(source, NavigationSource)

    async def calls() -> tuple[Any, Any, Any]:
        async with Session(workspace, config=Config(), lsp=source) as session:
            asked = await session.run(
                "lsp", {"file_path": "a.py", "operation": "definition", "line": 1, "character": 1}
            )
            diagnostics = await session.run("lsp", {"file_path": "a.py"})
            await session.run("view", {"file_path": "a.py"})
            edited = await session.run("edit", {"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"})
            return asked, diagnostics, edited

    asked, diagnostics, edited = asyncio.run(calls())
    for refused in (asked, diagnostics):
        assert refused.is_error
        assert refused.content == (
            "This session's diagnostics source does not offer navigation: the lsp tool cannot ask it about a.py "
            "(edits and views still report its diagnostics)."
        )
    # What the message promises: the embedder's source still reports after an edit.
    assert not edited.is_error
    assert "reported by the embedder's checker" in edited.content
    assert source.changed == [workspace / "a.py"]


def test_a_session_without_language_servers_says_they_are_disabled(workspace: Path) -> None:
    (workspace / "a.py").write_text("x = 1\n")

    async def call() -> Any:
        async with Session(workspace, config=Config(lsp_enabled=False)) as session:
            return await session.run("lsp", {"file_path": "a.py", "operation": "hover", "line": 1, "character": 1})

    refused = asyncio.run(call())
    assert refused.is_error and refused.content == "Language servers are disabled for this session."
