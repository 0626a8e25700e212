"""OpenAI's strict mode (Structured Outputs for function calling), shared by both OpenAI APIs.

With ``strict: true`` the model's arguments are guaranteed to match the schema, but the schema
must fit a subset of JSON Schema: every object lists all its properties in ``required`` and has
``additionalProperties: false``; an optional property is expressed as nullable (``["integer",
"null"]``) — the model sends ``null`` for "not given", which our params parsing reads as the
default; ``default`` is not allowed (it moves into the description) and only some constraint
keywords are. :func:`strict_schema` rewrites a schema that can be expressed that way and says
None otherwise (an open object, say); that tool is then declared with ``strict: false`` as is.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .calls import subschemas

#: Keywords strict mode accepts (OpenAI "Supported schemas"); others are dropped.
STRICT_KEYWORDS = frozenset(
    {
        "type", "description", "properties", "required", "additionalProperties", "items", "enum",
        "const", "anyOf", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
        "minItems", "maxItems", "pattern", "format", "$defs", "$ref",
    }
)  # fmt: skip
NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class _NotStrict(Exception):
    pass


def strict_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The strict-mode form of ``schema``, or None when strict mode cannot express it."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return None
    try:
        return _strict(schema, nullable=False)
    except _NotStrict:
        return None


def _strict(node: Any, *, nullable: bool) -> dict[str, Any]:
    if not isinstance(node, dict):
        raise _NotStrict
    out = {key: value for key, value in node.items() if key in STRICT_KEYWORDS}
    if "default" in node:
        said = f"(default: {json.dumps(node['default'])})"
        out["description"] = f"{out['description']} {said}" if out.get("description") else said
    if node.get("type") == "object" or "properties" in node:
        if node.get("additionalProperties", False) is not False:
            raise _NotStrict  # an open object: strict mode has no way to say it
        properties = node.get("properties", {})
        required = set(node.get("required", []))
        out["properties"] = {name: _strict(child, nullable=name not in required) for name, child in properties.items()}
        out["required"] = list(properties)
        out["additionalProperties"] = False
    if "items" in node:
        out["items"] = _strict(node["items"], nullable=False)
    if "anyOf" in node:
        out["anyOf"] = [_strict(branch, nullable=False) for branch in node["anyOf"]]
    if nullable:
        _make_nullable(out)
    return out


def _make_nullable(node: dict[str, Any]) -> None:
    kind = node.get("type")
    if isinstance(kind, str):
        node["type"] = [kind, "null"]
    elif isinstance(kind, list):
        node["type"] = kind if "null" in kind else [*kind, "null"]
    elif "anyOf" in node:
        node["anyOf"] = [*node["anyOf"], {"type": "null"}]
    else:
        raise _NotStrict
    if "enum" in node and None not in node["enum"]:
        node["enum"] = [*node["enum"], None]


def check_strict(schema: Any, path: str = "parameters") -> list[str]:
    """Where ``schema`` breaks strict mode's rules ([] when it keeps them)."""
    if not isinstance(schema, dict):
        return [f"{path} is not a schema object"]
    problems = [f"{path}: '{key}' is not supported in strict mode" for key in schema if key not in STRICT_KEYWORDS]
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if "object" in kinds or "properties" in schema:
        properties = schema.get("properties", {})
        if schema.get("additionalProperties") is not False:
            problems.append(f"{path}: additionalProperties must be false")
        if sorted(schema.get("required", [])) != sorted(properties):
            problems.append(f"{path}: required must list every property")
    for child, where in subschemas(schema, path):
        problems += check_strict(child, where)
    return problems


def check_function(name: Any, parameters: Any, strict: Any) -> list[str]:
    """The rules both OpenAI APIs hold a function declaration to."""
    problems = []
    if not NAME_RE.match(str(name)):
        problems.append("name must match ^[a-zA-Z0-9_-]{1,64}$")
    if not isinstance(parameters, dict) or parameters.get("type") != "object":
        problems.append("parameters must be a JSON Schema object with type 'object'")
    if not isinstance(strict, bool):
        problems.append("strict must be true or false")
    elif strict:
        problems += check_strict(parameters)
    return problems
