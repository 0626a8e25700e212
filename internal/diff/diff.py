"""Unified diffs for tool metadata: generation with exact no-newline handling, and trim_diff."""

from __future__ import annotations

import difflib

#: Lines of context around each change (the unified-diff convention).
CONTEXT_LINES = 3
NO_NEWLINE = "\\ No newline at end of file"


def split_lines(text: str) -> list[str]:
    """Lines with their ``\\n`` kept. Only ``\\n`` ends a line (unlike ``str.splitlines``, which
    also splits on form feeds and U+2028 and would make diffs that no patch tool reads back)."""
    lines = text.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


def _hunk_range(start: int, length: int) -> str:
    # Unified-diff convention: an empty range names the line before it.
    first = start + 1 if length else start
    return f"{first},{length}"


def generate_diff(old: str, new: str, path: str) -> tuple[str, int, int]:
    """Return ``(unified_diff, additions, removals)`` for ``old`` → ``new``.

    Headers are ``a/path`` / ``b/path``. A last line without a newline is followed by
    ``\\ No newline at end of file`` so the diff applies back exactly. Identical inputs give ``""``.
    """
    old_lines = split_lines(old)
    new_lines = split_lines(new)
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    out: list[str] = []
    additions = removals = 0
    for group in matcher.get_grouped_opcodes(CONTEXT_LINES):
        if not out:
            out += [f"--- a/{path}\n", f"+++ b/{path}\n"]
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ -{_hunk_range(i1, i2 - i1)} +{_hunk_range(j1, j2 - j1)} @@\n")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out += _prefixed(" ", old_lines[a1:a2])
                continue
            if tag in ("replace", "delete"):
                out += _prefixed("-", old_lines[a1:a2])
                removals += a2 - a1
            if tag in ("replace", "insert"):
                out += _prefixed("+", new_lines[b1:b2])
                additions += b2 - b1
    return "".join(out), additions, removals


def _prefixed(prefix: str, lines: list[str]) -> list[str]:
    out: list[str] = []
    for line in lines:
        if line.endswith("\n"):
            out.append(prefix + line)
        else:
            out.append(prefix + line + "\n" + NO_NEWLINE + "\n")
    return out


def trim_diff(diff: str) -> str:
    """Strip the smallest common leading whitespace from a diff's content lines.

    Content lines are the `` ``/``+``/``-`` lines inside hunks; ``---``/``+++`` headers and
    ``@@`` lines are left alone, and lines that are blank after their prefix do not count when
    computing the common indentation (they are kept, shortened if they can be).
    """
    lines = diff.split("\n")
    content_indexes = _content_line_indexes(lines)
    common: str | None = None
    for i in content_indexes:
        body = lines[i][1:]
        if not body.strip():
            continue
        indent = body[: len(body) - len(body.lstrip(" \t"))]
        common = indent if common is None else _common_prefix(common, indent)
        if not common:
            return diff
    if not common:
        return diff
    for i in content_indexes:
        body = lines[i][1:]
        lines[i] = lines[i][0] + (body[len(common) :] if body.startswith(common) else body.lstrip(" \t"))
    return "\n".join(lines)


def _content_line_indexes(lines: list[str]) -> list[int]:
    indexes: list[int] = []
    in_hunk = False
    for i, line in enumerate(lines):
        if line.startswith("@@"):
            in_hunk = True
        elif line.startswith("--- ") and not in_hunk:
            continue
        elif line.startswith(("--- ", "+++ ")) and _is_file_header(lines, i):
            in_hunk = False
        elif in_hunk and line[:1] in (" ", "+", "-"):
            indexes.append(i)
    return indexes


def _is_file_header(lines: list[str], i: int) -> bool:
    """A ``---`` line followed by ``+++`` (or a ``+++`` after ``---``) starts a new file's diff."""
    if lines[i].startswith("--- "):
        return i + 1 < len(lines) and lines[i + 1].startswith("+++ ")
    return i > 0 and lines[i - 1].startswith("--- ")


def _common_prefix(a: str, b: str) -> str:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return a[:n]


def diff_metadata(old: str, new: str, path: str) -> dict[str, object]:
    """The metadata every file-changing tool reports: trimmed diff and line counts."""
    diff, additions, removals = generate_diff(old, new, path)
    return {"diff": trim_diff(diff), "additions": additions, "removals": removals}
