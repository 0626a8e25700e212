"""The syntax gate on files that already have syntax errors, and where it says an error is.

A change to a broken file is judged, after the first change the gate saw, by the region it touches
alone (local.errors_kept_by_region): the whole file is not parsed again, and a change that adds an
error still gets the whole-file judgement. The first error named is the first in or after the
change, not one the parser's recovery put above it.
"""

from __future__ import annotations

from collections import Counter

from agent_toolsmith.syntax import judge
from agent_toolsmith.syntax.local import error_keys, errors_kept_by_region
from agent_toolsmith.syntax.parse import MAX_PARSE_BYTES, SyntaxCache, changed_range, parse
from hypothesis import given, settings
from hypothesis import strategies as st


def source(functions: int) -> str:
    body = "def function_{0}(x):\n    if x:\n        return x + {0}\n    return {0}\n\n"
    return "".join(body.format(i) for i in range(functions))


def indented(text: str) -> str:
    """Every non-blank line indented at module level: "unexpected indent" on each statement."""
    return "".join("    " + line if line.strip() else line for line in text.splitlines(keepends=True))


BROKEN = {
    "indented": indented(source(400)),
    "unclosed paren": source(400).replace("return x + 20\n", "return (x + 20\n", 1),
    "class with an unclosed paren": "class Big:\n"
    + indented(source(400)).replace("return x + 20\n", "return (x + 20\n", 1),
}


def warmed(text: str, path: str = "m.py") -> tuple[SyntaxCache, str]:
    """A cache that has seen one change to ``text`` (the gate's first, whole-file judgement), and
    the content after it."""
    cache = SyntaxCache()
    after = text.replace("return 399\n", "return 399  # seen\n", 1)
    assert after != text
    judge(text, after, path, cache=cache)
    return cache, after


def test_a_bad_splice_is_reported_at_the_change_not_at_the_top() -> None:
    head = '"""Digests of files."""\nimport os\nimport hashlib\n\n\n'
    body = "".join(f"def helper_{i}():\n    return {i}\n\n\n" for i in range(8))
    tail = (
        'def digest(path):\n    with open(path, "rb") as f:\n        data = f.read()\n'
        "    return hashlib.sha256(data).hexdigest()\n"
    )
    text = head + body + tail
    line = text[: text.index("        data = f.read()")].count("\n") + 1
    assert line > 30
    after = text.replace("        data = f.read()", "        data = f.read()\n    else:\n        data = b''", 1)
    verdict = judge(text, after, "d.py", cache=SyntaxCache())
    assert verdict is not None and verdict.kind == "breaks"
    assert verdict.errors[0].line >= line, verdict.summary()  # not line 1's docstring or an import
    assert "else" in verdict.errors[0].message


def test_a_change_to_a_broken_file_is_judged_by_its_region_without_parsing_the_file() -> None:
    text = indented(source(2000))  # 10k lines
    cache, before = warmed(text)
    newest = cache.get("m.py")
    assert newest is not None
    after = before.replace("def function_1000(x):", "def renamed_1000(x):", 1)
    assert judge(before, after, "m.py", cache=cache) is None
    assert cache.get("m.py") is newest  # no tree was made: the file was not parsed again
    # The next change starts from the cut points carried to that content.
    again = after.replace("return x + 1500\n", "return x - 1500\n", 1)
    assert judge(after, again, "m.py", cache=cache) is None and cache.get("m.py") is newest


def test_a_new_error_in_a_broken_file_is_still_named() -> None:
    cache, before = warmed(BROKEN["unclosed paren"])
    after = before.replace("return x + 300\n", "return [x + 300\n", 1)
    verdict = judge(before, after, "m.py", cache=cache)
    assert verdict is not None and verdict.kind == "warns"
    line = after[: after.index("return [x + 300")].count("\n") + 1
    assert verdict.errors and verdict.errors[0].line >= line


def test_a_line_left_of_the_block_is_judged_with_the_whole_file() -> None:
    # Inside the class, a line at column 0 ends the class: every method after it is now indented
    # at module level. The region alone (cut from inside the class) cannot see that.
    cache, before = warmed(BROKEN["class with an unclosed paren"])
    after = before.replace("        return 300\n", "        return 300\nprint(1)\n", 1)
    assert not errors_kept_by_region(before, after, "m.py", cache)
    verdict = judge(before, after, "m.py", cache=cache)
    assert verdict is not None and verdict.kind == "warns"


def test_once_the_error_is_fixed_a_breaking_change_is_refused_again() -> None:
    cache, before = warmed(BROKEN["unclosed paren"])
    fixed = before.replace("return (x + 20\n", "return (x + 20)\n", 1)
    assert judge(before, fixed, "m.py", cache=cache) is None
    broken_again = fixed.replace("return x + 200\n", "return x + (200\n", 1)
    verdict = judge(fixed, broken_again, "m.py", cache=cache)
    assert verdict is not None and verdict.kind == "breaks"


def test_both_snapshots_are_kept_so_neither_is_parsed_twice() -> None:
    text = BROKEN["unclosed paren"]
    cache = SyntaxCache()
    after = text.replace("return 399\n", "return 399  # seen\n", 1)
    judge(text, after, "m.py", cache=cache)
    for content in (text, after):
        assert cache.get_exact("m.py", content.encode()) is not None
    newest = cache.get("m.py")
    assert newest is not None and newest.source == after.encode()  # the next change starts from here


def test_a_file_over_the_parse_limit_is_not_judged() -> None:
    text = indented(source(MAX_PARSE_BYTES // 80 + 1000))
    assert len(text) > MAX_PARSE_BYTES
    cache = SyntaxCache()
    after = text.replace("def function_7(x):", "def renamed_7(x):", 1)
    assert judge(text, after, "big.py", cache=cache) is None
    assert cache.get("big.py") is None  # nothing was parsed


EDITS = st.sampled_from([
    "return x - 1", "return (x", "if x:", "    pass", "x = [1,", "]", "def g(:", "'''", 's = """', "# c", "",
    "        y = 2", "else:", "try:", "f(", ")", "print(x)", "    if x:", "        return 2", "x = 1", "y = f(x)",
])  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(sorted(BROKEN)),
    st.integers(300, 1900),
    st.lists(EDITS, min_size=1, max_size=3),
    st.booleans(),
)
def test_the_region_says_nothing_is_new_only_when_the_whole_file_agrees(
    shape: str, at: int, inserted: list[str], replace: bool
) -> None:
    """Whenever the region judgement says the change added no error, the whole file parsed before
    and after has no new error in or after the change (placed alike relative to it)."""
    cache, before = warmed(BROKEN[shape])
    lines = before.split("\n")
    near = next(line for line in lines[at:] if line.strip())  # written at the depth of the code there
    indent = near[: len(near) - len(near.lstrip())]
    after = "\n".join([*lines[:at], *(indent + text for text in inserted), *lines[at + int(replace) :]])
    if after == before or not errors_kept_by_region(before, after, "m.py", cache):
        return
    whole_before, whole_after = parse(before, "m.py"), parse(after, "m.py")
    assert whole_before is not None and whole_after is not None
    start, old_end, new_end = changed_range(whole_before.source, whole_after.source)
    known = error_keys(whole_before.errors(0, None, 100_000), whole_before.source, start, old_end)
    found = error_keys(whole_after.errors(0, None, 100_000), whole_after.source, start, new_end)
    # Before the change the text is the same: an error that shows there only in one parse is the
    # parser's recovery, not the change.
    new = Counter({key: n for key, n in (found - known).items() if key[1] != "before"})
    assert not new, (shape, at, inserted, replace, dict(new))
