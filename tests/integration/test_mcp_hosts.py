"""What MCP host authors rely on, through the official SDK client: text-first results (no
metadata-only structuredContent), per-session idle reaping, and a bounded number of sessions."""

from __future__ import annotations

import base64
from pathlib import Path

import mcp_types as types

from tests.integration.test_mcp import run, stdio_client, text

META = "toolsmith/metadata"


def test_results_are_text_first_with_the_metadata_in_meta(workspace: Path, tmp_path: Path) -> None:
    (workspace / "app.py").write_text("print('hi')\n")
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 20
    (workspace / "i.png").write_bytes(png)

    async def main() -> tuple[types.CallToolResult, types.CallToolResult, types.CallToolResult]:
        async with stdio_client(workspace, tmp_path) as client:
            viewed = await client.call_tool("view", {"file_path": "app.py"})
            image = await client.call_tool("view", {"file_path": "i.png"})
            ran = await client.call_tool("bash", {"command": "echo out; exit 3"})
            return viewed, image, ran

    viewed, image, ran = run(main())
    # What a host that prefers structuredContent shows is the result itself: there is none.
    assert viewed.structured_content is None and ran.structured_content is None
    assert "print('hi')" in text(viewed)
    assert (viewed.meta or {})[META]["lines_shown"] == 1
    assert text(ran).startswith("out") and (ran.meta or {})[META]["exit_code"] == 3
    kinds = [block.type for block in image.content]
    assert kinds[0] == "text" and kinds[1:] == ["image"], kinds
    picture = image.content[1]
    assert isinstance(picture, types.ImageContent) and picture.mime_type == "image/png"
    assert base64.b64decode(picture.data) == png
