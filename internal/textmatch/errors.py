"""Refusals the model can act on: not found (with the closest region) and ambiguous (with lines)."""

from __future__ import annotations

import difflib

from ..errors import Ambiguous, NoMatch, ToolError
from ..vocabulary import set_flag, tool_name
from .lines import CANCEL_EVERY, MatchResult, Text, indent_of, split_old

#: How many ambiguous match line numbers an error lists.
MAX_LINES_LISTED = 10
#: Lines of the closest region shown when old_string is not found.
MAX_CLOSEST_LINES = 12
#: A region must be at least this similar to be offered as "closest".
MIN_CLOSEST_RATIO = 0.5
#: Files with fewer lines are scored line by line for the closest region; larger ones only on
#: lines sharing one of the CLOSEST_TOKENS rarest tokens of the probe, at most
#: MAX_CLOSEST_CANDIDATES of them.
MAX_CLOSEST_SCAN_LINES = 5000
CLOSEST_TOKENS = 3
MAX_CLOSEST_CANDIDATES = 2000


class EditError(ToolError):
    """An edit refused as planned: identical strings (``no_change``), an unplaceable
    re-indentation (``code="indentation_mismatch"``); the not-found and ambiguous cases are the
    typed :class:`NotFoundInFile` and :class:`AmbiguousEdit`."""

    code = "no_change"

    #: Which edit of a multi-edit failed (set by apply_edits).
    edit_index: int | None = None


class NotFoundInFile(EditError, NoMatch):
    """old_string matches nowhere (code ``no_match``); ``closest`` is the region shown."""

    code = "no_match"


class AmbiguousEdit(EditError, Ambiguous):
    """old_string matches several places (code ``ambiguous_match``); ``lines`` lists them."""

    code = "ambiguous_match"


def _visible(line: str) -> str:
    indent = indent_of(line)
    return indent.replace(" ", "·").replace("\t", "→   ") + line[len(indent) :]


def closest_region(f: Text, old: str) -> str:
    """The file lines most like old_string's first non-blank line, numbered, whitespace visible.

    Small files are scored line by line. In larger ones only lines that share one of the probe's
    rarest tokens are scored (at most MAX_CLOSEST_CANDIDATES), so the search stays bounded.
    """
    old_lines, _ = split_old(old)
    count = min(len(old_lines), MAX_CLOSEST_LINES)
    probe = next((line.strip() for line in old_lines if line.strip()), "")
    if not probe or not f.text:
        return ""
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(probe)
    scored = []
    for checked, start in enumerate(_candidate_lines(f, probe)):
        if checked % CANCEL_EVERY == 0:
            f.cancel()
        matcher.set_seq1(f.text[start : f.line_end(start)].strip())
        if matcher.real_quick_ratio() >= MIN_CLOSEST_RATIO and matcher.quick_ratio() >= MIN_CLOSEST_RATIO:
            scored.append((matcher.ratio(), -start))
    if not scored:
        return ""
    _score, best = max(scored)
    window = f.window(-best, 0, count) or f.window(-best, 0, 1)
    assert window is not None
    start, lines = window
    if difflib.SequenceMatcher(None, "\n".join(lines), "\n".join(old_lines[:count]), autojunk=False).ratio() < (
        MIN_CLOSEST_RATIO
    ):
        return ""
    first = f.line_number(start)
    return "\n".join(f"{first + i:6d}|{_visible(line)}" for i, line in enumerate(lines))


def _candidate_lines(f: Text, probe: str) -> list[int]:
    """Start offsets of the lines worth scoring against ``probe``."""
    if f.text.count("\n") < MAX_CLOSEST_SCAN_LINES:
        starts = [0]
        at = f.text.find("\n")
        while at >= 0:
            starts.append(at + 1)
            at = f.text.find("\n", at + 1)
        return starts[:-1] if starts[-1] == len(f.text) and len(starts) > 1 else starts
    tokens = sorted({t for t in probe.split() if len(t) >= 2}, key=lambda t: (f.text.count(t), -len(t)))
    found: set[int] = set()
    for token in tokens[:CLOSEST_TOKENS]:
        at = f.text.find(token)
        while at >= 0 and len(found) < MAX_CLOSEST_CANDIDATES:
            start = f.line_start(at)
            found.add(start)
            at = f.text.find(token, f.line_end(start))
    return sorted(found)


def not_found(f: Text, old: str, new: str, path: str) -> NotFoundInFile:
    message = (
        f"old_string was not found in {path}. It must match the file's text exactly "
        "(whitespace differences in indentation and at line ends are tolerated)."
    )
    region = closest_region(f, old)
    if region:
        message += (
            "\n\nThe closest region in the file (whitespace shown as · for spaces, → for tabs):\n"
            f"{region}\n\nCopy the exact text from the file (use {tool_name('view')}) and try again."
        )
    else:
        message += f" Use {tool_name('view')} to read the current text and copy it exactly."
    at = f.text.find(new) if new else -1
    if at >= 0:
        line = f.line_number(at)
        message += f"\n\nNote: new_string already appears in the file (line {line}); the edit may already be applied."
    return NotFoundInFile(message, region)


def ambiguous(f: Text, result: MatchResult) -> AmbiguousEdit:
    lines = f.line_numbers([r.start for r in result.replacements])
    listed = ", ".join(map(str, lines[:MAX_LINES_LISTED])) + (", …" if len(lines) > MAX_LINES_LISTED else "")
    return AmbiguousEdit(
        f"old_string appears {len(lines)} times in the file (lines {listed}). Provide more surrounding "
        f"context to make the match unique{set_flag('edit', 'replace_all')}.",
        lines,
    )
