"""attach: a file handed to the user, through the API, the providers' formats and a real MCP client."""

from __future__ import annotations

import asyncio
import base64
import os
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from agent_toolsmith import Decision, PermissionRequest, ToolPolicy, read_only_policy
from agent_toolsmith.llm.providers import PROVIDERS, ToolCall, check_declaration, declarations, tool_result_for
from agent_toolsmith.llm.tools.attach import MAX_ATTACH_IMAGE_BYTES, MAX_ATTACH_PDF_BYTES, MAX_ATTACH_TEXT_BYTES
from agent_toolsmith.llm.tools.contract import ToolResponse
from agent_toolsmith.session import Session

from tests.conftest import make_session
from tests.integration.test_mcp import run as run_bounded
from tests.integration.test_mcp import stdio_client

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
PDF = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"


def attach(session: Session, file_path: str, **extra: Any) -> ToolResponse:
    return asyncio.run(session.run("attach", {"file_path": file_path, **extra}))


@pytest.fixture
def files(workspace: Path) -> Path:
    (workspace / "build.log").write_text("step 1 ok\nstep 2 failed: disk full\n")
    (workspace / "chart.png").write_bytes(PNG)
    (workspace / "report.pdf").write_bytes(PDF)
    (workspace / "notes.md").write_text("# Notes\n")
    (workspace / "bundle.zip").write_bytes(b"PK\x03\x04" + bytes(64))
    return workspace


def test_a_text_file_an_image_and_a_pdf_go_with_their_content(files: Path) -> None:
    session = make_session(files)
    log = attach(session, "build.log", caption="  the failing\n build ")
    assert not log.is_error and log.images == []
    (attached,) = log.files
    expected = ("build.log", "text/plain", (files / "build.log").read_text())
    assert (attached.name, attached.media_type, attached.text) == expected
    assert attached.uri == (files / "build.log").as_uri() and attached.size == 35
    assert log.metadata["caption"] == "the failing build" and log.metadata["embedded"]
    assert "Caption: the failing build" in log.content and "with its content" in log.content
    assert attach(session, "notes.md").files[0].media_type == "text/markdown"
    image = attach(session, "chart.png")
    assert [(i.media_type, base64.b64decode(i.data_base64)) for i in image.images] == [("image/png", PNG)]
    assert image.files == []
    pdf = attach(session, str(files / "report.pdf"))
    assert [(f.media_type, base64.b64decode(f.data_base64 or "")) for f in pdf.files] == [("application/pdf", PDF)]


@pytest.mark.parametrize(
    ("name", "size", "media_type"),
    [("huge.log", MAX_ATTACH_TEXT_BYTES + 1, "text/plain"), ("huge.png", MAX_ATTACH_IMAGE_BYTES + 1, "image/png"),
     ("huge.pdf", MAX_ATTACH_PDF_BYTES + 1, "application/pdf"), ("bundle.zip", 68, "application/zip")],
)  # fmt: skip
def test_a_file_over_its_cap_or_another_binary_goes_as_a_link(
    files: Path, name: str, size: int, media_type: str
) -> None:
    path = files / name
    if not path.exists():
        start = PDF if name.endswith(".pdf") else b"x"
        path.write_bytes(start + b"y" * (size - len(start)))
    response = attach(make_session(files), name)
    assert not response.is_error and response.images == []
    (link,) = response.files
    assert (link.media_type, link.size, link.embedded, link.uri) == (media_type, size, False, path.as_uri())
    assert "as a link" in response.content and response.metadata["embedded"] is False


def test_attach_reads_as_view_does_asking_outside_the_workspace(files: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("outside\n")
    (files / "link.txt").symlink_to(outside)
    asked: list[PermissionRequest] = []

    async def deny(request: PermissionRequest) -> Decision:
        asked.append(request)
        return Decision.DENY

    session = make_session(files, asker=deny)
    for path in (str(outside), "link.txt"):
        denied = attach(session, path)
        assert denied.is_error and denied.metadata["error"] == "denied" and denied.files == []
    assert [(r.tool, r.action, r.target) for r in asked] == [("attach", "read", str(outside))] * 2
    assert attach(session, "build.log").files  # inside: no question
    missing = attach(session, "build.lgo")
    assert missing.metadata["error"] == "not_found" and "build.log" in missing.content
    assert attach(session, ".").metadata["error"] == "is_directory"
    os.mkfifo(files / "pipe.log")
    assert attach(session, "pipe.log").metadata["error"] == "not_regular_file"  # and no hang


def test_a_read_only_session_offers_attach_and_its_policy_lets_it_ask_to_read(files: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("x\n")
    session = make_session(files, tool_policy=ToolPolicy(read_only=True), asker=read_only_policy)
    assert "attach" in [i.name for i in session.tools()]
    assert not attach(session, str(outside)).is_error


def _attachments(files: Path) -> ToolResponse:
    """One response with a text file, a PDF, an image and a link, as a tool could return."""
    session = make_session(files)
    parts = [attach(session, name) for name in ("build.log", "report.pdf", "chart.png", "bundle.zip")]
    return ToolResponse(
        "Attached four files.", images=[i for p in parts for i in p.images], files=[f for p in parts for f in p.files]
    )


def test_the_providers_carry_attachments_as_their_image_and_document_blocks(files: Path) -> None:
    response = _attachments(files)
    log_text = (files / "build.log").read_text()
    pdf64 = base64.b64encode(PDF).decode()
    link_line = f"- bundle.zip (application/zip, 68 bytes): {(files / 'bundle.zip').as_uri()}"

    anthropic = tool_result_for("anthropic", response, ToolCall("toolu_1", "attach", {}))
    kinds = [block["type"] for block in anthropic["content"]]
    assert kinds == ["text", "image", "document", "document"]
    assert link_line in anthropic["content"][0]["text"]
    text_source = {"type": "text", "media_type": "text/plain", "data": log_text}
    assert anthropic["content"][2] == {"type": "document", "source": text_source, "title": "build.log"}
    assert anthropic["content"][3]["source"] == {"type": "base64", "media_type": "application/pdf", "data": pdf64}

    openai = tool_result_for("openai", response, ToolCall("call_1", "attach", {}))["output"]
    assert [item["type"] for item in openai] == ["input_text", "input_image", "input_text", "input_file"]
    assert openai[2]["text"].endswith(log_text) and link_line in openai[0]["text"]
    pdf_url = f"data:application/pdf;base64,{pdf64}"
    assert openai[3] == {"type": "input_file", "filename": "report.pdf", "file_data": pdf_url}

    gemini = tool_result_for("gemini", response, ToolCall("g1", "attach", {}))["functionResponse"]
    assert [part["inlineData"]["mimeType"] for part in gemini["parts"]] == ["image/png", "application/pdf"]
    assert gemini["response"]["output"].endswith(log_text) and link_line in gemini["response"]["output"]

    chat = tool_result_for("openai-chat", response, ToolCall("call_2", "attach", {}))["content"]
    assert "1 image(s) (image/png) not shown" in chat and "- report.pdf (application/pdf" in chat
    assert link_line in chat and chat.endswith(log_text)


def test_attach_is_declared_within_every_provider_s_rules(files: Path) -> None:
    (info,) = [i for i in make_session(files).tools() if i.name == "attach"]
    assert info.read_only and not info.destructive
    for provider in PROVIDERS:
        assert all(check_declaration(provider, d) == [] for d in declarations(provider, [info]))


def test_a_real_mcp_client_gets_an_image_an_embedded_resource_and_a_resource_link(
    files: Path, tmp_path: Path
) -> None:
    async def main() -> dict[str, types.CallToolResult]:
        async with stdio_client(files, tmp_path) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert listed["attach"].annotations is not None and listed["attach"].annotations.read_only_hint
            return {name: await client.call_tool("attach", {"file_path": name})
                    for name in ("build.log", "report.pdf", "chart.png", "bundle.zip")}  # fmt: skip

    results = run_bounded(main())
    log = results["build.log"].content
    assert isinstance(log[0], types.TextContent) and isinstance(log[1], types.EmbeddedResource)
    assert isinstance(log[1].resource, types.TextResourceContents)
    assert log[1].resource.text == (files / "build.log").read_text() and log[1].resource.mime_type == "text/plain"
    assert str(log[1].resource.uri) == (files / "build.log").as_uri()
    pdf = results["report.pdf"].content[1]
    assert isinstance(pdf, types.EmbeddedResource) and isinstance(pdf.resource, types.BlobResourceContents)
    assert base64.b64decode(pdf.resource.blob) == PDF
    image = results["chart.png"].content[1]
    assert isinstance(image, types.ImageContent) and base64.b64decode(image.data) == PNG
    link = results["bundle.zip"].content[1]
    assert isinstance(link, types.ResourceLink)
    assert (str(link.uri), link.name, link.mime_type, link.size) == ((files / "bundle.zip").as_uri(), "bundle.zip",
                                                                    "application/zip", 68)  # fmt: skip
