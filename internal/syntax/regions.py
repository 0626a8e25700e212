"""Where a change's regions are: the statements of a sequence (a module's, or a block's at its
column) that a change touches, found by lining the old and new texts up again at the statements
after it (local.py judges a module's, nested.py a block's)."""

from __future__ import annotations

import bisect

from ..affix import common_prefix_length
from .parse import changed_range

#: A change whose statements span more than this is judged by the whole-file parse.
MAX_LOCAL_BYTES = 256 * 1024
#: Statements shorter than this (``x = 1``, a one-line comment) are looked for, to line the texts
#: up again, only within SHORT_SYNC_WINDOW bytes of where the search starts: text that short
#: recurs all over a file, and a far match makes one long region of what lies between.
SYNC_MIN_BYTES = 24
SHORT_SYNC_WINDOW = 4096


#: A region: ``(low, high)`` in new, and within it where the changed statements start and end
#: (after the old statement it opens with, before the one found again it closes with).
Region = tuple[int, int, int, int]
#: ``new`` cut, in order: old statements found again (their starts in new), or a region.
Planned = list[tuple[list[int], Region | None]]


def inner_cut(new: bytes, region: Region, column: int = 0) -> tuple[int, int]:
    """The part of ``region`` to judge first: its changed statements without the unchanged one
    on either side, where leaving it out is safe. It is, before, when the first line of code
    starts at ``column``, the statements' own (nothing indented further can join the statement
    before; a clause such as ``else:`` does not parse alone); after, when the changed text ends a
    line without a
    continuation (the statement found again then starts as it did in the old file, and a
    statement never begins by continuing the one above)."""
    low, high, inner_low, inner_high = region
    text = new[inner_low:inner_high]
    if inner_low != low and not _code_starts_at_margin(text, column):
        inner_low = low
    if inner_high != high and text and (not text.endswith(b"\n") or text.endswith((b"\\\n", b"\\\r\n"))):
        inner_high = high
    return inner_low, inner_high


def _code_starts_at_margin(text: bytes, column: int) -> bool:
    """The first line of ``text`` that is neither blank nor a comment starts at ``column``."""
    lines = text.split(b"\n", 64)
    for line in lines:
        content = line.lstrip(b" \t\f\r")
        if content and not content.startswith(b"#"):
            return len(line) - len(content) == column and not line[:column].strip(b" ")
    return len(lines) <= 64  # only blank lines and comments (or more lines than were looked at)


def changed_regions(
    old: bytes, new: bytes, starts: list[int], changed: tuple[int, int, int] | None = None
) -> Planned | None:
    """``new`` cut, in order, into old statements found byte for byte (their starts in ``new``)
    and regions to parse on their own (:data:`Region`); None when a region would be larger than
    MAX_LOCAL_BYTES. ``changed``: ``changed_range(old, new)``, when the caller has it.

    A region runs from the statement before a difference to the end of the first old statement
    found again after it, so what a change can join to is inside it; a difference right after a
    region widens it. Statements are looked for only inside the one range that differs (outside
    it the texts are equal), at the start of a line (where a top-level statement starts), and
    those shorter than SYNC_MIN_BYTES only near where the search starts. Finding one in the wrong
    place costs speed, never truth: every byte that is not an old statement is parsed.
    """
    start, old_end, new_end = changed or changed_range(old, new)
    shift = new_end - old_end
    # ``starts`` is strictly increasing (a tree's statements in order, or carried in order), so
    # the cut points are it with 0 and the end added, and the statements before or after a point
    # are a slice: no pass over every statement of the file for a change to one of them.
    edges = starts if starts and starts[0] == 0 else [0, *starts]
    edges = [*edges, len(old)] if edges[-1] != len(old) else edges
    zero_is_start = bool(starts) and starts[0] == 0  # the one edge that may not be a statement
    count = len(edges) - 1
    eligible = bisect.bisect_left(edges, old_end, hi=count)  # statements from here on start after the change
    i = max(bisect.bisect_right(edges, start) - 2, 0)  # the statement before the change's
    q = edges[i]  # where old statement i starts in new
    out: Planned = [(starts[: bisect.bisect_left(starts, q)], None)]
    while True:
        # The old statements from i on that new repeats byte for byte from q: all those that end
        # within the run of equal bytes there (one bounded compare, not one per statement).
        base = edges[i]
        equal = _equal_run(old, new, base, q, edges[eligible] - base) if i < eligible else 0
        k = max(min(bisect.bisect_right(edges, base + equal) - 1, eligible), i)
        kept = edges[i:k] if i or zero_is_start else edges[1:k]  # edge 0 may not be a statement
        kept = list(map((q - base).__add__, kept)) if q != base else kept
        q += edges[k] - base
        i = k
        if i >= count and q == len(new):
            out.append((kept, None))
            return out
        if i < count and edges[i] >= old_end and q == edges[i] + shift:
            after = starts[bisect.bisect_left(starts, edges[i]) :]
            out.append((kept + (list(map(shift.__add__, after)) if shift else after), None))
            return out
        inner_low = q
        if kept:  # the region opens with the last statement found equal
            q -= edges[i] - edges[i - 1]
            low = q
            out.append((kept[:-1], None))
        elif (previous := out[-1][1]) is not None:  # right after a region: that region goes on
            out.pop()
            low, inner_low = previous[0], previous[2]
        else:
            low = q
        j, found = _found_again(old, new, edges, i + 1, q, old_end, shift)
        high = found + (edges[j + 1] - edges[j]) if j < count else len(new)
        if high - low > MAX_LOCAL_BYTES:
            return None
        out.append(([], (low, high, inner_low, found if j < count else high)))
        if j >= count:
            return out
        i, q = j + 1, high


def _equal_run(old: bytes, new: bytes, at_old: int, at_new: int, limit: int) -> int:
    """How many bytes ``old`` from ``at_old`` and ``new`` from ``at_new`` share (at most
    ``limit``): windows doubling in size, so the bytes copied stay within twice the run."""
    run, window = 0, 4096
    while run < limit:
        take = min(window, limit - run)
        x = old[at_old + run : at_old + run + take]
        y = new[at_new + run : at_new + run + take]
        if x == y and len(y) == take:
            run += take
            window *= 2
            continue
        return run + common_prefix_length(x, y)
    return run


def _found_again(
    old: bytes, new: bytes, edges: list[int], first: int, since: int, old_end: int, shift: int
) -> tuple[int, int]:
    """The first old statement from ``first`` on that is found in ``new`` at or after ``since``:
    its index and where; ``(len(edges) - 1, len(new))`` when none is."""
    for j in range(first, len(edges) - 1):
        if edges[j] >= old_end:
            at = edges[j] + shift
            if at >= since:
                return j, at
            continue
        statement = old[edges[j] : edges[j + 1]]
        window = MAX_LOCAL_BYTES if len(statement) >= SYNC_MIN_BYTES else SHORT_SYNC_WINDOW
        at = _at_line_start(new, statement, since, since + window + len(statement))
        if at >= 0:
            return j, at
    return len(edges) - 1, len(new)


def _at_line_start(text: bytes, piece: bytes, low: int, high: int) -> int:
    """Where ``piece`` first occurs in ``text[low:high]`` at the start of a line; -1 if nowhere."""
    at = text.find(piece, low, high)
    while at > 0 and text[at - 1] != 0x0A:
        at = text.find(piece, at + 1, high)
    return at


def assembled_starts(planned: Planned, cuts: list[tuple[int, int]], judged: list[list[int]]) -> list[int]:
    """The statement starts of ``new`` once each region's ``cuts`` were judged (``judged``: each
    cut's statement offsets): the old statements found again, and the regions' own."""
    regions = [region for _, region in planned if region is not None]
    found = iter(zip(regions, cuts, judged, strict=True))
    new_starts: list[int] = []
    for kept, region in planned:
        new_starts += kept
        if region is not None:
            (low, high, _, _), (cut_low, cut_high), offsets = next(found)
            new_starts += [low] if cut_low != low else []  # the statement left out before
            new_starts += [cut_low + offset for offset in offsets]
            new_starts += [cut_high] if cut_high != high else []  # and the one after
    return new_starts
