"""OpenAI Responses API: function tools, ``function_call`` items in, ``function_call_output`` out.

A tool with a grammar (the codex profile's apply_patch) is declared as a ``custom`` tool whose
free-form input the grammar constrains; its ``custom_tool_call`` items carry the raw text
(passed on as the tool's one ``input`` parameter) and are answered with
``custom_tool_call_output``.

``strict: true`` only where the schema can be put in strict form (see strict.py), else the
schema goes as is with ``strict: false``. Arguments arrive as a JSON string. An output is the
text, or — with images or attached files — a list of ``input_text``, ``input_image`` (data URL)
and ``input_file`` (a PDF as a data URL) items; an attached text file is an ``input_text`` item
of its own. The API has no error flag: the text says what failed.
"""

from __future__ import annotations

from typing import Any

from ..tools.contract import FileAttachment, ToolInfo, ToolResponse
from .calls import ToolCall, attached_text, decode_arguments, files_note, require
from .strict import check_function, strict_schema


def function(tool: ToolInfo) -> dict[str, Any]:
    """name, description, parameters and strict, as both OpenAI APIs declare a function."""
    strict = strict_schema(tool.parameters)
    parameters = strict if strict is not None else tool.parameters
    return {"name": tool.name, "description": tool.description, "parameters": parameters, "strict": strict is not None}


def declarations(tools: list[ToolInfo]) -> list[dict[str, Any]]:
    return [_custom(tool) if tool.grammar else {"type": "function", **function(tool)} for tool in tools]


def _custom(tool: ToolInfo) -> dict[str, Any]:
    grammar = {"type": "grammar", "syntax": "lark", "definition": tool.grammar}
    return {"type": "custom", "name": tool.name, "description": tool.description, "format": grammar}


def tool_result(response: ToolResponse, call: ToolCall) -> dict[str, Any]:
    files = [item for f in response.files if (item := _file_item(f)) is not None]
    text = response.content + files_note([f for f in response.files if _file_item(f) is None])
    output: str | list[dict[str, Any]] = text
    if response.images or files:
        output = [{"type": "input_text", "text": text}]
        for image in response.images:
            url = f"data:{image.media_type};base64,{image.data_base64}"
            output.append({"type": "input_image", "image_url": url})
        output += files
    kind = "custom_tool_call_output" if call.freeform else "function_call_output"
    return {"type": kind, "call_id": call.id, "output": output}


def _file_item(file: FileAttachment) -> dict[str, Any] | None:
    """A text attachment as ``input_text``, a PDF as ``input_file`` (a data URL); None otherwise."""
    if file.text is not None:
        return {"type": "input_text", "text": attached_text(file)}
    if file.data_base64 is not None and file.media_type == "application/pdf":
        return {"type": "input_file", "filename": file.name, "file_data": f"data:{file.media_type};base64,"
                f"{file.data_base64}"}  # fmt: skip
    return None


def parse_call(item: dict[str, Any]) -> ToolCall:
    if isinstance(item, dict) and item.get("type") == "custom_tool_call":
        raw = item.get("input")
        if not isinstance(raw, str):
            raise ValueError(f"not a custom_tool_call item: no 'input' string in {str(item)[:200]}")
        call_id = require(item, "call_id", "custom_tool_call item")
        return ToolCall(call_id, require(item, "name", "custom_tool_call item"), {"input": raw}, freeform=True)
    if not isinstance(item, dict) or item.get("type") != "function_call":
        raise ValueError(f"not a function_call or custom_tool_call item: {str(item)[:200]}")
    return ToolCall(
        require(item, "call_id", "function_call item"),
        require(item, "name", "function_call item"),
        decode_arguments(item.get("arguments", "")),
    )


def check(declaration: dict[str, Any]) -> list[str]:
    if declaration.get("type") == "custom":
        return _check_custom(declaration)
    problems = [] if declaration.get("type") == "function" else ["type must be 'function'"]
    extra = set(declaration) - {"type", "name", "description", "parameters", "strict"}
    if extra:
        problems.append(f"unexpected keys {sorted(extra)}")
    return problems + check_function(declaration.get("name"), declaration.get("parameters"), declaration.get("strict"))


def _check_custom(declaration: dict[str, Any]) -> list[str]:
    problems = []
    extra = set(declaration) - {"type", "name", "description", "format"}
    if extra:
        problems.append(f"unexpected keys {sorted(extra)}")
    if not isinstance(declaration.get("name"), str) or not declaration["name"]:
        problems.append("name must be a non-empty string")
    fmt = declaration.get("format")
    if not isinstance(fmt, dict) or fmt.get("type") != "grammar" or fmt.get("syntax") not in ("lark", "regex"):
        problems.append("format must be {'type': 'grammar', 'syntax': 'lark' | 'regex', 'definition': ...}")
    elif not isinstance(fmt.get("definition"), str) or not fmt["definition"].strip():
        problems.append("format.definition must be a non-empty grammar")
    return problems
