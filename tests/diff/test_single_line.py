"""The one-changed-line shortcut of the span diff gives difflib's opcodes exactly, whatever the
lines around the change repeat (blank lines, braces, the changed line's own text elsewhere)."""

from __future__ import annotations

import difflib

from agent_toolsmith.diff.single_line import one_line_opcodes
from hypothesis import given, settings
from hypothesis import strategies as st

LINES = ["\n", "}\n", "x = 1\n", "    return x\n", "a\n", "b\n"]


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(LINES), max_size=12), st.integers(0, 11), st.sampled_from([*LINES, "new\n", "c\n"]))
def test_one_changed_line_gets_difflibs_opcodes(a: list[str], at: int, line: str) -> None:
    b = list(a)
    if b:
        b[at % len(b)] = line
    codes = one_line_opcodes(a, b)
    difflib_codes = difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
    if codes is not None:
        assert codes == difflib_codes
    changed = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
    if len(changed) == 1 and a[changed[0]] not in b and b[changed[0]] not in a:
        assert codes is not None  # the shortcut is taken where it applies


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(LINES), max_size=10), st.lists(st.sampled_from(LINES), max_size=10))
def test_anything_else_is_left_to_difflib_or_matches_it(a: list[str], b: list[str]) -> None:
    codes = one_line_opcodes(a, b)
    assert codes is None or codes == difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()


def test_the_window_of_a_one_line_change() -> None:
    a = ["def f():\n", "    if x:\n", "        return 1\n", "    return 0\n", "\n"]
    b = [*a[:2], "        return 2\n", *a[3:]]
    assert one_line_opcodes(a, b) == [("equal", 0, 2, 0, 2), ("replace", 2, 3, 2, 3), ("equal", 3, 5, 3, 5)]
    assert one_line_opcodes(a, a) is None
    assert one_line_opcodes(a, a[:-1]) is None
