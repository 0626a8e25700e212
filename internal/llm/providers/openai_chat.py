"""OpenAI Chat Completions: ``tools`` of type function, ``tool_calls`` in, ``tool`` messages out.

Declarations are the Responses API's function wrapped in ``{"type": "function", "function":
...}``. A ``tool`` message carries text only, so a response's images and attached PDFs are named
in the text instead of silently dropped, and an attached text file follows the text.
"""

from __future__ import annotations

from typing import Any

from ..tools.contract import ToolInfo, ToolResponse
from .calls import ToolCall, attached_text, decode_arguments, files_note, images_note, require
from .openai_responses import function
from .strict import check_function


def declarations(tools: list[ToolInfo]) -> list[dict[str, Any]]:
    return [{"type": "function", "function": function(tool)} for tool in tools]


def tool_result(response: ToolResponse, call: ToolCall) -> dict[str, Any]:
    texts = [f for f in response.files if f.text is not None]
    others = [f for f in response.files if f.text is None]
    content = response.content + images_note(response) + files_note(others)
    content += "".join("\n\n" + attached_text(f) for f in texts)
    return {"role": "tool", "tool_call_id": call.id, "content": content}


def parse_call(item: dict[str, Any]) -> ToolCall:
    """One entry of an assistant message's ``tool_calls``."""
    called = item.get("function") if isinstance(item, dict) else None
    if not isinstance(called, dict) or item.get("type", "function") != "function":
        raise ValueError(f"not a tool_calls entry: {str(item)[:200]}")
    return ToolCall(
        require(item, "id", "tool_calls entry"),
        require(called, "name", "tool_calls entry"),
        decode_arguments(called.get("arguments", "")),
    )


def check(declaration: dict[str, Any]) -> list[str]:
    called = declaration.get("function")
    if declaration.get("type") != "function" or not isinstance(called, dict):
        return ["must be {'type': 'function', 'function': {...}}"]
    extra = set(called) - {"name", "description", "parameters", "strict"}
    problems = [f"unexpected keys {sorted(extra)}"] if extra else []
    return problems + check_function(called.get("name"), called.get("parameters"), called.get("strict"))
