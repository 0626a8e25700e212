"""File names as results print them: one line of plain text, whatever the name holds."""

from __future__ import annotations

#: How :func:`printable` writes the characters that have a short escape.
_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", '"': '\\"', "\\": "\\\\"}
#: Lone surrogates U+DC80..U+DCFF stand for undecodable bytes (``surrogateescape``).
_BYTE_SURROGATES = range(0xDC80, 0xDD00)


def printable(name: str) -> str:
    """A file name or path as it appears in a result: one line of plain text that cannot pass for
    anything else. A name of printable characters not starting with ``"`` is shown as it is.
    Any other is quoted and escaped as C and git do: ``"a.txt\\n  Line 7: x"`` — a newline, CR,
    ESC or any other control, format (bidi overrides, zero-width), separator or unassigned
    character as ``\\n``/``\\r``/``\\t``/``\\xNN``/``\\uNNNN``, ``"`` and ``\\`` escaped, an
    undecodable byte (a ``surrogateescape`` surrogate) as ``\\xNN`` (NN ≥ 80, which no character
    escape uses). So a listing has one line per name, sends no terminal escape, and a quoted
    name is never mistaken for a plain one."""
    if name.isprintable() and not name.startswith('"'):
        return name
    return '"' + "".join(map(_escaped, name)) + '"'


def _escaped(char: str) -> str:
    short = _SHORT_ESCAPES.get(char)
    if short is not None:
        return short
    if char.isprintable():
        return char
    point = ord(char)
    if point in _BYTE_SURROGATES:
        return f"\\x{point - 0xDC00:02x}"
    if point < 0x80:
        return f"\\x{point:02x}"
    return f"\\u{point:04x}" if point <= 0xFFFF else f"\\U{point:08x}"
