"""Gemini API: ``functionDeclarations``, ``functionCall`` parts in, ``functionResponse`` parts out.

Gemini's ``parameters`` take a subset of the OpenAPI 3.0 schema object: upper-case ``type``
names, ``nullable`` instead of a ``"null"`` type, no ``additionalProperties``, ``$ref`` or
``default``, ``enum`` on strings only. :func:`gemini_schema` rewrites a tool's JSON Schema into
that subset (a default moves into the description). A ``functionResponse.response`` must be an
object: ``{"output": text}``, or ``{"error": text}`` for a failed call; images and attached PDFs
travel as ``inlineData`` in the response's ``parts``, an attached text file in the text.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..tools.contract import ToolInfo, ToolResponse
from .calls import ToolCall, attached_text, files_note, subschemas

#: Schema fields kept (Gemini API reference, ``Schema``); others are dropped.
GEMINI_KEYWORDS = frozenset(
    {
        "type", "format", "description", "nullable", "enum", "properties", "required", "items",
        "minItems", "maxItems", "minimum", "maximum", "minLength", "maxLength", "pattern", "anyOf",
    }
)  # fmt: skip
TYPES = {
    "string": "STRING", "integer": "INTEGER", "number": "NUMBER", "boolean": "BOOLEAN",
    "array": "ARRAY", "object": "OBJECT",
}  # fmt: skip
NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
PARAMETER_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


def declarations(tools: list[ToolInfo]) -> list[dict[str, Any]]:
    return [{"functionDeclarations": [declaration(tool) for tool in tools]}]


def declaration(tool: ToolInfo) -> dict[str, Any]:
    out: dict[str, Any] = {"name": tool.name, "description": tool.description}
    if tool.parameters.get("properties"):  # an OBJECT without properties is refused: leave it out
        out["parameters"] = gemini_schema(tool.parameters)
    return out


def gemini_schema(node: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    kinds = node.get("type")
    kinds = [k for k in (kinds if isinstance(kinds, list) else [kinds]) if k is not None]
    if "null" in kinds:
        out["nullable"] = True
        kinds.remove("null")
    if kinds:
        out["type"] = TYPES.get(kinds[0], "STRING")
    elif "enum" in node or "const" in node:
        out["type"] = "STRING"
    notes = []
    for key, value in node.items():
        if key in ("type", "properties", "required", "items", "anyOf", "enum") or key not in GEMINI_KEYWORDS:
            continue
        out[key] = value
    values = node.get("enum", [node["const"]] if "const" in node else None)
    if values is not None:
        if all(isinstance(v, str) for v in values):
            out["enum"] = list(values)
        else:
            notes.append("one of " + ", ".join(json.dumps(v) for v in values))
    if "default" in node:
        notes.append(f"default: {json.dumps(node['default'])}")
    if notes:
        said = "(" + "; ".join(notes) + ")"
        out["description"] = f"{out['description']} {said}" if out.get("description") else said
    if "properties" in node:
        out["properties"] = {name: gemini_schema(child) for name, child in node["properties"].items()}
        required = [name for name in node.get("required", []) if name in node["properties"]]
        if required:
            out["required"] = required
    if "items" in node:
        out["items"] = gemini_schema(node["items"])
    if "anyOf" in node:
        out["anyOf"] = [gemini_schema(branch) for branch in node["anyOf"]]
    return out


def tool_result(response: ToolResponse, call: ToolCall) -> dict[str, Any]:
    pdfs = [f for f in response.files if f.data_base64 is not None and f.media_type == "application/pdf"]
    texts = [f for f in response.files if f.text is not None]
    text = response.content + files_note([f for f in response.files if f not in pdfs and f not in texts])
    text += "".join("\n\n" + attached_text(f) for f in texts)  # text goes as text, never as bytes
    answer: dict[str, Any] = {
        "name": call.name,
        "response": {"error" if response.is_error else "output": text},
    }
    if call.id:
        answer = {"id": call.id, **answer}
    media = [(i.media_type, i.data_base64) for i in response.images] + [(f.media_type, f.data_base64) for f in pdfs]
    if media:
        answer["parts"] = [{"inlineData": {"mimeType": kind, "data": data}} for kind, data in media]
    return {"functionResponse": answer}


def parse_call(item: dict[str, Any]) -> ToolCall:
    """A ``functionCall`` part (or the ``functionCall`` object itself)."""
    called = item.get("functionCall", item) if isinstance(item, dict) else None
    name = called.get("name") if isinstance(called, dict) else None
    if not isinstance(called, dict) or not isinstance(name, str) or not name:
        raise ValueError(f"not a functionCall part: {str(item)[:200]}")
    arguments = called.get("args", {})
    call_id = called.get("id")
    return ToolCall(
        call_id if isinstance(call_id, str) else "", name, arguments if isinstance(arguments, dict) else str(arguments)
    )


def check(entry: dict[str, Any]) -> list[str]:
    """The rules for one ``tools`` entry: ``{"functionDeclarations": [...]}``."""
    functions = entry.get("functionDeclarations")
    if set(entry) != {"functionDeclarations"} or not isinstance(functions, list):
        return ["a tools entry must be {'functionDeclarations': [...]}"]
    problems = []
    for function in functions:
        name = function.get("name", "")
        if not NAME_RE.match(str(name)):
            problems.append(f"{name}: name must start with a letter or _ and use A-Z a-z 0-9 _ . - (≤ 64)")
        if set(function) - {"name", "description", "parameters"}:
            problems.append(f"{name}: unexpected keys {sorted(set(function) - {'name', 'description', 'parameters'})}")
        if "parameters" in function:
            parameters = function["parameters"]
            if parameters.get("type") != "OBJECT":
                problems.append(f"{name}: parameters must be of type OBJECT")
            problems += _check_schema(parameters, f"{name}.parameters")
    return problems


def _check_schema(node: Any, path: str) -> list[str]:
    if not isinstance(node, dict):
        return [f"{path}: not a schema object"]
    problems = [f"{path}: '{key}' is not in Gemini's schema subset" for key in node if key not in GEMINI_KEYWORDS]
    if node.get("type") not in TYPES.values() and "anyOf" not in node:
        problems.append(f"{path}: type must be one of {sorted(TYPES.values())}")
    if "enum" in node and (node.get("type") != "STRING" or not all(isinstance(v, str) for v in node["enum"])):
        problems.append(f"{path}: enum is for STRING values only")
    properties = node.get("properties")
    if node.get("type") == "OBJECT" and not properties:
        problems.append(f"{path}: an OBJECT needs at least one property")
    for name in properties or {}:
        if not PARAMETER_NAME_RE.match(name):
            problems.append(f"{path}: property name {name!r} must match {PARAMETER_NAME_RE.pattern}")
    for child, where in subschemas(node, path):
        problems += _check_schema(child, where)
    return problems
