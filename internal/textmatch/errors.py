"""Refusals the model can act on: not found (with the closest region) and ambiguous (with lines)."""

from __future__ import annotations

import difflib

from ..errors import ToolError
from .lines import Lines, MatchResult, indent_of, line_of, line_starts, split_old

#: How many ambiguous match line numbers an error lists.
MAX_LINES_LISTED = 10
#: Lines of the closest region shown when old_string is not found.
MAX_CLOSEST_LINES = 12
#: A region must be at least this similar to be offered as "closest".
MIN_CLOSEST_RATIO = 0.5


class EditError(ToolError):
    #: Which edit of a multi-edit failed (set by apply_edits).
    edit_index: int | None = None


def _visible(line: str) -> str:
    indent = indent_of(line)
    return indent.replace(" ", "·").replace("\t", "→   ") + line[len(indent) :]


def closest_region(content: str, old: str) -> str:
    f = Lines.of(content)
    old_lines, _ = split_old(old)
    count = min(len(old_lines), MAX_CLOSEST_LINES)
    probe = next((line.strip() for line in old_lines if line.strip()), "")
    if not probe or not f.lines:
        return ""
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(probe)
    scored = []
    for i, line in enumerate(f.lines):
        matcher.set_seq1(line.strip())
        if matcher.real_quick_ratio() >= MIN_CLOSEST_RATIO and matcher.quick_ratio() >= MIN_CLOSEST_RATIO:
            scored.append((matcher.ratio(), i))
    if not scored:
        return ""
    _best_score, best = max(scored, key=lambda s: (s[0], -s[1]))
    window = "\n".join(f.lines[best : best + count])
    if difflib.SequenceMatcher(None, window, "\n".join(old_lines[:count]), autojunk=False).ratio() < MIN_CLOSEST_RATIO:
        return ""
    shown = [f"{best + i + 1:6d}|{_visible(line)}" for i, line in enumerate(f.lines[best : best + count])]
    return "\n".join(shown)


def not_found(content: str, old: str, new: str, path: str) -> EditError:
    message = (
        f"old_string was not found in {path}. It must match the file's text exactly "
        "(whitespace differences in indentation and at line ends are tolerated)."
    )
    region = closest_region(content, old)
    if region:
        message += (
            "\n\nThe closest region in the file (whitespace shown as · for spaces, → for tabs):\n"
            f"{region}\n\nCopy the exact text from the file (use view) and try again."
        )
    else:
        message += " Use view to read the current text and copy it exactly."
    if new and new in content:
        line = line_of(line_starts(content), content.find(new))
        message += f"\n\nNote: new_string already appears in the file (line {line}); the edit may already be applied."
    return EditError(message)


def ambiguous(content: str, result: MatchResult) -> EditError:
    starts = line_starts(content)
    lines = [line_of(starts, r.start) for r in result.replacements]
    listed = ", ".join(map(str, lines[:MAX_LINES_LISTED])) + (", …" if len(lines) > MAX_LINES_LISTED else "")
    return EditError(
        f"old_string appears {len(lines)} times in the file (lines {listed}). Provide more surrounding "
        "context to make the match unique, or set replace_all to true."
    )
