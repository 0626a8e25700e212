"""`toolsmith-mcp --tools MODULE:ATTR`: an embedder's Python functions served to a real MCP client."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import mcp_types as types
import pytest

from tests.integration.test_mcp import (
    ROOT,
    WAIT_S,
    HttpServer,
    _env,
    run,
    stdio_client,
    text,
    until,
)

SPEC = "testdata.function_tools.sample_tools:TOOLS"


@pytest.fixture
def http_with_tools(workspace: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    # Two worker processes: each loads the tools from the same command line.
    server = HttpServer(workspace, tmp_path, "--tools", SPEC, "--workers", "2")
    try:
        yield server
    finally:
        if server.process.poll() is None:
            server.stop()


@pytest.mark.parametrize("kind", ["stdio", "http"])
def test_function_tools_are_listed_called_and_validated(
    kind: str, workspace: Path, tmp_path: Path, http_with_tools: HttpServer
) -> None:
    async def main() -> tuple[dict[str, types.Tool], types.CallToolResult, types.CallToolResult]:
        client = http_with_tools.client() if kind == "http" else stdio_client(workspace, tmp_path, "--tools", SPEC)
        async with client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            return listed, await client.call_tool("add", {"a": 40}), await client.call_tool("add", {"a": "x"})

    listed, added, refused = run(main())
    assert {"add", "word_count", "steps", "wait_for_cancel", "view", "bash"} <= set(listed)
    assert listed["add"].input_schema["properties"]["a"] == {"type": "integer"}
    assert listed["add"].description == "Adds two integers."
    annotations = listed["word_count"].annotations
    assert annotations is not None and annotations.read_only_hint and not annotations.destructive_hint
    assert listed["add"].annotations is not None and listed["add"].annotations.destructive_hint
    assert not added.is_error and text(added) == "42"
    assert refused.is_error and "Invalid parameters for add: 'a' must be an integer" in text(refused)
    assert (refused.meta or {})["toolsmith/metadata"]["error"] == "invalid_params"


def test_a_function_tool_reports_progress_and_is_cancelled_with_its_call(workspace: Path, tmp_path: Path) -> None:
    marker = tmp_path / "cancelled.txt"
    received: list[str | None] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        received.append(message)

    async def main() -> types.CallToolResult:
        async with stdio_client(workspace, tmp_path, "--tools", SPEC) as client:
            stepped = await client.call_tool("steps", {"count": 3}, progress_callback=on_progress)
            assert text(stepped) == "3 steps"
            call = asyncio.ensure_future(client.call_tool("wait_for_cancel", {"marker": str(marker)}))
            await until(Path(f"{marker}.started").exists, "the function runs")
            call.cancel()
            await asyncio.gather(call, return_exceptions=True)
            await until(marker.exists, "the function was cancelled")
            return await client.call_tool("word_count", {"text": "still serving here"})

    assert text(run(main())) == "3"
    assert received == ["step 1 of 3", "step 2 of 3", "step 3 of 3"]
    assert marker.read_text() == "cancelled\n"


def test_a_read_only_server_offers_only_read_only_function_tools(workspace: Path, tmp_path: Path) -> None:
    async def main() -> list[str]:
        async with stdio_client(workspace, tmp_path, "--tools", SPEC, "--read-only") as client:
            return [t.name for t in (await client.list_tools()).tools]

    names = run(main())
    assert "word_count" in names and "add" not in names and "wait_for_cancel" not in names


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("testdata.function_tools.missing_module:TOOLS", "cannot import testdata.function_tools.missing_module"),
        ("testdata.function_tools.sample_tools:NOPE", "has no attribute 'NOPE'"),
        ("testdata.function_tools.sample_tools:NOT_A_TOOL", "is not a function, a Tool, or a list of them"),
        ("no_colon_here", "expected MODULE:ATTR"),
    ],
)
def test_a_tools_spec_that_names_no_tool_is_refused_before_serving(spec: str, said: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cmd.mcp", "--tools", spec], cwd=ROOT, env=_env(tmp_path), stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=WAIT_S,
    )  # fmt: skip
    assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr

