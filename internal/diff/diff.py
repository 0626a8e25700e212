"""Unified diffs for tool metadata: generation with exact no-newline handling, and trim_diff."""

from __future__ import annotations

import bisect
import difflib
from collections.abc import Callable

from ..affix import common_prefix_length, common_suffix_length
from .single_line import Opcode, one_line_opcodes

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


#: Files with at most this many lines on both sides are diffed whole by difflib. Its matching is
#: quadratic where lines repeat (blank lines, braces), so larger inputs are cut down first.
SMALL_DIFF_LINES = 1000


def generate_diff(old: str, new: str, path: str, cancel: Callable[[], None] | None = None) -> tuple[str, int, int]:
    """Return ``(unified_diff, additions, removals)`` for ``old`` → ``new``.

    Headers are ``a/path`` / ``b/path``. A last line without a newline is followed by
    ``\\ No newline at end of file`` so the diff applies back exactly. Identical inputs give ``""``.
    Cost grows with the changed region, not the file (see :func:`_window`). ``cancel`` is called
    between steps and may raise to stop a long diff.
    """
    a, b, first_line, codes = _window(old, new, cancel or _never)
    out: list[str] = []
    additions, removals = _render_hunks(a, b, first_line, first_line, codes, out)
    return (f"--- a/{path}\n+++ b/{path}\n" + "".join(out)) if out else "", additions, removals


def _render_hunks(
    a: list[str], b: list[str], old_first: int, new_first: int, codes: list[Opcode], out: list[str]
) -> tuple[int, int]:
    """Append the hunks of ``codes`` (over ``a`` → ``b``, whose first lines are the files' lines
    ``old_first`` and ``new_first``, 0-based) to ``out``; returns (additions, removals)."""
    additions = removals = 0
    for group in _hunks(codes, CONTEXT_LINES):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        old_range = _hunk_range(old_first + i1, i2 - i1)
        new_range = _hunk_range(new_first + j1, j2 - j1)
        out.append(f"@@ -{old_range} +{new_range} @@\n")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out += _prefixed(" ", a[a1:a2])
                continue
            if tag in ("replace", "delete"):
                out += _prefixed("-", a[a1:a2])
                removals += a2 - a1
            if tag in ("replace", "insert"):
                out += _prefixed("+", b[b1:b2])
                additions += b2 - b1
    return additions, removals


Span = tuple[int, int, str]


def generate_span_diff(
    old: str, spans: list[Span], path: str, cancel: Callable[[], None] | None = None
) -> tuple[str, int, int]:
    """``(unified_diff, additions, removals)`` for ``old`` with the non-overlapping replacements
    ``spans`` (``(start, end, text)`` in ``old`` offsets) applied.

    Only the lines around each span are split and diffed, so a few small changes in a large file
    cost what they change, not the file: spans closer than two contexts are diffed together (their
    hunks would merge), each group by :func:`_window` on just its lines.
    """
    check = cancel or _never
    out: list[str] = []
    additions = removals = 0
    cursor = line = delta = 0  # old offset copied up to; its 0-based line; new lines minus old so far
    for start, end, lines_old, lines_new in _span_groups(old, sorted(spans)):
        check()
        line += old.count("\n", cursor, start)
        a_text = old[start:end]
        b_text = "".join(_spliced(old, start, end, lines_new))
        a, b, first, codes = _window(a_text, b_text, check)
        added, removed = _render_hunks(a, b, line + first, line + first + delta, codes, out)
        additions, removals = additions + added, removals + removed
        delta += b_text.count("\n") - lines_old
        line += lines_old
        cursor = end
    diff = (f"--- a/{path}\n+++ b/{path}\n" + "".join(out)) if out else ""
    return diff, additions, removals


def _span_groups(old: str, spans: list[Span]) -> list[tuple[int, int, int, list[Span]]]:
    """Spans grouped with the whole lines (and context lines) around them: ``(start, end,
    old line count, spans)``; spans whose context windows touch are one group."""
    groups: list[tuple[int, int, int, list[Span]]] = []
    for span in spans:
        # One line more than the context on each side: a span that ends at a line start may still
        # join its text with that line. Extra unchanged lines only come out as equal.
        start = _lines_back(old, old.rfind("\n", 0, span[0]) + 1, CONTEXT_LINES + 1)
        end = _lines_forward(old, span[1], CONTEXT_LINES + 2)
        if groups and start <= groups[-1][1]:
            g_start, _, _, members = groups.pop()
            start = g_start
            members.append(span)
        else:
            members = [span]
        groups.append((start, end, 0, members))
    return [(s, e, old.count("\n", s, e), m) for s, e, _, m in groups]


def _lines_back(text: str, at: int, count: int) -> int:
    for _ in range(count):
        if at == 0:
            break
        at = text.rfind("\n", 0, at - 1) + 1
    return at


def _lines_forward(text: str, at: int, count: int) -> int:
    """The offset after ``count`` more line ends from ``at``."""
    for _ in range(count):
        newline = text.find("\n", at)
        if newline < 0:
            return len(text)
        at = newline + 1
    return at


def _spliced(old: str, start: int, end: int, spans: list[Span]) -> list[str]:
    out, cursor = [], start
    for s, e, text in spans:
        out += [old[cursor:s], text]
        cursor = e
    out.append(old[cursor:end])
    return out


def _never() -> None:
    return None


def _window(old: str, new: str, cancel: Callable[[], None]) -> tuple[list[str], list[str], int, list[Opcode]]:
    """The lines to diff, the file line number of their first line, and difflib-style opcodes.

    Small inputs: both files whole, by difflib (the diffs this project always produced). Larger
    ones: the texts are compared in chunks (memcmp speed) for their common start and end, and only
    the lines between — with the context lines around them — are split and diffed: by difflib when
    few, else by anchoring on lines that occur once on each side (patience diff) and recursing
    into the gaps.
    """
    if old.count("\n") <= SMALL_DIFF_LINES and new.count("\n") <= SMALL_DIFF_LINES:
        a, b = split_lines(old), split_lines(new)
        codes = one_line_opcodes(a, b)  # the usual window: one line changed (difflib's answer)
        if codes is None:
            codes = list(difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes())
        return a, b, 0, codes
    # The changed region: from the start of the line holding the first difference (the same
    # offset in both texts) to just after the first newline inside the common suffix.
    start = old.rfind("\n", 0, common_prefix_length(old, new)) + 1
    suffix = common_suffix_length(old, new, min(len(old), len(new)) - start)
    newline = old.find("\n", len(old) - suffix)
    old_end = len(old) if newline < 0 else newline + 1
    new_end = len(new) - (len(old) - old_end)
    context_start = start
    for _ in range(CONTEXT_LINES):
        if context_start == 0:
            break
        context_start = old.rfind("\n", 0, context_start - 1) + 1
    context_end = old_end
    for _ in range(CONTEXT_LINES):
        if context_end == len(old):
            break
        newline = old.find("\n", context_end)
        context_end = len(old) if newline < 0 else newline + 1
    before = split_lines(old[context_start:start])
    after = split_lines(old[old_end:context_end])
    a = [*before, *split_lines(old[start:old_end]), *after]
    b = [*before, *split_lines(new[start:new_end]), *after]
    n = len(before)
    codes = [("equal", 0, n, 0, n)] if n else []
    codes += _region(a, b, n, len(a) - len(after), n, len(b) - len(after), cancel)
    if after:
        codes.append(("equal", len(a) - len(after), len(a), len(b) - len(after), len(b)))
    return a, b, old.count("\n", 0, context_start), _merged(codes)


def _region(a: list[str], b: list[str], a0: int, a1: int, b0: int, b1: int, cancel: Callable[[], None]) -> list[Opcode]:
    """Opcodes for ``a[a0:a1]`` vs ``b[b0:b1]`` (no common first or last line assumed)."""
    cancel()
    if a0 == a1 and b0 == b1:
        return []
    if a0 == a1:
        return [("insert", a0, a0, b0, b1)]
    if b0 == b1:
        return [("delete", a0, a1, b0, b0)]
    if a1 - a0 == 1 and b1 - b0 == 1:  # one line for one (as difflib would say, without its set-up)
        return [("equal" if a[a0] == b[b0] else "replace", a0, a1, b0, b1)]
    if a1 - a0 <= SMALL_DIFF_LINES and b1 - b0 <= SMALL_DIFF_LINES:
        matcher = difflib.SequenceMatcher(a=a[a0:a1], b=b[b0:b1], autojunk=False)
        return [(tag, i1 + a0, i2 + a0, j1 + b0, j2 + b0) for tag, i1, i2, j1, j2 in matcher.get_opcodes()]
    if a1 - a0 == b1 - b0:
        paired = _paired(a, b, a0, a1, b0)
        if paired is not None:
            return paired
    anchors = _unique_anchors(a, b, a0, a1, b0, b1)
    if not anchors:
        return [("replace", a0, a1, b0, b1)]  # correct, if not minimal: nothing to align on
    codes: list[Opcode] = []
    i, j = a0, b0
    for ai, bj in anchors:
        codes += _region(a, b, i, ai, j, bj, cancel)
        codes.append(("equal", ai, ai + 1, bj, bj + 1))
        i, j = ai + 1, bj + 1
    codes += _region(a, b, i, a1, j, b1, cancel)
    return codes


#: Equal-length ranges are diffed line for line when at most this share of lines differ (many
#: scattered one-line changes, as a multiedit makes); more means lines moved, and the anchored
#: diff says that better.
MAX_PAIRED_SHARE = 0.25


def _paired(a: list[str], b: list[str], a0: int, a1: int, b0: int) -> list[Opcode] | None:
    """Opcodes pairing ``a[a0:a1]`` with the same number of lines of ``b`` from ``b0``, line for
    line; None when too many lines differ for that to be the natural reading."""
    differ = [i for i, (x, y) in enumerate(zip(a[a0:a1], b[b0 : b0 + a1 - a0], strict=True)) if x != y]
    if len(differ) > MAX_PAIRED_SHARE * (a1 - a0):
        return None
    codes: list[Opcode] = []
    at = 0
    for i in differ:
        if i > at:
            codes.append(("equal", a0 + at, a0 + i, b0 + at, b0 + i))
        if codes and codes[-1][0] == "replace" and codes[-1][2] == a0 + i:
            codes[-1] = ("replace", codes[-1][1], a0 + i + 1, codes[-1][3], b0 + i + 1)
        else:
            codes.append(("replace", a0 + i, a0 + i + 1, b0 + i, b0 + i + 1))
        at = i + 1
    if at < a1 - a0:
        codes.append(("equal", a0 + at, a1, b0 + at, b0 + a1 - a0))
    return codes


def _unique_anchors(a: list[str], b: list[str], a0: int, a1: int, b0: int, b1: int) -> list[tuple[int, int]]:
    """Lines that occur exactly once in each range, paired, longest run in the same order."""
    counts: dict[str, list[int]] = {}
    for i in range(a0, a1):
        entry = counts.setdefault(a[i], [0, 0, i, -1])
        entry[0] += 1
    for j in range(b0, b1):
        seen = counts.get(b[j])
        if seen is not None:
            seen[1] += 1
            seen[3] = j
    pairs = sorted((e[2], e[3]) for e in counts.values() if e[0] == 1 and e[1] == 1)
    return _increasing(pairs)


def _increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest subsequence of ``pairs`` (sorted by the first item) increasing in the second."""
    ends: list[int] = []  # ends[k]: the smallest second item ending an increasing run of length k+1
    tails: list[int] = []  # ... and the index in pairs of that run's last pair
    back: list[int] = []
    for index, (_, j) in enumerate(pairs):
        k = bisect.bisect_left(ends, j)
        back.append(tails[k - 1] if k else -1)
        if k == len(ends):
            ends.append(j)
            tails.append(index)
        else:
            ends[k] = j
            tails[k] = index
    out: list[tuple[int, int]] = []
    at = tails[-1] if tails else -1
    while at >= 0:
        out.append(pairs[at])
        at = back[at]
    return out[::-1]


def _merged(codes: list[Opcode]) -> list[Opcode]:
    """Adjacent opcodes of the same kind joined, so hunks and counts come out as difflib's do."""
    out: list[Opcode] = []
    for code in codes:
        if out and out[-1][0] == code[0] and out[-1][2] == code[1] and out[-1][4] == code[3]:
            tag, i1, _, j1, _ = out[-1]
            out[-1] = (tag, i1, code[2], j1, code[4])
        elif (
            out
            and {out[-1][0], code[0]} <= {"insert", "delete", "replace"}
            and (out[-1][2], out[-1][4]) == (code[1], code[3])
        ):
            _, i1, _, j1, _ = out[-1]
            out[-1] = ("replace", i1, code[2], j1, code[4])
        else:
            out.append(code)
    return out


def _hunks(codes: list[Opcode], context: int) -> list[list[Opcode]]:
    """Changes with ``context`` equal lines around them; changes closer than ``2 * context``
    equal lines share a hunk (the unified-diff convention)."""
    hunks: list[list[Opcode]] = []
    current: list[Opcode] = []
    for index, (tag, i1, i2, j1, j2) in enumerate(codes):
        if tag != "equal":
            current.append((tag, i1, i2, j1, j2))
            continue
        first, last = index == 0, index == len(codes) - 1
        if first:  # leading context only
            keep = min(context, i2 - i1)
            current.append((tag, i2 - keep, i2, j2 - keep, j2))
        elif last:  # trailing context only
            keep = min(context, i2 - i1)
            current.append((tag, i1, i1 + keep, j1, j1 + keep))
        elif i2 - i1 <= 2 * context:  # joins the changes on both sides
            current.append((tag, i1, i2, j1, j2))
        else:  # ends this hunk, starts the next
            current.append((tag, i1, i1 + context, j1, j1 + context))
            hunks.append(current)
            current = [(tag, i2 - context, i2, j2 - context, j2)]
    if any(code[0] != "equal" for code in current):
        hunks.append(current)
    return hunks


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


def diff_metadata(old: str, new: str, path: str, cancel: Callable[[], None] | None = None) -> dict[str, object]:
    """The metadata every file-changing tool reports: trimmed diff and line counts."""
    diff, additions, removals = generate_diff(old, new, path, cancel)
    return {"diff": trim_diff(diff), "additions": additions, "removals": removals}


def span_diff_metadata(
    old: str, new: str, spans: list[Span] | None, path: str, cancel: Callable[[], None] | None = None
) -> dict[str, object]:
    """:func:`diff_metadata` for ``new`` made from ``old`` by ``spans`` (LF offsets in ``old``):
    a large file's diff is built from the lines around the spans only. A small file, unknown
    spans, or spans that do not make ``new`` get the whole-text diff."""
    if spans is None or (old.count("\n") <= SMALL_DIFF_LINES and new.count("\n") <= SMALL_DIFF_LINES):
        return diff_metadata(old, new, path, cancel)
    if not _spans_make(old, new, spans):
        return diff_metadata(old, new, path, cancel)
    diff, additions, removals = generate_span_diff(old, spans, path, cancel)
    return {"diff": trim_diff(diff), "additions": additions, "removals": removals}


def _spans_make(old: str, new: str, spans: list[Span]) -> bool:
    """Do ``spans`` turn ``old`` into ``new``? Checked without building a copy of either: the
    lengths add up and each replacement text stands where it must, with the characters around
    it as in ``old``."""
    ordered = sorted(spans)
    if len(old) + sum(len(text) - (end - start) for start, end, text in ordered) != len(new):
        return False
    shift = 0
    for start, end, text in ordered:
        at = start + shift
        if new[at : at + len(text)] != text or new[at - 1 : at] != old[start - 1 : start]:
            return False
        if new[at + len(text) : at + len(text) + 1] != old[end : end + 1]:
            return False
        shift += len(text) - (end - start)
    return True
