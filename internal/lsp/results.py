"""LSP answers as the text the model reads: locations as ``path:line:col: source line``, symbol
outlines in source order, hover text, with caps on how much is listed.

Columns from the server are in its negotiated encoding (``encoding``) and are shown as the
1-based character columns view shows; paths are shown by ``display`` (the session's own).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..fsutil.paths import is_within
from ..fsutil.uris import uri_to_path
from .positions import to_char

#: Locations and symbols listed at most.
MAX_RESULTS = 100
#: Hover text is cut here.
MAX_HOVER_CHARS = 4000

Display = Callable[[Path], str]

_WORD = re.compile(r"\w+")


def word_at(text: str, index: int) -> str:
    """The word (``\\w+``) in ``text`` that contains ``index`` or ends right before it ("" when none)."""
    for match in _WORD.finditer(text):
        if match.start() <= index <= match.end():
            return match.group()
    return ""


def line_of(path: Path, index: int) -> str:
    """Line ``index`` (0-based) of the file as it is now ("" when missing or unreadable)."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    except OSError:
        return ""
    return lines[index] if 0 <= index < len(lines) else ""


def location_line(uri: str, line: int, character: int, display: Display, encoding: str) -> str:
    """``path:line:col: source line`` for a position in a server's coordinates."""
    path = uri_to_path(uri)
    text = line_of(path, line)
    return f"{display(path)}:{line + 1}:{to_char(text, character, encoding) + 1}: {text.strip()}"


def format_locations(found: Any, display: Display, what: str, encoding: str) -> str:
    """A definition/references answer (Location, LocationLink, or a list of them), one line each."""
    if not found:
        return f"No {what} found."
    items = found if isinstance(found, list | tuple) else [found]
    lines = []
    for item in items[:MAX_RESULTS]:
        uri = getattr(item, "uri", None) or getattr(item, "target_uri", None)
        rng = getattr(item, "range", None) or getattr(item, "target_selection_range", None)
        if uri and rng:
            lines.append(location_line(uri, rng.start.line, rng.start.character, display, encoding))
    more = f"\n... and {len(items) - MAX_RESULTS} more" if len(items) > MAX_RESULTS else ""
    return "\n".join(lines) + more


def hover_text(hover: Any) -> str:
    if hover is None:
        return ""
    contents = hover.contents
    parts = contents if isinstance(contents, list | tuple) else [contents]
    texts = [p if isinstance(p, str) else getattr(p, "value", "") for p in parts]
    return "\n".join(t for t in texts if t)[:MAX_HOVER_CHARS]


def kind_name(kind: Any) -> str:
    return getattr(kind, "name", str(kind))


def capped(lines: list[str]) -> str:
    more = [f"... and {len(lines) - MAX_RESULTS} more"] if len(lines) > MAX_RESULTS else []
    return "\n".join(lines[:MAX_RESULTS] + more)


def symbol_start(symbol: Any) -> tuple[int, int]:
    rng = getattr(symbol, "range", None) or symbol.location.range
    return rng.start.line, rng.start.character


def in_source_order(symbols: Any) -> list[Any]:
    """Servers list symbols in their own order (tsserver: by kind); show them as the file has them."""
    return sorted(symbols, key=symbol_start)


def named_symbols(symbols: Any, prefix: str) -> Iterator[tuple[str, Any]]:
    """Every symbol with its dotted name path (from the tree, or a flat list's container names)."""
    for symbol in symbols:
        container = prefix or (getattr(symbol, "container_name", None) or "")
        name = f"{container}.{symbol.name}" if container else symbol.name
        yield name, symbol
        yield from named_symbols(in_source_order(getattr(symbol, "children", None) or []), name)


def symbol_lines(symbols: Any, depth: int) -> list[str]:
    lines = []
    for symbol in symbols:
        rng = getattr(symbol, "range", None) or symbol.location.range
        lines.append(f"{'  ' * depth}{symbol.name} ({kind_name(symbol.kind)}) line {rng.start.line + 1}")
        lines += symbol_lines(in_source_order(getattr(symbol, "children", None) or []), depth + 1)
    return lines


def workspace_symbols(symbols: Any, display: Display, workspace: Path) -> list[str]:
    """One line per symbol, the project's own first (then libraries, e.g. the standard library)."""
    rows = []
    for symbol in symbols:
        location = symbol.location
        path = uri_to_path(location.uri)
        rng = getattr(location, "range", None)
        line = f":{rng.start.line + 1}" if rng else ""
        outside = not is_within(path, workspace)
        rows.append((outside, f"{symbol.name} ({kind_name(symbol.kind)}) {display(path)}{line}"))
    return [row for _, row in sorted(rows, key=lambda r: r[0])]
