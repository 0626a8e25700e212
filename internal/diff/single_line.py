"""The opcodes difflib gives two line lists that differ in one line, without difflib.

Most windows the span diff renders (an edit or a patch hunk in a large file) hold one changed
line among context lines; a SequenceMatcher costs tens of microseconds to set up for each, a
50-hunk patch pays it 50 times. When the changed line of each side occurs nowhere on the other
side, no matching block can hold it, so the longest block difflib finds first is the equal run
before it or the one after it (the before run on a tie), then the other: its opcodes are those
two equal runs around one replace, which is what :func:`one_line_opcodes` returns.
"""

from __future__ import annotations

Opcode = tuple[str, int, int, int, int]


def one_line_opcodes(a: list[str], b: list[str]) -> list[Opcode] | None:
    """``SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()`` when ``a`` and ``b`` have the
    same length and differ in exactly one line, whose text on each side is not a line of the
    other; None otherwise (the caller asks difflib)."""
    if len(a) != len(b):
        return None
    differ = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
    if len(differ) != 1:
        return None
    k = differ[0]
    if a[k] in b or b[k] in a:
        return None
    codes: list[Opcode] = [("equal", 0, k, 0, k)] if k else []
    codes.append(("replace", k, k + 1, k, k + 1))
    if k + 1 < len(a):
        codes.append(("equal", k + 1, len(a), k + 1, len(b)))
    return codes
