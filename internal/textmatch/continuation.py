"""The mid-line rule: continuation lines of a replacement that starts after a line's indentation.

A model copies ``old_string`` from the first visible character of a line (``return int(a / b)``)
and writes a multi-line ``new_string`` whose later lines are relative to that column (here 0):
``# round\\nreturn int(round(a / b))``. Spliced literally, the first line lands after the
indentation but the others at column 0 — out of their block, and often still valid code (a
comment, the last statement of a function, an argument inside brackets), so no parser notices.

The rule, which aider applies too: when ``old_string`` starts at the first non-blank character of
a line and leaves out that line's indentation, lines 2..n of ``new_string`` get that indentation
in front, their relative indentation kept. It fires only when old_string says nothing about the
file's columns (one line; later lines blank), and never when the later lines of new_string all
already carry the indentation (written for the file's columns) — so it never touches an edit
whose old_string includes the indentation, or a match after other code on its line.
"""

from __future__ import annotations

from .lines import Replacement, Text


def indentation_before(f: Text, start: int) -> str:
    """The whitespace between the start of ``start``'s line and ``start``, when that is all there
    is before it on the line; "" when code precedes it (or nothing does)."""
    before = f.text[f.line_start(start) : start]
    return before if before and not before.strip(" \t") else ""


def fires(old: str) -> bool:
    """Whether old_string leaves the file's columns open: it starts with a visible character and
    has no non-blank line after its first."""
    if not old or old[0].isspace():
        return False
    _, _, rest = old.partition("\n")
    return not rest.strip()


def reindent_continuations(new: str, indent: str) -> tuple[str, tuple[int, ...]]:
    """``new`` with ``indent`` put before each non-blank line after its first, and the offsets
    (in the result) where it was inserted. When every such line already starts with ``indent``
    they were written for the file's columns: nothing changes."""
    lines = new.split("\n")
    rest = [line for line in lines[1:] if line.strip()]
    if not rest or not indent or all(line.startswith(indent) for line in rest):
        return new, ()
    out, inserted, offset = [lines[0]], [], len(lines[0]) + 1
    for line in lines[1:]:
        if line.strip():
            inserted.append(offset)
            line = indent + line
        out.append(line)
        offset += len(line) + 1
    return "\n".join(out), tuple(inserted)


def with_continuations(f: Text, found: list[Replacement], old: str) -> list[Replacement]:
    """``found`` (matches of ``old`` as given) with the rule applied to each replacement that
    starts right after its line's indentation."""
    if not fires(old):
        return found
    out = []
    for r in found:
        indent = indentation_before(f, r.start)
        if r.text is None or not indent:
            out.append(r)
            continue
        text, inserted = reindent_continuations(r.text, indent)
        out.append(Replacement(r.start, r.end, text, inserted))
    return out
