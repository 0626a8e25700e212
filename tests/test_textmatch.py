"""Each matching tier: what it forgives, and the near misses it must refuse."""

from __future__ import annotations

import pytest
from agent_toolsmith.textmatch import EditError, apply_plan, find, plan_edit
from hypothesis import given
from hypothesis import strategies as st

PY = """class A:
    def f(self, x):
        if x:
            return  1
        return 2

    def g(self):
        return 3
"""


def edit(content: str, old: str, new: str, replace_all: bool = False) -> tuple[str, str]:
    plan = plan_edit(content, old, new, replace_all=replace_all, path="f.py")
    return apply_plan(content, plan), plan.tier


def test_exact() -> None:
    out, tier = edit(PY, "return 3", "return 4")
    assert tier == "exact" and out == PY.replace("return 3", "return 4")


def test_trailing_whitespace() -> None:
    content = "a = 1   \nb = 2\t\nc = 3\n"
    out, tier = edit(content, "a = 1\nb = 2\n", "a = 10\nb = 20\n")
    assert tier == "trailing_whitespace" and out == "a = 10\nb = 20\nc = 3\n"


def test_indentation_shift_reindents_new_string() -> None:
    old = "def g(self):\n    return 3\n"  # sent without the class-level indentation
    new = "def g(self):\n    if True:\n        return 4\n"
    out, tier = edit(PY, old, new)
    assert tier == "indentation"
    assert out.endswith("    def g(self):\n        if True:\n            return 4\n")


def test_indentation_tabs_vs_spaces() -> None:
    content = "def f():\n\tif x:\n\t\ty = 1\n\treturn y\n"
    out, tier = edit(content, "    if x:\n        y = 1\n", "    if x:\n        y = 2\n        z = 3\n")
    assert tier == "indentation"
    assert out == "def f():\n\tif x:\n\t\ty = 2\n\t\tz = 3\n\treturn y\n"


def test_whitespace_normalised() -> None:
    out, tier = edit(PY, "if x:\n    return 1", "if x:\n    return 5")
    assert tier == "whitespace"
    assert "        if x:\n            return 5\n" in out


def test_escapes() -> None:
    content = 'msg = "a"\nprint(msg)\n'
    out, tier = edit(content, 'msg = \\"a\\"\\nprint(msg)', 'msg = \\"b\\"\\nprint(msg)')
    assert tier == "escapes" and out == 'msg = "b"\nprint(msg)\n'


def test_punctuation_folding_keeps_ascii_file_ascii() -> None:
    content = 'say("it\'s -- fine")\n'
    out, tier = edit(content, "say(\u201cit\u2019s -- fine\u201d)", "say(\u201cit\u2019s ok\u201d)")
    assert tier == "punctuation" and out == 'say("it\'s ok")\n'


def test_trimmed_blank_lines() -> None:
    content = "a\nb\nc\n"
    out, tier = edit(content, "\n\nb\n\n\n", "B")
    assert out == "a\nB\nc\n"
    assert tier in ("trimmed", "exact", "trailing_whitespace")


def test_first_line_indentation_missing_with_shift() -> None:
    content = "class A:\n    def f(self):\n        return 1\n"
    # First line lacks its indentation AND the body is indented by a different amount.
    out, tier = edit(content, "def f(self):\n      return 1", "def f(self):\n      return 2")
    assert out == "class A:\n    def f(self):\n        return 2\n"
    assert tier in ("indentation", "first_line_indent")


def test_ambiguity_lists_lines() -> None:
    content = "x = 1\ny = 2\nx = 1\n"
    with pytest.raises(EditError) as err:
        plan_edit(content, "x = 1", "x = 3", replace_all=False, path="f")
    assert "old_string appears 2 times in the file (lines 1, 3)" in err.value.message
    out, _ = edit(content, "x = 1", "x = 3", replace_all=True)
    assert out == "x = 3\ny = 2\nx = 3\n"


def test_ambiguity_within_fuzzy_tier() -> None:
    content = "if a:\n    go()\nif b:\n  go()\n"
    with pytest.raises(EditError, match="appears 2 times"):
        plan_edit(content, "   go()  \n", "stop()\n", replace_all=False, path="f")


@pytest.mark.parametrize(
    "old",
    [
        "return 1\n        return 2",  # wrong structure: lines swapped relative depth
        "def g(self):\n    return 4",  # different token
        "if x:\n    return1",  # missing separation
        "def f(self, y):",  # different parameter
        "        if x:\n        return  1",  # relative indentation changed
    ],
)
def test_near_misses_are_refused(old: str) -> None:
    with pytest.raises(EditError, match="was not found"):
        plan_edit(PY, old, "X", replace_all=False, path="f.py")


def test_not_found_shows_closest_region_and_already_applied_note() -> None:
    content = "def f():\n\treturn 1\n"
    with pytest.raises(EditError) as err:
        plan_edit(content, "def f():\n\treturn  2  # x", "def f():\n\treturn 1", replace_all=False, path="f")
    message = err.value.message
    assert "     2|→   return 1" in message
    assert "new_string already appears in the file (line 1)" in message


def test_identical_strings_refused() -> None:
    with pytest.raises(EditError, match="identical"):
        plan_edit("a", "a", "a", replace_all=False, path="f")


TOKENS = ("x", "y", "value", "return", "if", "=", "+", "(", ")", ":", "1", "'a b'")


@st.composite
def source_lines(draw: st.DrawFn) -> str:
    """A line of code-like tokens: indentation, then tokens separated by runs of spaces/tabs."""
    indent = draw(st.sampled_from(["", "    ", "        ", "\t", "  "]))
    tokens = draw(st.lists(st.sampled_from(TOKENS), min_size=1, max_size=5))
    gaps = [draw(st.sampled_from([" ", " ", "  ", "\t"])) for _ in tokens[1:]]
    trailing = draw(st.sampled_from(["", "", " ", "\t"]))
    return indent + "".join(t + g for t, g in zip(tokens, [*gaps, ""], strict=True)) + trailing


@st.composite
def edit_cases(draw: st.DrawFn) -> tuple[str, str, str]:
    """A file, an old_string taken from it (as a model would copy it: exactly, or with spacing,
    indentation or trailing whitespace off), and a new_string. Most cases match somewhere."""
    lines = draw(st.lists(source_lines(), min_size=1, max_size=10))
    content = "\n".join(lines) + "\n"
    start = draw(st.integers(0, len(lines) - 1))
    end = draw(st.integers(start + 1, min(len(lines), start + 3)))
    taken = lines[start:end]
    slip = draw(st.sampled_from(["exact", "exact", "trailing", "spacing", "indent", "part"]))
    if slip == "trailing":
        taken = [line.rstrip() for line in taken]
    elif slip == "spacing":
        taken = [line[: len(line) - len(line.lstrip())] + " ".join(line.split()) for line in taken]
    elif slip == "indent":
        taken = ["    " + line for line in taken]
    elif slip == "part" and len(taken[0].strip()) > 1:
        taken = [taken[0].strip()[1:]]
    old = "\n".join(taken) + draw(st.sampled_from(["", "\n"]))
    new = "\n".join(draw(st.lists(source_lines(), min_size=0, max_size=3)))
    return content, old, new


@given(edit_cases())
def test_exact_unique_edit_equals_str_replace(case: tuple[str, str, str]) -> None:
    content, old, new = case
    if old == new:
        with pytest.raises(EditError, match="identical"):
            plan_edit(content, old, new, replace_all=False, path="f")
        return
    count = content.count(old)
    if count > 1:
        with pytest.raises(EditError, match=f"appears {count} times"):
            plan_edit(content, old, new, replace_all=False, path="f")
        return
    if count == 0:
        return  # a forgiving tier's business: the next property covers it
    result = find(content, old, new)
    assert result is not None and result.tier == "exact"
    out = apply_plan(content, plan_edit(content, old, new, replace_all=False, path="f"))
    if out != content.replace(old, new, 1):
        # The first-line slip: old_string began at the line's first visible character and
        # new_string carries that indentation; the whole line is replaced instead.
        assert new.startswith(content[: content.index(old)].rsplit("\n", 1)[-1])


@given(edit_cases())
def test_any_applied_edit_keeps_everything_outside_the_span(case: tuple[str, str, str]) -> None:
    """Whatever tier applies, the result is the file with one span replaced: every character
    outside the span is unchanged, the span holds old_string's tokens (never joined or split),
    and the replacement holds new_string's."""
    content, old, new = case
    try:
        plan = plan_edit(content, old, new, replace_all=False, path="f")
    except EditError:
        return
    (r,) = plan.replacements
    assert r.text is not None
    out = apply_plan(content, plan)
    assert out[: r.start] == content[: r.start]
    assert out[r.start + len(r.text) :] == content[r.end :]
    span = content[r.start : r.end]
    if plan.tier not in ("escapes", "punctuation"):
        assert span.split() == old.split()
        assert r.text.split() == new.split()


@pytest.mark.parametrize(
    ("content", "old"),
    [
        ("value = returnx\n", "value = return x\n"),
        ("value = return x\n", "value = returnx\n"),
        ("    value  =  returnx\n", "value = return x"),
        ("if a:\n    value = return x\n", "value =return x\n"),
    ],
)
def test_the_whitespace_tier_never_joins_or_splits_tokens(content: str, old: str) -> None:
    with pytest.raises(EditError, match="was not found"):
        plan_edit(content, old, "replaced\n", replace_all=False, path="f")


def test_match_whose_new_string_cannot_be_reindented_still_counts_for_ambiguity() -> None:
    content = "if a:\n    go()\nif b:\n  go()\n"
    with pytest.raises(EditError, match="appears 2 times"):
        plan_edit(content, "   go()  \n", "stop()\n", replace_all=False, path="f")
    with pytest.raises(EditError, match="cannot be shifted the same way"):
        plan_edit("if b:\n  go()\n", "   go()\n", "stop()\n", replace_all=False, path="f")


def test_old_ending_in_newline_never_consumes_past_end_of_file() -> None:
    content = "x = 1\n\nimport os\nprint(os)\n"
    out, _ = edit(content, "\nimport os\nprint(os)\n\n", "\nimport os\nprint(os.sep)\n\n")
    assert out == "x = 1\n\nimport os\nprint(os.sep)\n"


# --- the first-line slip ---------------------------------------------------------------------

GO = "package p\n\nfunc F(x int) int {\n\tif x > 0 {\n\t\treturn x\n\t}\n\treturn -x\n}\n"


@pytest.mark.parametrize(
    ("content", "old", "new", "expected"),
    [
        (PY, "def g(self):\n        return 3", "    def g(self):\n        return 4",
         PY.replace("return 3", "return 4")),
        (GO, "if x > 0 {\n\t\treturn x", "\tif x >= 0 {\n\t\treturn x", GO.replace("x > 0", "x >= 0")),
        (GO, "return -x", "\treturn 0 - x", GO.replace("return -x", "return 0 - x")),
    ],
)  # fmt: skip
def test_first_line_slip_replaces_the_whole_line(content: str, old: str, new: str, expected: str) -> None:
    out, tier = edit(content, old, new)
    assert out == expected and tier == "first_line_indentation"


def test_first_line_slip_never_applies_after_other_text() -> None:
    content = "x = compute()\n"
    out, tier = edit(content, "compute()", "    other()")
    assert tier == "exact" and out == "x =     other()\n"  # as asked: the match is mid-line after text


def test_first_line_slip_needs_the_same_indentation_in_new_string() -> None:
    out, tier = edit(PY, "return 3", "return 4")  # new_string without indentation: a plain exact edit
    assert tier == "exact" and out == PY.replace("return 3", "return 4")


# --- tabs and spaces ---------------------------------------------------------------------------

GO_DEEP = (
    "func walk() {\n\tfor {\n\t\tif ok {\n\t\t\tvisit(a,\n\t\t\t  include_hidden=true)\n"
    "\t\t\tdone()\n\t\t}\n\t}\n}\n"
)


def test_spaces_for_tabs_with_a_continuation_line() -> None:
    old = "            visit(a,\n              include_hidden=true)\n            done()"
    new = "            visit(a,\n              include_hidden=false)\n            done()\n            log()"
    out, tier = edit(GO_DEEP, old, new)
    assert tier == "indentation"
    assert "\t\t\tvisit(a,\n\t\t\t  include_hidden=false)\n\t\t\tdone()\n\t\t\tlog()\n" in out


def test_a_short_dedenting_span_in_a_tab_file() -> None:
    content = "func f() {\n\tif a {\n\t\tif b {\n\t\t\t\tx()\n\t\t\t}\n\t\t}\n\t}\n}\n"
    old = "                x()\n            }\n        }"  # 16, 12, 8 spaces: only dedents
    new = "                y()\n            }\n        }"
    out, tier = edit(content, old, new)
    assert tier == "indentation" and "\t\t\t\ty()\n\t\t\t}\n\t\t}" in out


def test_two_space_tabs_in_a_go_file() -> None:
    old = "  for {\n    if ok {"
    new = "  for {\n    if ok && !stop {"
    out, tier = edit(GO_DEEP, old, new)
    assert tier == "indentation" and "\tfor {\n\t\tif ok && !stop {\n" in out


def test_mappings_that_disagree_on_new_string_are_refused() -> None:
    from agent_toolsmith.textmatch.indentation import _fit

    # old_string indents one level with two spaces in a tab file, new_string with a tab: read as
    # two-column tabs it fits, read as levels of two spaces it cannot be placed — no guess.
    fit = _fit([("", ""), ("\t", "  ")], "\tx", True, "\t", "  ")
    assert fit is not None and fit.body is None


_INDENT_PIECES = ["", " ", "  ", "    ", "\t", "\t ", " \t", "x", "a b", ":", "\f", "\u00a0", "\x1c", "\v", "\r"]


@given(st.lists(st.lists(st.sampled_from(_INDENT_PIECES), max_size=5).map("".join), max_size=40))
def test_the_file_indent_unit_is_the_indent_unit_of_its_lines(lines: list[str]) -> None:
    # The file-wide unit is found by regex scans; it must be exactly the line-by-line rule's
    # answer (blank lines skipped, tab-led lines counted but leaving the previous width).
    from agent_toolsmith.textmatch.lines import file_indent_unit, indent_unit

    text = "\n".join(lines)
    assert file_indent_unit(text) == indent_unit(text.split("\n"))


def test_the_file_indent_unit_samples_the_first_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_toolsmith.textmatch import lines as module

    monkeypatch.setattr(module, "UNIT_SAMPLE_LINES", 3)
    text = "a\n  b\n    c\n\td\n\te\n\tf\n\tg\n"
    assert module.file_indent_unit(text) == "  "  # the tab-led lines are past the sample
    assert module.file_indent_unit("a\n\tb\n\tc") == "\t"


_ANCHOR_WORDS = ["a", "ab", "aa", "abc", "x", "xx", "return", "y", "+", "1000"]


@given(
    st.lists(st.sampled_from(_ANCHOR_WORDS), max_size=300).map(" ".join),
    st.lists(st.lists(st.sampled_from(_ANCHOR_WORDS), max_size=6).map(" ".join), min_size=1, max_size=4),
)
def test_the_anchor_is_the_rarest_longest_token(text: str, old_lines: list[str]) -> None:
    # Counting stops early once a token cannot beat the best so far; the choice must stay the
    # rule's: the fewest occurrences, then the longest, then the first.
    from agent_toolsmith.textmatch.lines import MAX_ANCHOR_TOKENS, Text, _anchor

    tokens = sorted(
        ((len(token), i, token) for i, line in enumerate(old_lines) if line for token in line.split()), reverse=True
    )[:MAX_ANCHOR_TOKENS]
    expected = min(tokens, key=lambda t: (text.count(t[2]), -t[0])) if tokens else None
    found = _anchor(Text(text), old_lines, lambda line: line)
    assert found == (None if expected is None else (expected[1], expected[2]))
