from __future__ import annotations

import pytest
from agent_toolsmith.diff import generate_diff, trim_diff
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import apply_unified_diff

# Few distinct lines so diffs have shared context; \r and \x0c and U+2028 must not split lines.
lines = st.lists(st.sampled_from(["a", "b", "  c", "\td", "e\r", "f\x0cg", "h\u2028i", "", "x y"]), max_size=30)


@st.composite
def texts(draw: st.DrawFn) -> str:
    body = "\n".join(draw(lines))
    return body + draw(st.sampled_from(["", "\n"]))


@given(texts(), texts())
def test_diff_round_trips_through_unidiff(old: str, new: str) -> None:
    diff, additions, removals = generate_diff(old, new, "dir/file.txt")
    assert apply_unified_diff(old, diff) == new
    if old == new:
        assert diff == "" and additions == removals == 0
    else:
        assert diff.startswith("--- a/dir/file.txt\n+++ b/dir/file.txt\n@@ ")


@given(texts(), texts())
def test_counts_match_lines(old: str, new: str) -> None:
    diff, additions, removals = generate_diff(old, new, "f")
    body = [line for line in diff.split("\n")[2:] if line]
    assert additions == sum(1 for line in body if line.startswith("+"))
    assert removals == sum(1 for line in body if line.startswith("-"))


def test_no_newline_marker() -> None:
    diff, _, _ = generate_diff("a\nb", "a\nc", "f")
    assert "-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n" in diff


def test_trim_diff_strips_common_indent_but_not_headers() -> None:
    diff, _, _ = generate_diff("    if x:\n        a()\n\n    b()\n", "    if x:\n        z()\n\n    b()\n", "p.py")
    trimmed = trim_diff(diff)
    assert trimmed.splitlines()[:2] == ["--- a/p.py", "+++ b/p.py"]
    assert " if x:" in trimmed.splitlines()
    assert "-    a()" in trimmed.splitlines()
    assert "+    z()" in trimmed.splitlines()


def test_trim_diff_leaves_unindented_diff_alone() -> None:
    diff, _, _ = generate_diff("a\n  b\n", "a\n  c\n", "f")
    assert trim_diff(diff) == diff


@given(texts(), texts())
def test_trim_diff_only_removes_whitespace(old: str, new: str) -> None:
    diff, _, _ = generate_diff(old, new, "f")
    trimmed = trim_diff(diff)
    assert [line.replace(" ", "").replace("\t", "") for line in diff.split("\n")] == [
        line.replace(" ", "").replace("\t", "") for line in trimmed.split("\n")
    ]


def _reference_diff(old: str, new: str, path: str) -> str:
    """The diff as this project always produced it: difflib over the whole file."""
    import difflib

    from agent_toolsmith.diff.diff import _hunk_range, _prefixed, split_lines

    a, b = split_lines(old), split_lines(new)
    out: list[str] = []
    for group in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_grouped_opcodes(3):
        if not out:
            out += [f"--- a/{path}\n", f"+++ b/{path}\n"]
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ -{_hunk_range(i1, i2 - i1)} +{_hunk_range(j1, j2 - j1)} @@\n")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out += _prefixed(" ", a[a1:a2])
            if tag in ("replace", "delete"):
                out += _prefixed("-", a[a1:a2])
            if tag in ("replace", "insert"):
                out += _prefixed("+", b[b1:b2])
    return "".join(out)


@given(texts(), texts())
def test_small_files_diff_exactly_as_before(old: str, new: str) -> None:
    assert generate_diff(old, new, "f")[0] == _reference_diff(old, new, "f")


many_lines = st.lists(st.sampled_from(["a", "b", "c", "", "x", "y", "unique1", "unique2", "}"]), max_size=80)


@given(many_lines, st.lists(st.tuples(st.integers(0, 80), st.integers(0, 4), many_lines), max_size=4))
def test_large_file_path_round_trips(base: list[str], edits: list[tuple[int, int, list[str]]]) -> None:
    """The windowed/anchored path (forced on small inputs) still gives a diff that applies exactly."""
    import agent_toolsmith.diff.diff as diff_module

    new_lines = list(base)
    for at, removed, added in edits:
        at = min(at, len(new_lines))
        new_lines[at : at + removed] = added[:5]
    old, new = "\n".join(base) + "\n", "\n".join(new_lines) + "\n"
    original = diff_module.SMALL_DIFF_LINES
    diff_module.SMALL_DIFF_LINES = 2
    try:
        diff, additions, removals = generate_diff(old, new, "f")
    finally:
        diff_module.SMALL_DIFF_LINES = original
    assert apply_unified_diff(old, diff) == new
    body = [line for line in diff.split("\n")[2:] if line]
    assert additions == sum(1 for line in body if line.startswith("+"))
    assert removals == sum(1 for line in body if line.startswith("-"))


def test_a_one_line_change_in_ten_megabytes_diffs_only_around_it() -> None:
    """Whole-file difflib took minutes here (bench/edit_scale.py times it); the diff is the same."""
    old = "".join(f"def function_{i}(x):\n    return x + {i}\n\n" for i in range(300_000))
    new = old.replace("def function_150000(x):", "def changed(x):")
    diff, additions, removals = generate_diff(old, new, "big.py")
    assert (additions, removals) == (1, 1)
    assert diff.count("@@ -") == 1 and "@@ -449998,7 +449998,7 @@" in diff
    assert apply_unified_diff(old, diff) == new


def test_patch_context_is_found_nearest_its_line_and_under_each_pass() -> None:
    # Only the lines a chunk can start with are indexed; every occurrence of them still counts:
    # the one nearest the hunk's line number wins, later passes (trailing spaces) still find
    # context, and context found only before an earlier chunk is placed with the misplaced fuzz.
    from agent_toolsmith.diff.patch import Chunk, PatchError, apply_chunks

    text = "x\na\nb\nx\na\nb\nc  \nd\n"
    near_end = Chunk(header=None, lines=[(" ", "a"), ("-", "b"), ("+", "B")], anchor=4)
    replacements, applied = apply_chunks(text, [near_end], "f")
    assert replacements == [(8, 12, "a\nB\n")] and applied[0].line == 5
    near_start = Chunk(header=None, lines=[(" ", "a"), ("-", "b"), ("+", "B")], anchor=0)
    assert apply_chunks(text, [near_start], "f")[0] == [(2, 6, "a\nB\n")]
    trailing = Chunk(header=None, lines=[(" ", "c"), ("-", "d"), ("+", "D")])
    replacements, applied = apply_chunks(text, [trailing], "f")
    assert replacements == [(12, 18, "c  \nD\n")] and applied[0].pass_name == "trailing_whitespace"
    first = Chunk(header=None, lines=[(" ", "d"), ("+", "e")])
    behind = Chunk(header=None, lines=[(" ", "x"), ("-", "a"), ("+", "A")])
    with pytest.raises(PatchError, match=r"matched only with fuzz \d+ .*found at line 1, before an earlier chunk"):
        apply_chunks(text, [first, behind], "f")


def test_context_found_at_its_hunks_line_is_taken_there_whatever_repeats_around_it() -> None:
    # The lookup first tries the hunk's own line (no index built when every hunk is where it says);
    # elsewhere it is the nearest occurrence, as before.
    from agent_toolsmith.diff.patch import Chunk, apply_chunks

    text = "a\nb\n" * 6
    for anchor in range(0, 12, 2):
        chunk = Chunk(header=None, lines=[(" ", "a"), ("-", "b"), ("+", "B")], anchor=anchor)
        replacements, applied = apply_chunks(text, [chunk], "f")
        assert replacements == [(anchor * 2, anchor * 2 + 4, "a\nB\n")] and applied[0].line == anchor + 1
        off_by_one = Chunk(header=None, lines=[(" ", "a"), ("-", "b"), ("+", "B")], anchor=anchor + 1)
        # One line off: the occurrences before and after are as near; the first one wins.
        assert apply_chunks(text, [off_by_one], "f")[0] == [(anchor * 2, anchor * 2 + 4, "a\nB\n")]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="ab\u00e9", max_size=5), max_size=30), st.lists(st.integers(0, 30), max_size=12))
def test_line_starts_asked_in_any_order_are_where_the_lines_start(lines: list[str], asked: list[int]) -> None:
    from agent_toolsmith.diff.patch import LineStarts

    text = "\n".join(lines)
    table = [0]
    for line in lines:
        table.append(table[-1] + len(line) + 1)
    starts = LineStarts(lines)
    for line in [a % (len(lines) + 1) for a in asked]:
        assert starts[line] == table[line]
        assert line == len(lines) or text[starts[line] :].startswith(lines[line])
