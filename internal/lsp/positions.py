"""Columns in a server's position encoding and the character columns view shows, both ways.

A server counts columns in the encoding negotiated at initialize: UTF-32 (characters) when it
offers it, else UTF-16 code units (the protocol's default); UTF-8 bytes are understood too.
"""

from __future__ import annotations


def to_char(line: str, column: int, encoding: str) -> int:
    """A server column (in ``encoding`` units) as a character index into ``line``."""
    if encoding == "utf-32" or line.isascii():
        return column
    units = 0
    for index, ch in enumerate(line):
        if units >= column:
            return index
        units += len(ch.encode("utf-16-le")) // 2 if encoding == "utf-16" else len(ch.encode("utf-8"))
    return len(line)


def from_char(line: str, index: int, encoding: str) -> int:
    """A character index into ``line`` in the server's ``encoding`` units."""
    if encoding == "utf-32" or line.isascii():
        return index
    head = line[:index]
    return len(head.encode("utf-16-le")) // 2 if encoding == "utf-16" else len(head.encode("utf-8"))
