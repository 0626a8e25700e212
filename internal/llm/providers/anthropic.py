"""Anthropic Messages API: ``tools[]`` entries, ``tool_use`` blocks in, ``tool_result`` blocks out.

Declarations carry the schema as ``input_schema`` unchanged (the API takes JSON Schema); asked
for strict tool use, a tool whose schema its subset can express is declared ``strict: true``
with that form (anthropic_strict.py), the others as they are. A result is a ``tool_result``
content block for the next user message: the text, then each image as an ``image`` block with a
base64 source, then each attached text file or PDF as a ``document`` block (other attachments
are named in the text); ``is_error`` is set on failures.
"""

from __future__ import annotations

import re
from typing import Any

from ..tools.contract import FileAttachment, ToolInfo, ToolResponse
from .anthropic_strict import check_strict, strict_schema
from .calls import ToolCall, files_note, require

KEYS = frozenset({"name", "description", "input_schema", "strict"})

NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def declarations(tools: list[ToolInfo], *, strict: bool = False) -> list[dict[str, Any]]:
    return [declaration(tool, strict=strict) for tool in tools]


def declaration(tool: ToolInfo, *, strict: bool = False) -> dict[str, Any]:
    strict_form = strict_schema(tool.parameters) if strict else None
    if strict_form is None:
        return {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}
    return {"name": tool.name, "description": tool.description, "input_schema": strict_form, "strict": True}


def tool_result(response: ToolResponse, call: ToolCall) -> dict[str, Any]:
    documents = [document for f in response.files if (document := _document(f)) is not None]
    links = [f for f in response.files if _document(f) is None]
    content: list[dict[str, Any]] = [{"type": "text", "text": (response.content or "(no output)") + files_note(links)}]
    for image in response.images:
        source = {"type": "base64", "media_type": image.media_type, "data": image.data_base64}
        content.append({"type": "image", "source": source})
    content += documents
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call.id, "content": content}
    if response.is_error:
        block["is_error"] = True
    return block


def _document(file: FileAttachment) -> dict[str, Any] | None:
    """A ``document`` block: a text file as plain text, a PDF as base64; None for anything else."""
    if file.text is not None:
        source = {"type": "text", "media_type": "text/plain", "data": file.text}
    elif file.data_base64 is not None and file.media_type == "application/pdf":
        source = {"type": "base64", "media_type": "application/pdf", "data": file.data_base64}
    else:
        return None
    return {"type": "document", "source": source, "title": file.name}


def parse_call(item: dict[str, Any]) -> ToolCall:
    if not isinstance(item, dict) or item.get("type") != "tool_use":
        raise ValueError(f"not a tool_use block: {str(item)[:200]}")
    arguments = item.get("input", {})
    return ToolCall(
        require(item, "id", "tool_use block"),
        require(item, "name", "tool_use block"),
        arguments if isinstance(arguments, dict) else str(arguments),
    )


def check(declaration: dict[str, Any]) -> list[str]:
    problems = []
    if set(declaration) - KEYS:
        problems.append(f"unexpected keys {sorted(set(declaration) - KEYS)}")
    if declaration.get("strict") not in (None, True, False):
        problems.append("strict must be true or false")
    elif declaration.get("strict"):
        problems += check_strict(declaration.get("input_schema"))
    if not NAME_RE.match(str(declaration.get("name", ""))):
        problems.append("name must match ^[a-zA-Z0-9_-]{1,64}$")
    if not isinstance(declaration.get("description"), str):
        problems.append("description must be a string")
    schema = declaration.get("input_schema")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        problems.append("input_schema must be a JSON Schema object with type 'object'")
    return problems
