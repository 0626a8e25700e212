"""Planning and applying edits: the matcher's result checked, then spliced into the raw text."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from ..fsutil.textio import TextFile, normalize_eol
from ..vocabulary import tool_name
from .errors import EditError, ambiguous, not_found
from .gutter import gutter_match
from .lines import Replacement, Text
from .tiers import find


@dataclass(frozen=True)
class EditPlan:
    tier: str
    replacements: list[Replacement]


def plan_edit(
    content: str,
    old: str,
    new: str,
    *,
    replace_all: bool,
    path: str,
    cancel: Callable[[], None] | None = None,
    reindent: bool = True,
) -> EditPlan:
    """Where and what to replace, or an :class:`EditError` the model can act on.

    ``cancel`` is called between steps of a long search and may raise to stop it. ``reindent``:
    the mid-line rule applies (continuation.py); without it new_string is spliced as written.
    """
    if old == new:
        raise EditError("old_string and new_string are identical: there is nothing to change.")
    f = Text(content, cancel) if cancel is not None else Text(content)
    result = find(f, old, new, reindent=reindent)
    if result is None:
        result = gutter_match(f, old, new, path, reindent=reindent)
    if result is None:
        raise not_found(f, old, new, path)
    if len(result.replacements) > 1 and not replace_all:
        raise ambiguous(f, result)
    for r in result.replacements:
        if r.text is None:
            line = f.line_number(r.start)
            raise EditError(
                f"old_string matched at line {line} with different indentation, but new_string cannot be "
                "shifted the same way (some of its lines would need less than no indentation). Send "
                f"old_string and new_string with the file's own indentation (use {tool_name('view')}).",
                code="indentation_mismatch",
            )
    return EditPlan(result.tier, result.replacements)


def apply_plan(content: str, plan: EditPlan) -> str:
    out, cursor = [], 0
    for r in plan.replacements:
        assert r.text is not None, "plan_edit refuses unplaceable replacements"
        out += [content[cursor : r.start], r.text]
        cursor = r.end
    out.append(content[cursor:])
    return "".join(out)


@dataclass(frozen=True)
class EditRequest:
    old_string: str
    new_string: str
    replace_all: bool = False


@dataclass(frozen=True)
class EditOutcome:
    file: TextFile
    tiers: list[str]
    replaced: int
    first_changed_line: int
    #: Offsets in the final LF text where the mid-line rule inserted indentation (continuation.py).
    inserted_indents: list[int] = dataclasses.field(default_factory=list)
    #: For a single edit: its replacements ``(start, end, text)`` in the original LF text (a
    #: description's diff is built from them); None for several edits.
    spans: list[tuple[int, int, str]] | None = None


def apply_edits(
    file: TextFile,
    edits: list[EditRequest],
    *,
    path: str,
    cancel: Callable[[], None] | None = None,
    reindent: bool = True,
) -> EditOutcome:
    """Apply ``edits`` in order to the evolving text; raise on the first that cannot apply.

    Each edit is spliced into the raw text, so line endings outside the spans never change.
    ``reindent``: the mid-line rule applies (continuation.py) and
    ``EditOutcome.inserted_indents`` lists where it inserted indentation, in the final LF text;
    without it every new_string is spliced as written.

    A file with one line ending throughout (nearly all) is edited in its LF text alone — one
    decode, each edit a find and a splice, the line endings put back once at the end — so many
    edits cost O(file + edits × (search + splice)), not a new decoded file per edit. A file with
    mixed line endings is spliced edit by edit in its raw text, keeping each line's own ending.
    """
    tiers: list[str] = []
    inserted: list[int] = []
    replaced = 0
    first_at: int | None = None  # where the first change is, in the current text
    uniform = _single_eol(file)
    text = file.text
    single: list[tuple[int, int, str]] | None = None
    for index, edit in enumerate(edits):
        old = normalize_eol(edit.old_string)
        new = normalize_eol(edit.new_string)
        try:
            plan = plan_edit(
                text, old, new, replace_all=edit.replace_all, path=path, cancel=cancel, reindent=reindent
            )
        except EditError as exc:
            exc.edit_index = index
            raise
        start = plan.replacements[0].start
        # Later edits after the first change leave the text before it alone; an earlier one
        # becomes the first change. So the minimum offset stays valid in the evolving text.
        first_at = start if first_at is None else min(first_at, start)
        spans = [(r.start, r.end, r.text) for r in plan.replacements if r.text is not None]
        inserted = _carried(inserted, plan.replacements)
        if len(edits) == 1:
            single = spans
        if uniform:
            text = _splice(text, spans)
        else:
            file = dataclasses.replace(file, raw=file.splice(spans, cancel))
            text = file.text
        tiers.append(plan.tier)
        replaced += len(plan.replacements)
    if uniform:
        file = dataclasses.replace(file, raw=file.with_eol(text))
    first_changed = text.count("\n", 0, first_at) + 1 if first_at is not None else 1
    return EditOutcome(file, tiers, replaced, first_changed, inserted, single)


def _single_eol(file: TextFile) -> bool:
    """Does every line break of ``file`` use its one line ending (so LF text maps back exactly)?"""
    if "\r" not in file.raw:
        return file.eol == "\n"
    return file.with_eol(file.text) == file.raw


def _splice(text: str, spans: list[tuple[int, int, str]]) -> str:
    pieces, cursor = [], 0
    for start, end, new in sorted(spans):
        pieces += [text[cursor:start], new]
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


def _carried(inserted: list[int], replacements: list[Replacement]) -> list[int]:
    """Where indentation was inserted, after splicing ``replacements``: earlier insertions moved
    by the spans before them (one inside a replaced span is gone with it), and this edit's own."""
    deltas: list[tuple[int, int, int]] = []
    fresh: list[int] = []
    shift = 0
    for r in sorted(replacements, key=lambda r: r.start):
        assert r.text is not None, "plan_edit refuses unplaceable replacements"
        fresh += [r.start + shift + o for o in r.indented]
        delta = len(r.text) - (r.end - r.start)
        deltas.append((r.start, r.end, delta))
        shift += delta
    moved = []
    for o in inserted:
        if any(start <= o < end for start, end, _ in deltas):
            continue
        moved.append(o + sum(d for _, end, d in deltas if end <= o))
    return sorted(moved + fresh)
