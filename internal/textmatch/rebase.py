"""Is an edit planned on an old read still right on the file's current content?

The model planned its edit on ``base`` (the content it read); the file now holds ``current``
(a formatter, a hook or an editor changed it). The edit was applied to both: ``ours`` (on base)
and ``ours_on_current``. The edit is still right when it commutes with the outside change: the
lines our edit touches were left alone by the outside change, and applying our edit to current
gives exactly current with our region swapped in. Anything else — the outside change touched
or bordered our lines, the edit matched elsewhere, a different number of places — is refused.
"""

from __future__ import annotations

import difflib

#: Beyond this many lines, the line diff of base and current is not computed (refused instead).
MAX_REBASE_LINES = 20_000


def commutes(base: str, ours: str, current: str, ours_on_current: str) -> bool:
    base_lines = base.splitlines(keepends=True)
    ours_lines = ours.splitlines(keepends=True)
    current_lines = current.splitlines(keepends=True)
    if max(len(base_lines), len(current_lines)) > MAX_REBASE_LINES:
        return False
    start, base_end, ours_end = _changed_lines(base_lines, ours_lines)
    matcher = difflib.SequenceMatcher(None, base_lines, current_lines, autojunk=False)
    anchor: int | None = None
    for tag, i1, i2, j1, _j2 in matcher.get_opcodes():
        if tag == "equal":
            if i1 <= start and base_end <= i2:
                anchor = j1 + (start - i1)
            continue
        if tag == "insert":
            if start < i1 < base_end:
                return False
        elif (i1 < base_end and start < i2) or (start == base_end and i1 < start < i2):
            return False
    if anchor is None:
        return False
    expected = current_lines[:anchor] + ours_lines[start:ours_end] + current_lines[anchor + (base_end - start) :]
    return "".join(expected) == ours_on_current


def _changed_lines(old: list[str], new: list[str]) -> tuple[int, int, int]:
    """``(start, old_end, new_end)`` in lines: the one range where ``old`` and ``new`` differ."""
    limit = min(len(old), len(new))
    start = 0
    while start < limit and old[start] == new[start]:
        start += 1
    suffix = 0
    while suffix < limit - start and old[len(old) - 1 - suffix] == new[len(new) - 1 - suffix]:
        suffix += 1
    return start, len(old) - suffix, len(new) - suffix
