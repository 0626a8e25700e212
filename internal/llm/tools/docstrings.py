"""A function's docstring read for a tool: the description (its summary and the rest) and the
parameters' descriptions from an ``Args:`` section (Google and NumPy style) or reST ``:param x:``
fields. Sections about the return value, exceptions and examples are left out of the description."""

from __future__ import annotations

import re

__all__ = ["read_docstring", "split_description"]

#: Google- and NumPy-style section headers that end the description.
_SECTIONS = re.compile(r"^(Args|Arguments|Parameters|Params|Returns?|Yields?|Raises|Examples?|Notes?):?\s*$")
_GOOGLE_ARG = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_NUMPY_ARG = re.compile(r"^(\*{0,2}\w+)\s*(?::.*)?$")
_REST_FIELD = re.compile(r"^:(param|parameter|arg|argument|type|returns?|rtype|raises?)\b([^:]*):\s*(.*)$")


def read_docstring(doc: str) -> tuple[str, str, dict[str, str]]:
    """(summary, guidance, parameter descriptions) from a cleaned docstring."""
    described: dict[str, str] = {}
    kept: list[str] = []
    lines = doc.splitlines()
    at = 0
    while at < len(lines):
        line = lines[at]
        rest = _REST_FIELD.match(line.strip())
        if rest is not None:
            at = _rest_field(lines, at, rest, described)
            continue
        if _SECTIONS.match(line) and (at + 1 < len(lines) and lines[at + 1].startswith((" ", "-"))):
            at = _section(lines, at, described)
            continue
        kept.append(line)
        at += 1
    summary, guidance = split_description("\n".join(kept))
    return summary, guidance, described


def _rest_field(lines: list[str], at: int, match: re.Match[str], described: dict[str, str]) -> int:
    text = [match.group(3).strip()]
    at += 1
    while at < len(lines) and lines[at].startswith((" ", "\t")) and lines[at].strip():
        text.append(lines[at].strip())
        at += 1
    if match.group(1) in ("param", "parameter", "arg", "argument"):
        name = match.group(2).split()[-1] if match.group(2).split() else ""
        if name:
            described[name] = " ".join(text)
    return at


def _section(lines: list[str], at: int, described: dict[str, str]) -> int:
    """Skip a section from its header at ``at``; a parameters section's entries go to
    ``described``. Google style indents its entries under the header; NumPy style underlines the
    header and puts each ``name : type`` at the margin, its description indented below."""
    header = lines[at].strip().rstrip(":")
    parameters = header in ("Args", "Arguments", "Parameters", "Params")
    at += 1
    numpy = at < len(lines) and set(lines[at].strip()) == {"-"}
    if numpy:
        at += 1
    current: str | None = None
    indent: int | None = None
    while at < len(lines) and _in_section(lines, at, numpy):
        line = lines[at]
        at += 1
        if not line.strip():
            continue
        depth = len(line) - len(line.lstrip())
        entry = _NUMPY_ARG.match(line) if numpy else _GOOGLE_ARG.match(line.strip())
        if parameters and entry and (depth == 0 if numpy else indent is None or depth <= indent):
            indent = depth
            current = entry.group(1).lstrip("*")
            described[current] = "" if numpy else entry.group(2).strip()
        elif current is not None:
            described[current] = f"{described[current]} {line.strip()}".strip()
    return at


def _in_section(lines: list[str], at: int, numpy: bool) -> bool:
    """Whether line ``at`` still belongs to the section: indented or blank (Google); anything up
    to the next underlined header (NumPy)."""
    line = lines[at]
    if numpy:
        return not (at + 1 < len(lines) and line.strip() and set(lines[at + 1].strip()) == {"-"})
    return not line.strip() or line.startswith((" ", "\t"))


def split_description(text: str) -> tuple[str, str]:
    """(first paragraph, the rest), each stripped; the first paragraph joined into one line."""
    paragraphs = re.split(r"\n\s*\n", text.strip(), maxsplit=1)
    summary = " ".join(paragraphs[0].split())
    return summary, paragraphs[1].strip() if len(paragraphs) > 1 else ""
