"""Anthropic's strict tool use (``strict: true``): the tool's input is guaranteed to match its
schema, which must then fit the subset of JSON Schema that strict tool use takes.

The subset, as the Anthropic Python SDK 2.10.0 transforms a schema for it
(``anthropic.lib._parse._transform.transform_schema``): types, ``enum`` and ``const`` of plain
values, ``anyOf``/``allOf``, ``description`` and ``title``, objects with ``properties``,
``required`` and ``additionalProperties: false``, arrays with ``items`` and ``minItems`` of 0 or
1, and a few string formats. Optional properties stay optional (unlike OpenAI's strict mode).
Any other keyword (``minimum``, ``maxLength``, ``default``, ...) moves into the description, so
the model still reads it and our own validation still applies it. A schema with an open map
(``additionalProperties`` other than false) cannot be strict: None, and the tool is declared as
it is.
"""

from __future__ import annotations

import json
from typing import Any

from .calls import subschemas

KEYWORDS = frozenset({
    "type", "enum", "const", "anyOf", "allOf", "description", "title", "properties", "required",
    "additionalProperties", "items", "minItems", "format", "$ref", "$defs",
})  # fmt: skip
STRING_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)


class _NotStrict(Exception):
    pass


def strict_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The strict form of ``schema``, or None when strict tool use cannot express it."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return None
    try:
        return _strict(schema)
    except _NotStrict:
        return None


def _strict(node: Any) -> dict[str, Any]:
    if not isinstance(node, dict):
        raise _NotStrict
    out: dict[str, Any] = {}
    moved: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("properties", "items", "anyOf", "allOf", "additionalProperties"):
            continue
        keep = key in KEYWORDS and not (key == "minItems" and value not in (0, 1)) and not (
            key == "format" and value not in STRING_FORMATS) and not (
            key == "enum" and not all(v is None or isinstance(v, str | int | float | bool) for v in value))  # fmt: skip
        (out if keep else moved)[key] = value
    if node.get("type") == "object" or "properties" in node:
        if node.get("additionalProperties", False) is not False:
            raise _NotStrict  # an open map: strict tool use has no way to say it
        out["properties"] = {name: _strict(child) for name, child in node.get("properties", {}).items()}
        out["additionalProperties"] = False
    if "items" in node:
        out["items"] = _strict(node["items"])
    for combiner in ("anyOf", "allOf"):
        if combiner in node:
            out[combiner] = [_strict(branch) for branch in node[combiner]]
    if moved:
        said = "{" + ", ".join(f"{key}: {json.dumps(value)}" for key, value in moved.items()) + "}"
        out["description"] = f"{out['description']}\n\n{said}" if out.get("description") else said
    return out


def check_strict(schema: Any, path: str = "input_schema") -> list[str]:
    """Where ``schema`` breaks strict tool use's rules ([] when it keeps them)."""
    if not isinstance(schema, dict):
        return [f"{path} is not a schema object"]
    problems = [f"{path}: '{key}' is not supported in strict tool use" for key in schema if key not in KEYWORDS]
    if "minItems" in schema and schema["minItems"] not in (0, 1):
        problems.append(f"{path}: minItems must be 0 or 1 in strict tool use")
    if (schema.get("type") == "object" or "properties" in schema) and schema.get("additionalProperties") is not False:
        problems.append(f"{path}: additionalProperties must be false")
    for child, where in subschemas(schema, path):
        problems += check_strict(child, where)
    return problems
