"""The syntax gate: does a change leave a file that parsed cleanly unparseable?

Every tool that changes a file's content (edit, multiedit, patch, write, symbol_edit) asks
:func:`judge` with the text before and after. The verdict is one of:

- ``None``: nothing to say (no grammar for the file, too large, too slow, or the result parses);
- ``breaks``: the file parsed cleanly before and does not after — refused by default;
- ``warns``: a new file with errors, or a file that already had errors and gains new ones — the
  change goes through with the new errors named.

The result parse is done first: a change whose result parses (the common case) never needs the
file's old state parsed at all; when it does, the old state's tree is usually the one the last
change left in the cache (trees are kept per snapshot). Errors are looked for from the change on,
and reported from there: the first error named is the first in or after the change. A file that
already has errors is judged, after the first change the gate saw, by the region the change
touches alone (local.py), not by parsing the whole file.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Literal

from .issues import SyntaxIssue
from .languages import language_for
from .local import ErrorKey, clean_by_statements, cut_points, error_keys, errors_kept_by_region
from .parse import MAX_PARSE_BYTES, Parsed, SyntaxCache, changed_range, parse

#: What the gate does with a change that breaks a clean file (config ``[edit] syntax_gate``).
GateMode = Literal["refuse", "warn", "off"]
GATE_MODES: tuple[str, ...] = ("refuse", "warn", "off")
#: Lines shown around the first error of a refused change.
CONTEXT_LINES = 2


@dataclass(frozen=True)
class Verdict:
    kind: Literal["breaks", "warns"]
    language: str
    #: The errors the change introduces (first ones, in file order).
    errors: list[SyntaxIssue]
    after: Parsed

    def where(self) -> str:
        return self.errors[0].where() if self.errors else "?"

    def summary(self) -> str:
        listed = "; ".join(f"line {e.where()}: {e.message}" for e in self.errors)
        return listed or "a syntax error"


def judge(before: str | None, after: str, path: str, *, cache: SyntaxCache | None = None) -> Verdict | None:
    """Judge replacing ``before`` (None for a new file) with ``after`` in ``path``."""
    if len(after) > MAX_PARSE_BYTES or language_for(path) is None:
        return None  # not parsed (parse.py would say so too): nothing to encode or look up
    if before is None:
        parsed = parse(after, path, cache=cache)
        errors = parsed.errors() if parsed is not None else []
        if parsed is None or not errors:
            return None
        _remember_errors(cache, path, parsed, errors)
        return Verdict("warns", parsed.language, errors, parsed)
    if cache is not None:
        encoded = (before.encode("utf-8", "surrogatepass"), after.encode("utf-8", "surrogatepass"))
        if errors_kept_by_region(before, after, path, cache, encoded=encoded):
            return None  # a file with errors: the change's region has the same ones (local.py)
        if clean_by_statements(before, after, path, cache, encoded=encoded):
            return None  # the changed statements parse on their own: so does the file (local.py)
    return _judge_whole(before, after, path, cache)


def _judge_whole(before: str, after: str, path: str, cache: SyntaxCache | None) -> Verdict | None:
    """The whole-file judgement: the result parsed (incrementally, from the tree of ``before``
    when the cache has it), its errors in and after the change, and — only when there are some —
    ``before``'s, to tell the new ones."""
    before_source = before.encode("utf-8", "surrogatepass")
    kept_before = cache.get_exact(path, before_source) if cache is not None else None
    if cache is not None and kept_before is not None:
        cache.put(path, kept_before)  # the newest: the parse below starts from the content it changes
    parsed_after = parse(after, path, cache=cache)
    if parsed_after is None:
        return None
    start, old_end, new_end = changed_range(before_source, parsed_after.source)
    if _clean_in_changed_lines(parsed_after, before_source, start, old_end, new_end):
        return None
    since = before_source.rfind(b"\n", 0, start) + 1  # the changed line's start: its statement is the change's
    after_errors = parsed_after.errors(since, new_end)
    if not after_errors and parsed_after.has_tree_errors:
        since = 0  # the parser's recovery put the error before the change: look from the top
        after_errors = parsed_after.errors(since, new_end)
    if not after_errors:
        return None
    _remember_errors(cache, path, parsed_after, after_errors)
    parsed_before = kept_before or parse(before, path, cache=cache)
    if parsed_before is None:
        return None
    if cache is not None:  # keep both snapshots, the result newest: the next change starts from it
        cache.put(path, parsed_before)
        cache.put(path, parsed_after)
    before_errors = parsed_before.errors(since, old_end)
    if not before_errors and not parsed_before.has_tree_errors:
        return Verdict("breaks", parsed_after.language, after_errors, parsed_after)
    known = error_keys(before_errors, before_source, start, old_end, changed_lines_alike=True)
    new = _not_in(after_errors, known, parsed_after.source, start, new_end)
    return Verdict("warns", parsed_after.language, new, parsed_after) if new else None


def _not_in(
    issues: list[SyntaxIssue], known: Counter[ErrorKey], source: bytes, start: int, end: int
) -> list[SyntaxIssue]:
    """The ``issues`` that are not ``known`` (each known key accounts for one issue)."""
    left = Counter(known)
    new = []
    for issue in issues:
        (key,) = error_keys([issue], source, start, end, changed_lines_alike=True)
        if left[key]:
            left[key] -= 1
        else:
            new.append(issue)
    return new


def _remember_errors(cache: SyntaxCache | None, path: str, parsed: Parsed, errors: list[SyntaxIssue]) -> None:
    """``parsed`` has syntax errors: keep where its top-level nodes start, so the next change to
    this content is judged by its region alone (local.errors_kept_by_region)."""
    if cache is not None and errors:
        cache.statements.put(path, parsed.source, cut_points(parsed.tree.root_node, parsed.source), broken=True)


#: A changed range spanning more lines than this is checked line group by line group when the
#: line count is unchanged (the common shape of a spread patch), unless it has more groups than
#: MAX_SPREAD_GROUPS: each group's check walks from the root, so a thousand of them cost more than
#: one walk over the whole range.
SPREAD_CHECK_MIN_LINES = 200
MAX_SPREAD_GROUPS = 100


def _clean_in_changed_lines(parsed: Parsed, before: bytes, start: int, old_end: int, new_end: int) -> bool:
    """True when a change spread over a long range leaves no error: no error node anywhere, and
    no indentation issue in the blocks around each group of changed lines. Decided only when the
    range keeps its line count (lines then pair up by position); False means "look the usual way",
    which checks the blocks overlapping the whole range — on a 10k-line file, more than the parse."""
    if parsed.has_tree_errors:
        return False
    old_lines = before[start:old_end].split(b"\n")
    new_lines = parsed.source[start:new_end].split(b"\n")
    if len(old_lines) != len(new_lines) or len(new_lines) < SPREAD_CHECK_MIN_LINES:
        return False
    groups: list[tuple[int, int]] = []
    at, open_group = start, False
    for old, new in zip(old_lines, new_lines, strict=True):
        if old != new:
            if not open_group:
                if len(groups) == MAX_SPREAD_GROUPS:
                    return False
                groups.append((at, at))
                open_group = True
            groups[-1] = (groups[-1][0], at + len(new))
        else:
            open_group = False
        at += len(new) + 1
    return not any(parsed.errors(group_start, group_end, limit=1) for group_start, group_end in groups)


def would_be_lines(text: str, line: int, context: int = CONTEXT_LINES) -> str:
    """The lines around ``line`` (1-based) of ``text``, numbered as view numbers them."""
    lines = text.split("\n")
    first = max(1, line - context)
    last = min(len(lines), line + context)
    marked = []
    for number in range(first, last + 1):
        marker = ">" if number == line else " "
        marked.append(f"{marker}{number:5d}|{lines[number - 1]}")
    return "\n".join(marked)
