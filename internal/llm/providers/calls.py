"""What the provider modules share: the tool call, and decoding arguments sent as JSON text."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..tools.contract import FileAttachment, ToolResponse


@dataclass(frozen=True)
class ToolCall:
    """A model's request to run a tool. ``arguments`` is the parsed JSON object, or the raw
    text when the model sent something else (``Session.run`` then answers with a clear error)."""

    id: str
    name: str
    arguments: dict[str, Any] | str
    #: The call was a free-form one (an OpenAI ``custom_tool_call``): its raw input is
    #: ``arguments["input"]``, and the answer goes back as that kind's output.
    freeform: bool = False


def decode_arguments(raw: Any) -> dict[str, Any] | str:
    """OpenAI sends arguments as a JSON string. An object comes back parsed; anything else
    stays text, so the runner reports it instead of this layer raising."""
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        return json.dumps(raw)
    try:
        value = json.loads(raw) if raw.strip() else {}
    except (ValueError, RecursionError):
        return raw
    return value if isinstance(value, dict) else raw


def require(item: dict[str, Any], key: str, kind: str) -> Any:
    value = item.get(key) if isinstance(item, dict) else None
    if not isinstance(value, str) or not value:
        raise ValueError(f"not a {kind}: no '{key}' string in {str(item)[:200]}")
    return value


def images_note(response: ToolResponse) -> str:
    """Said in the text where a format cannot carry the response's images."""
    count = len(response.images)
    if not count:
        return ""
    kinds = ", ".join(sorted({image.media_type for image in response.images}))
    return f"\n\n({count} image(s) ({kinds}) not shown: this API's tool results carry text only.)"


def attached_text(file: FileAttachment) -> str:
    """A text attachment as text, for formats that carry it as a text block: a header naming
    the file, then its content."""
    return f"--- attached file {file.name} ({file.media_type}, {file.size} bytes) ---\n{file.text}"


def files_note(files: list[FileAttachment]) -> str:
    """Said in the text for attachments a format does not carry with their content (links, and
    documents the format has no block for): the user still gets them from the host."""
    if not files:
        return ""
    lines = [f"- {f.name} ({f.media_type}, {f.size} bytes): {f.uri}" for f in files]
    return "\n\n(Attached for the user, not shown here:\n" + "\n".join(lines) + ")"


def subschemas(node: dict[str, Any], path: str) -> list[tuple[Any, str]]:
    """A JSON Schema node's children with the paths a problem report names them by: each
    property, the array items, each anyOf branch (what the providers' checkers walk)."""
    properties = node.get("properties") or {}
    children: list[tuple[Any, str]] = [(child, f"{path}.{name}") for name, child in properties.items()]
    if "items" in node:
        children.append((node["items"], f"{path}[]"))
    children += [(branch, f"{path}.anyOf[{i}]") for i, branch in enumerate(node.get("anyOf", []))]
    return children

