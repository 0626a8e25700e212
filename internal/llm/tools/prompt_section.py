"""A tools section for a host's system prompt: each tool's name and what it does in one line,
then the guidance some tools carry (a custom tool's ``.md`` body, a function tool's docstring
beyond its summary). ``Session.prompt_section()`` gives it for the tools a session offers."""

from __future__ import annotations

import re
from collections.abc import Iterable

from .contract import Tool

_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)\.(?:\s|$)")
#: The heading the section starts with.
SECTION_HEADING = "## Tools"


def first_sentence(text: str) -> str:
    """The description's first sentence, whole, on one line."""
    flat = " ".join(text.split())
    end = _SENTENCE_END.search(flat)
    return flat[: end.start() + 1] if end else flat


def prompt_section(tools: Iterable[Tool]) -> str:
    """``## Tools``: a line per tool (``- `name`: first sentence``), then a ``### name``
    subsection with each tool's guidance, for the tools that have some."""
    offered = list(tools)
    lines = [SECTION_HEADING, ""]
    lines += [f"- `{tool.name}`: {first_sentence(tool.info().description)}" for tool in offered]
    for tool in offered:
        guidance = tool.guidance.strip()  # after info(): a custom tool reads its .md on first need
        if guidance:
            lines += ["", f"### {tool.name}", "", guidance]
    return "\n".join(lines) + "\n"
