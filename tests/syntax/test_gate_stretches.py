"""Stretches judged together in one parse (syntax/stretches.py) get exactly the verdict and the
statement starts they get parsed one by one: one stretch never closes, continues or joins what
another left open."""

from __future__ import annotations

import inspect
import textwrap

from agent_toolsmith.syntax import judge
from agent_toolsmith.syntax.local import clean_by_statements
from agent_toolsmith.syntax.parse import SyntaxCache, parse
from agent_toolsmith.syntax.stretches import _each_apart, _together, statements_apart
from hypothesis import given, settings
from hypothesis import strategies as st

#: Lines that are fine alone, and ones that only parse when something before or after them
#: closes or continues them (the shapes a naive concatenation would let through).
PIECES = [
    "x = 1", "x = (", ")", "]", "y = [", '"""', "'''", 's = """', "s = '''", "t = f'''{", "}'''",
    "if x:", "    pass", "else:", "elif y:", "try:", "except E:", "finally:", "@decorator",
    "def f():", "def g():\n    return 1", "class C:\n    pass", "x = 1 \\", "    y = 2", "# note",
    "    # indented note", "", "async def h():\n    await k()", "match v:\n    case 1:\n        pass",
    "lambda: (", "with a:", "    with b:\n        pass", "z = {", "}",
]  # fmt: skip

#: Pieces that parse on their own: most stretches of a real patch are made of these, and the
#: combined parse is trusted only around them.
WHOLE = ["x = 1", "def g():\n    return 1", "class C:\n    pass", "# note", "", "import os", "if x:\n    pass"]


def _stretch(pieces: list[str]) -> st.SearchStrategy[bytes]:
    return st.builds(
        lambda lines, newline: "\n".join(lines).encode() + (b"\n" if newline else b""),
        st.lists(st.sampled_from(pieces), min_size=1, max_size=4),
        st.sampled_from([True, True, True, False]),  # mostly ending a line, as a stretch does
    )


stretch = st.one_of(_stretch(WHOLE), _stretch(WHOLE), _stretch(PIECES))


@settings(deadline=None, max_examples=400)
@given(st.lists(stretch, min_size=2, max_size=6))
def test_stretches_judged_together_match_stretches_judged_apart(stretches: list[bytes]) -> None:
    assert statements_apart(stretches, "python") == _each_apart(stretches, "python")


def test_what_one_stretch_leaves_open_is_never_closed_by_the_next() -> None:
    joined_only_by_concatenation = [
        [b"x = (\n", b")\n"],  # a bracket
        [b"y = [1,\n", b"2]\n"],
        [b's = """\n', b'"""\n'],  # a triple-quoted string, either quote
        [b"s = '''\n", b"text\n'''\n"],
        [b"if x:\n    pass\n", b"else:\n    pass\n"],  # a block's clause
        [b"try:\n    pass\n", b"except E:\n    pass\n"],
        [b"def f():\n    pass\n", b"    y = 1\n"],  # a block continued by indentation
        [b"@decorator\n", b"def f():\n    pass\n"],  # a decorator
        [b"x = 1 + \\\n", b"2\n"],  # a continued line
    ]
    for stretches in joined_only_by_concatenation:
        assert statements_apart(stretches, "python") is None, stretches
        # The combined parse alone does not decide: either it refuses or it is not trusted.
        assert _together(stretches, "python") is None, stretches


def test_clean_stretches_are_judged_in_one_parse_with_their_own_statement_starts() -> None:
    stretches = [b"x = 1\ny = 2\n", b"def f():\n    return 1\n\n# note\n", b"class C:\n    pass"]
    assert _together(stretches, "python") == [[0, 6], [0, 23], [0]]
    assert statements_apart(stretches, "python") == _each_apart(stretches, "python")


SOURCE = inspect.getsource(textwrap)
#: An opener and the closer that would complete it if the two hunks were read as one.
PAIRS = [
    ("x = (", ")"), ("y = [", "]"), ('s = """', '"""'), ("s = '''", "'''"), ("if x:", "    pass"),
    ("@decorator", "def f():\n    pass"), ("z = {", "}"), ("x = 1 \\", "+ 2"), ("try:", "except E:\n    pass"),
    ("def f():", "    return 1"),
]  # fmt: skip


@settings(deadline=None, max_examples=150)
@given(
    st.sampled_from(PAIRS),
    st.integers(0, 10**6),
    st.integers(1, 400),
    st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(["x = 1", "    pass", "# c"])), max_size=4),
)
def test_an_opener_in_one_hunk_and_its_closer_in_another_are_judged_as_the_file_is(
    pair: tuple[str, str], seed: int, gap: int, others: list[tuple[int, str]]
) -> None:
    """Hunks far apart in a real module: the local gate calls the change clean only when the
    whole file parses, and otherwise the gate's verdict is the whole-file one."""
    lines = SOURCE.split("\n")
    first = seed % len(lines)
    second = min(first + gap, len(lines) - 1)
    inserted = {first: [pair[0]], second: [pair[1]]}
    for at, text in others:
        inserted.setdefault(at % len(lines), [text])
    after = _with_lines_inserted(lines, inserted)
    cache = SyntaxCache()
    assert parse(SOURCE, "m.py", cache=cache) is not None
    _assert_judged_as_the_file_is(SOURCE, after, cache)


def _with_lines_inserted(lines: list[str], inserted: dict[int, list[str]]) -> str:
    out: list[str] = []
    for number, line in enumerate(lines):
        out += inserted.get(number, [])
        out.append(line)
    return "\n".join(out)


def _assert_judged_as_the_file_is(before: str, after: str, cache: SyntaxCache) -> bool:
    """Called clean locally only when the whole file parses; otherwise the gate with the
    session's cache says what the gate with none says. Returns whether it was called clean."""
    if clean_by_statements(before, after, "m.py", cache):
        whole = parse(after, "m.py")
        assert whole is not None and not whole.has_tree_errors and not whole.errors(limit=1)
        assert judge(before, after, "m.py") is None
        return True
    fast, slow = judge(before, after, "m.py", cache=cache), judge(before, after, "m.py")
    assert (fast and (fast.kind, fast.errors)) == (slow and (slow.kind, slow.errors))
    return False


def test_an_opener_and_its_closer_in_two_hunks_go_to_the_whole_file_parse() -> None:
    """Neither hunk parses alone, so the local gate says nothing; the whole file decides: the
    bracket and the block leave it broken, the string holds what is between the two quotes."""
    body = "def function_{0}(x):\n    if x:\n        return x + {0}\n    return {0}\n\n"
    text = "".join(body.format(i) for i in range(400))
    cache = SyntaxCache()
    assert parse(text, "m.py", cache=cache) is not None
    for opener, closer, breaks in (("x = (", ")", True), ('s = """', '"""', False), ("if y:", "    pass", True)):
        after = text.replace("def function_100(", f"{opener}\ndef function_100(", 1)
        after = after.replace("def function_300(", f"{closer}\ndef function_300(", 1)
        assert not clean_by_statements(text, after, "m.py", cache), opener
        verdict = judge(text, after, "m.py", cache=cache)
        assert (verdict is not None and verdict.kind == "breaks") == breaks, opener


#: A module whose top-level statements include the compound ones a hunk can continue: an if
#: (else), a try (except), a function (its block), a decorated class.
MODULE = "".join(
    f"def function_{i}(x):\n    if x:\n        return x + {i}\n    return {i}\n\n"
    f"if FLAG_{i}:\n    value_{i} = {i}\n\ntry:\n    import mod_{i}\nexcept ImportError:\n    mod_{i} = None\n\n"
    f"@decorator\nclass Holder_{i}:\n    item = {i}\n\n"
    for i in range(60)
)
#: Lines a hunk puts between two top-level statements: some only parse joined to the statement
#: before (an indented line, an else) or after (a decorator), some break it.
BETWEEN = [
    "x = 1", "    y = 2", "    # note\n    y = 2", "# note", "else:\n    pass", "@decorator",
    "except ValueError:\n    pass", "z = (", ")", '"""', "", "    ", "def g():", "def g():\n    return 1",
    "x = 1 \\", "finally:\n    done()", "class D:\n    pass", "@property",
]  # fmt: skip


@settings(deadline=None, max_examples=200)
@given(st.lists(st.tuples(st.integers(0, 10**6), st.lists(st.sampled_from(BETWEEN), min_size=1, max_size=2)),
                min_size=1, max_size=8))  # fmt: skip
def test_hunks_between_top_level_statements_are_clean_only_when_the_file_is(
    hunks: list[tuple[int, list[str]]],
) -> None:
    """Hunks at statement boundaries, where the gate first judges the changed lines without the
    unchanged statement on either side: what joins those statements (an indented line, an else,
    a decorator) must be judged with them, and the starts carried over must serve the next change."""
    lines = MODULE.split("\n")
    blank = [n for n, line in enumerate(lines) if line == ""]  # a line before a top-level statement
    after = _with_lines_inserted(lines, {blank[seed % len(blank)] + 1: text for seed, text in hunks})
    cache = SyntaxCache()
    assert parse(MODULE, "m.py", cache=cache) is not None
    if _assert_judged_as_the_file_is(MODULE, after, cache):
        again = after.replace("    return 7\n", "    return 7 + 0\n", 1).replace("value_40 = 40", "value_40 = (", 1)
        _assert_judged_as_the_file_is(after, again, cache)  # the carried starts, used again


def test_what_joins_the_statement_around_a_hunk_is_judged_with_it() -> None:
    """The changed lines alone do not parse, with the statement before or after they do: the
    change is clean (the wider stretch decides), and the file agrees."""
    cache = SyntaxCache()
    assert parse(MODULE, "m.py", cache=cache) is not None
    joined = [
        ("\nif FLAG_3:\n    value_3 = 3\n", "\nif FLAG_3:\n    value_3 = 3\nelse:\n    value_3 = 0\n"),  # an else
        ("\n@decorator\nclass Holder_5:", "\n@decorator\n@decorator\nclass Holder_5:"),  # a decorator
        ("    return 9\n\n", "    return 9\n    # more\n    more = 1\n\n"),  # the block above goes on
        ("    return 11\n\n", "    return 11\n\nvalue = 11\n\n"),  # a statement of its own
    ]
    before = MODULE
    for old, new in joined:
        assert before.count(old) >= 1, old
        after = before.replace(old, new, 1)
        assert clean_by_statements(before, after, "m.py", cache), new
        whole = parse(after, "m.py")
        assert whole is not None and not whole.has_tree_errors and not whole.errors(limit=1)
        before = after
    broken = before.replace("    return 20\n\n", "    return 20\n\n    stray = 1\nvalue = (\n", 1)
    assert not clean_by_statements(before, broken, "m.py", cache)
    verdict = judge(before, broken, "m.py", cache=cache)
    assert verdict is not None and verdict.kind == "breaks"
