"""Provider formats against fixtures written from the providers' public docs (testdata/providers)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agent_toolsmith.llm.providers import (
    PROVIDERS,
    ToolCall,
    check_declaration,
    declarations,
    parse_tool_call,
    tool_result_for,
)
from agent_toolsmith.llm.tools.contract import FileAttachment, ImageAttachment, ToolInfo, ToolResponse

FIXTURES = Path(__file__).resolve().parents[1] / "testdata" / "providers"

SAMPLE_TOOL = ToolInfo(
    name="read_file",
    description="Reads a file.",
    parameters={
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "The file to read", "minLength": 1},
            "limit": {"type": "integer", "description": "Lines to read", "minimum": 1, "default": 100},
            "mode": {"type": "string", "enum": ["text", "bytes"], "description": "How to read", "default": "text"},
        },
        "additionalProperties": False,
        "required": ["path"],
    },
    read_only=True,
)
RESPONSES = {
    "ok": ToolResponse("     1|hello"),
    "error": ToolResponse("File not found: nope.md", is_error=True),
    "image": ToolResponse("Image: logo.png (1x1)", images=[ImageAttachment("image/png", "iVBORw0KGgo=")]),
    "files": ToolResponse(
        "Attached three files.",
        files=[
            FileAttachment("notes.txt", "text/plain", "file:///ws/notes.txt", 6, text="hello\n"),
            FileAttachment("r.pdf", "application/pdf", "file:///ws/r.pdf", 4, data_base64="JVBERg=="),
            FileAttachment("b.zip", "application/zip", "file:///ws/b.zip", 9),
        ],
    ),
}


def fixture(provider: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((FIXTURES / f"{provider}.json").read_text())
    return loaded


@pytest.mark.parametrize("provider", PROVIDERS)
def test_declarations_match_the_documented_shape(provider: str) -> None:
    exported = declarations(provider, [SAMPLE_TOOL])
    assert exported == fixture(provider)["declarations"]
    assert all(check_declaration(provider, d) == [] for d in exported)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_tool_calls_parse_from_the_documented_shape(provider: str) -> None:
    expected = fixture(provider)["parsed"]
    assert parse_tool_call(provider, fixture(provider)["call"]) == ToolCall(**expected)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("kind", RESPONSES)
def test_results_match_the_documented_shape(provider: str, kind: str) -> None:
    call = parse_tool_call(provider, fixture(provider)["call"])
    assert tool_result_for(provider, RESPONSES[kind], call) == fixture(provider)["results"][kind]


def test_a_tool_strict_mode_cannot_express_is_declared_non_strict() -> None:
    open_object = ToolInfo(
        "tag",
        "Tags a file.",
        {"type": "object", "properties": {"labels": {"type": "object", "additionalProperties": {"type": "string"}}}},
        read_only=False,
    )
    (declared,) = declarations("openai", [open_object])
    assert declared["strict"] is False and declared["parameters"] == open_object.parameters
    assert check_declaration("openai", declared) == []


@pytest.mark.parametrize(
    ("provider", "item"),
    [
        ("anthropic", {"type": "text", "text": "hi"}),
        ("openai", {"type": "message", "content": []}),
        ("openai-chat", {"id": "x"}),
        ("gemini", {"text": "hi"}),
    ],
)
def test_what_is_not_a_tool_call_is_refused_clearly(provider: str, item: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="not a"):
        parse_tool_call(provider, item)


def test_invalid_json_arguments_reach_the_runner_as_text() -> None:
    call = parse_tool_call("openai", {"type": "function_call", "call_id": "c", "name": "view", "arguments": "{nope"})
    assert call.arguments == "{nope"


def test_an_unknown_provider_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="anthropic, openai, openai-chat, gemini"):
        declarations("mistral", [SAMPLE_TOOL])


def test_anthropic_strict_tool_use_on_request() -> None:
    (plain,) = declarations("anthropic", [SAMPLE_TOOL])
    (strict,) = declarations("anthropic", [SAMPLE_TOOL], strict=True)
    assert "strict" not in plain and plain["input_schema"] == SAMPLE_TOOL.parameters
    assert strict["strict"] is True and check_declaration("anthropic", strict) == []
    schema = strict["input_schema"]
    assert schema["required"] == ["path"]  # optional stays optional (unlike OpenAI's strict mode)
    assert "minimum" not in schema["properties"]["limit"]
    assert schema["properties"]["limit"]["description"] == 'Lines to read\n\n{minimum: 1, default: 100}'
    assert schema["properties"]["mode"]["enum"] == ["text", "bytes"]


def test_anthropic_strict_leaves_an_open_map_as_it_is() -> None:
    mapped = ToolInfo("ask", "Asks.", {"type": "object", "properties": {
        "answers": {"type": "object", "additionalProperties": {"type": "string"}}}, "additionalProperties": False},
        read_only=True)  # fmt: skip
    (declared,) = declarations("anthropic", [mapped], strict=True)
    assert "strict" not in declared and declared["input_schema"] == mapped.parameters
    broken = {"name": "x", "description": "", "input_schema": mapped.parameters, "strict": True}
    assert check_declaration("anthropic", broken) == ["input_schema.answers: additionalProperties must be false"]
