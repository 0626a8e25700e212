from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from toolsmith.diff import generate_diff, trim_diff

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
