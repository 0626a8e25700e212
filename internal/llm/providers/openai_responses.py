"""OpenAI Responses API: function tools, ``function_call`` items in, ``function_call_output`` out.

``strict: true`` only where the schema can be put in strict form (see strict.py), else the
schema goes as is with ``strict: false``. Arguments arrive as a JSON string. An output is the
text, or — with images — a list of ``input_text`` and ``input_image`` (data URL) items. The API
has no error flag: the text says what failed.
"""

from __future__ import annotations

from typing import Any

from ..tools.tools import ToolInfo, ToolResponse
from .calls import ToolCall, decode_arguments, require
from .strict import check_function, strict_schema


def function(tool: ToolInfo) -> dict[str, Any]:
    """name, description, parameters and strict, as both OpenAI APIs declare a function."""
    strict = strict_schema(tool.parameters)
    parameters = strict if strict is not None else tool.parameters
    return {"name": tool.name, "description": tool.description, "parameters": parameters, "strict": strict is not None}


def declarations(tools: list[ToolInfo]) -> list[dict[str, Any]]:
    return [{"type": "function", **function(tool)} for tool in tools]


def tool_result(response: ToolResponse, call: ToolCall) -> dict[str, Any]:
    output: str | list[dict[str, Any]] = response.content
    if response.images:
        output = [{"type": "input_text", "text": response.content}]
        for image in response.images:
            url = f"data:{image.media_type};base64,{image.data_base64}"
            output.append({"type": "input_image", "image_url": url})
    return {"type": "function_call_output", "call_id": call.id, "output": output}


def parse_call(item: dict[str, Any]) -> ToolCall:
    if not isinstance(item, dict) or item.get("type") != "function_call":
        raise ValueError(f"not a function_call item: {str(item)[:200]}")
    return ToolCall(
        require(item, "call_id", "function_call item"),
        require(item, "name", "function_call item"),
        decode_arguments(item.get("arguments", "")),
    )


def check(declaration: dict[str, Any]) -> list[str]:
    problems = [] if declaration.get("type") == "function" else ["type must be 'function'"]
    extra = set(declaration) - {"type", "name", "description", "parameters", "strict"}
    if extra:
        problems.append(f"unexpected keys {sorted(extra)}")
    return problems + check_function(declaration.get("name"), declaration.get("parameters"), declaration.get("strict"))
