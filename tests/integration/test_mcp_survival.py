"""One call's failure never takes the MCP server down: the file that crashed it (500 nested
classes) over stdio and HTTP with the SDK's real client, then another call on the same server;
and a failure in the server's own steps (not the tool's) answered as that call's error."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.mcp_server.server import ToolsmithServer
from mcp import Client

from tests.integration.test_mcp import WAIT_S, HttpServer, connected, run, text
from tests.syntax.test_deep_input import nested_classes


@pytest.mark.parametrize("kind", ["stdio", "http"])
def test_the_500_nested_classes_do_not_end_the_server(
    kind: str, workspace: Path, tmp_path: Path, http_server: HttpServer
) -> None:
    (workspace / "n.py").write_text(nested_classes(500))

    async def main() -> tuple[types.CallToolResult, types.CallToolResult, types.CallToolResult, types.CallToolResult]:
        async with connected(kind, workspace, tmp_path, http_server) as client:
            one = await client.call_tool("outline", {"path": "n.py"})
            directory = await client.call_tool("outline", {"path": "."})
            by_name = await client.call_tool("symbol_edit", {"file_path": "n.py", "symbol": "C499", "new_string": "x"})
            after = await client.call_tool("bash", {"command": "echo still serving"})
            return one, directory, by_name, after

    one, directory, by_name, after = run(main())
    assert not one.is_error and text(one).startswith("n.py (python, 32 symbols)")
    assert "n.py: class C0 (1)" in text(directory)
    assert by_name.is_error  # not read yet, or not addressable: an answer either way
    assert text(after) == "still serving"
    assert kind == "stdio" or http_server.process.poll() is None


class SessionsFail(ToolsmithServer):
    """A server whose first session cannot be made (as when the disk is full): a fault in the
    server's own steps, outside the tool runner."""

    failures = 1

    def _new_session(self, roots: list[Path]) -> Any:
        if self.failures:
            self.failures -= 1
            raise OSError(28, "No space left on device")
        return super()._new_session(roots)


def test_a_failure_outside_the_tool_is_that_calls_error_and_the_next_call_works(workspace: Path) -> None:
    server = SessionsFail(workspace, Config(lsp_enabled=False))

    async def main() -> tuple[types.CallToolResult, types.CallToolResult]:
        try:
            async with Client(server.server, mode="legacy", read_timeout_seconds=WAIT_S) as client:
                failed = await client.call_tool("bash", {"command": "echo one"})
                served = await client.call_tool("bash", {"command": "echo two"})
                return failed, served
        finally:
            await server.close()

    failed, served = asyncio.run(asyncio.wait_for(main(), 3 * WAIT_S))
    assert failed.is_error and "Internal error in the MCP server answering bash: OSError" in text(failed)
    assert "serves on" in text(failed)
    assert not served.is_error and text(served) == "two"
