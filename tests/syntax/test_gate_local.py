"""The gate's fast path (syntax/local.py) never calls a change clean that the whole-file parse
would not: checked on a real module with edits drawn the way models make them, one after another
(so the statement starts carried from change to change are exercised too)."""

from __future__ import annotations

import inspect
import textwrap

import pytest
from agent_toolsmith.syntax import judge
from agent_toolsmith.syntax.local import clean_by_statements
from agent_toolsmith.syntax.parse import Parsed, SyntaxCache, parse
from agent_toolsmith.syntax.regions import changed_regions as _regions
from hypothesis import given, settings
from hypothesis import strategies as st

SOURCE = inspect.getsource(textwrap)
#: A module of short top-level statements (shorter than SYNC_MIN_BYTES), where the texts are lined
#: up again near each change: among them a multi-line string whose lines repeat statements at
#: column 0, and a bracket continued at column 0 — places a short statement is found in wrong.
SHORT_SOURCE = "".join(
    f"x = {i}\n" if i % 7 else f"s = '''\nx = {i + 1}\n# c\n'''\nt = [\nx,\n]\n# c\n" for i in range(300)
)
#: Replacement lines: fine ones, and every way a model's slip breaks Python, including ones that
#: only break because of what is around them (an else with no if, a continuation at the end).
SNIPPETS = [
    "x = 1", "    x = 1", "def f():", "def f():\n    return 1", "    return 1", "else:", "elif x:",
    "@decorator", "x = (", ")", '"""', "'''", "x = 1 \\", "class C:", "class C:\n    pass", "#",
    "import os", "", "        pass", "if x:\n    pass\nelse:\n    pass", "try:", "except ValueError:",
    "lambda: (", "]", "async def g():\n    await h()", "    @property", "s = '''\ncol0\n'''",
]  # fmt: skip

edits = st.lists(
    st.tuples(st.floats(0, 1), st.integers(0, 3), st.lists(st.sampled_from(SNIPPETS), max_size=3)),
    min_size=1,
    max_size=6,
)


def _apply(text: str, where: float, removed: int, inserted: list[str]) -> str:
    lines = text.split("\n")
    at = int(where * len(lines))
    return "\n".join([*lines[:at], *inserted, *lines[at + removed :]])


@settings(deadline=None)
@given(edits)
def test_a_change_called_clean_by_its_statements_is_clean_in_the_whole_file(
    changes: list[tuple[float, int, list[str]]],
) -> None:
    cache = SyntaxCache()
    before = SOURCE
    assert parse(before, "m.py", cache=cache) is not None  # the session's tree, as after a change
    for where, removed, inserted in changes:
        after = _apply(before, where, removed, inserted)
        if after == before:
            continue
        if clean_by_statements(before, after, "m.py", cache):
            assert judge(before, after, "m.py") is None, (where, removed, inserted)
            whole = parse(after, "m.py")
            assert whole is not None and not whole.has_tree_errors
        else:
            verdict = judge(before, after, "m.py", cache=cache)
            if verdict is not None:  # a file with errors: the fast path stays off from here on
                return
        before = after


@pytest.mark.parametrize("source", [SOURCE, SHORT_SOURCE], ids=["module", "short_statements"])
@settings(deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 2), st.lists(st.sampled_from(SNIPPETS), max_size=2)),
                min_size=2, max_size=12))  # fmt: skip
def test_a_spread_change_is_clean_by_its_statements_only_when_the_whole_file_is(
    source: str, hunks: list[tuple[int, int, list[str]]]
) -> None:
    """Several places changed at once (a patch, a multiedit): each hunk's statements are judged
    on their own, and together they never call clean what the whole-file parse does not."""
    cache = SyntaxCache()
    assert parse(source, "m.py", cache=cache) is not None
    lines = source.split("\n")
    changed = {seed % len(lines): (removed, inserted) for seed, removed, inserted in hunks}
    out, skip = [], 0
    for number, line in enumerate(lines):
        if skip:
            skip -= 1
            continue
        if number in changed:
            removed, inserted = changed[number]
            out += inserted
            skip = max(removed - 1, 0)
            if removed:
                continue
        out.append(line)
    after = "\n".join(out)
    if after != source and clean_by_statements(source, after, "m.py", cache):
        whole = parse(after, "m.py")
        assert whole is not None and not whole.has_tree_errors and not whole.errors(limit=1)
        again = after.replace("def ", "def  ", 1)  # the starts carried over serve the next change
        if clean_by_statements(after, again, "m.py", cache):
            whole = parse(again, "m.py")
            assert whole is not None and not whole.has_tree_errors


def test_an_edit_near_the_top_of_a_long_module_is_judged_by_its_statements() -> None:
    body = "def function_{0}(x):\n    if x:\n        return x + {0}\n    return {0}\n\n"
    text = "".join(body.format(i) for i in range(2000))
    cache = SyntaxCache()
    parse(text, "m.py", cache=cache)
    renamed = text.replace("def function_3(", "def renamed_3(", 1)
    assert clean_by_statements(text, renamed, "m.py", cache)
    broken = renamed.replace("def function_5(x):", "def function_5(x:", 1)
    assert not clean_by_statements(renamed, broken, "m.py", cache)
    verdict = judge(renamed, broken, "m.py", cache=cache)
    assert verdict is not None and verdict.kind == "breaks"  # the whole-file parse decided
    # Other languages keep the whole-file parse.
    assert not clean_by_statements("let a = 1\n", "let a = 2\n", "m.js", cache)


def test_short_statements_found_again_end_each_changed_region_near_its_change() -> None:
    """Many small changes to short statements (a multiedit renaming values): each region ends at
    the statement after its change, so the fast path parses the changes, not the file between."""
    lines = [f"value_{i} = {i}\n" for i in range(5000)]
    text = "".join(lines)
    after = "".join(f"value_{i} = -{i}\n" if i % 10 == 5 else line for i, line in enumerate(lines))
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line))
    planned = _regions(text.encode(), after.encode(), starts)
    assert planned is not None
    regions = [region for _, region in planned if region is not None]
    assert len(regions) == 500
    assert max(high - low for low, high, _, _ in regions) < 64  # three statements, not the file
    cache = SyntaxCache()
    parse(text, "m.py", cache=cache)
    assert clean_by_statements(text, after, "m.py", cache)


#: One large statement (a class holding every function of textwrap, re-indented), with a
#: statement before and after it: the edits below land inside it one after another.
CLASS_SOURCE = "import os\n\n\nclass Big:\n" + textwrap.indent(SOURCE, "    ") + "\n\nafter = 1\n"


@settings(deadline=None)
@given(st.lists(st.tuples(st.floats(0.05, 0.95), st.integers(0, 2), st.lists(st.sampled_from(SNIPPETS), max_size=2)),
                min_size=2, max_size=10), st.floats(0, 0.9))  # fmt: skip
def test_edits_in_one_statement_one_after_another_are_judged_from_the_last_ones_tree(
    changes: list[tuple[float, int, list[str]]], window: float
) -> None:
    """Edits inside one large statement (a class), each after the other: the second and later are
    judged by reparsing the stretch the one before left (its tree kept), and looking for
    indentation errors around the change only. They are never called clean when the whole file
    is not."""
    cache = SyntaxCache()
    before = CLASS_SOURCE
    assert parse(before, "m.py", cache=cache) is not None
    lines = len(before.split("\n"))
    for where, removed, inserted in changes:
        # All the edits of an example fall in a tenth of the class, as a model's edits of one method do.
        after = _apply(before, window + where / 10, removed, [textwrap.indent(s, "    ") for s in inserted])
        if after == before or lines < 10:
            continue
        if clean_by_statements(before, after, "m.py", cache):
            whole = parse(after, "m.py")
            assert whole is not None and not whole.has_tree_errors and not whole.errors(limit=1), (where, inserted)
        else:
            verdict = judge(before, after, "m.py", cache=cache)
            if verdict is not None:
                return
        before = after


def test_a_repeated_edit_to_a_class_header_reparses_the_class_from_its_kept_tree(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The benchmark's edit: a class's base classes swapped back and forth. After the first, the
    class is not parsed from its start again: its kept tree is reparsed where the change is."""
    import agent_toolsmith.syntax.local as local

    cache = SyntaxCache()
    text = CLASS_SOURCE
    parse(text, "m.py", cache=cache)
    calls: list[bool] = []
    original = local.statements_reparsed

    def counting(previous: Parsed, stretch: bytes) -> tuple[list[int], Parsed] | None:
        found = original(previous, stretch)
        calls.append(found is not None)
        return found

    monkeypatch.setattr(local, "statements_reparsed", counting)
    swapped = text.replace("class Big:", "class Big(object):", 1)
    for before, after in [(text, swapped), (swapped, text), (text, swapped), (swapped, text)]:
        assert clean_by_statements(before, after, "m.py", cache)
    assert calls == [True, True, True]  # the first change had no kept stretch
    broken = text.replace("class Big:", "class Big(object:", 1)
    assert not clean_by_statements(text, broken, "m.py", cache)
    assert calls[-1] is False
    verdict = judge(text, broken, "m.py", cache=cache)
    assert verdict is not None and verdict.kind == "breaks"


EMPTIED_BLOCKS = [
    ("def f(x):\n    if x:\n        return 1\n    return 2\n", "def f(x):\n    if x:\n    return 2\n"),
    ("def f(x):\n    if x:\n        return 1\n", "def f(x):\n    if x:\n"),
    ("def f(x):\n    if x:\n        # c\n        return 1\n    return 2\n",
     "def f(x):\n    if x:\n        # c\n    return 2\n"),
    ("class C:\n    def m(self):\n        pass\n\nx = 1\n", "class C:\n    def m(self):\n\nx = 1\n"),
]  # fmt: skip


@pytest.mark.parametrize(("before", "after"), EMPTIED_BLOCKS, ids=["before_sibling", "at_end", "comment", "class"])
def test_removing_the_only_statement_of_a_block_breaks_the_file(before: str, after: str) -> None:
    """The emptied block ends where the change begins: the check around the change looks at the
    statement before it too (the whole-file judgement used to miss it)."""
    cache = SyntaxCache()
    parse(before, "m.py", cache=cache)
    for judged in (judge(before, after, "m.py"), judge(before, after, "m.py", cache=cache)):
        assert judged is not None and judged.kind == "breaks", judged


@pytest.mark.parametrize("size", ["small", "large"])
def test_a_block_emptied_after_an_edit_of_the_same_statement_is_not_clean(size: str) -> None:
    """The same, judged after an edit of the same definition: a small function's stretch is
    reparsed from its kept tree (the check around the change must see the emptied block); a large
    class's method is judged by the statements of the class body it touches (nested.py)."""
    function = "def f(chunks, lines):\n    if chunks and lines:\n        del chunks[-1]\n    return chunks\n"
    text, line = ("x = 1\n\n\n" + function + "\n\ny = 2\n", "        del chunks[-1]\n")
    if size == "large":
        text, line = CLASS_SOURCE, "                    del chunks[-1]\n"
    assert text.count(line) == 1
    cache = SyntaxCache()
    parse(text, "m.py", cache=cache)
    commented = text.replace(line, line.rstrip("\n") + "  # the chunk\n")
    assert clean_by_statements(text, commented, "m.py", cache)
    assert (cache.stretches.get("m.py") is not None) == (size == "small")  # a large body: its statements
    emptied = text.replace(line, "")
    assert not clean_by_statements(commented, emptied, "m.py", cache)
    verdict = judge(commented, emptied, "m.py", cache=cache)
    assert verdict is not None and verdict.kind == "breaks"
