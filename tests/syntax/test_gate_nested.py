"""The gate's fast path one level down (syntax/nested.py): a change inside the body of a large
definition is judged by the body's statements it touches, and only ever called clean when the
whole file is."""

from __future__ import annotations

import textwrap

import pytest
from agent_toolsmith.syntax import judge, local
from agent_toolsmith.syntax.local import clean_by_statements
from agent_toolsmith.syntax.nested import BODY_MIN_BYTES
from agent_toolsmith.syntax.parse import Parsed, SyntaxCache, parse

from tests.syntax.test_gate_local import CLASS_SOURCE

METHOD = "    def method_{0}(self, x):\n        if x:\n            return x + {0}\n        return {0}\n\n"
BIG = "import os\n\n\nclass Big:\n" + "".join(METHOD.format(i) for i in range(200)) + "\nafter = 1\n"


def test_an_edit_of_one_method_parses_that_method_not_the_class(monkeypatch: pytest.MonkeyPatch) -> None:
    assert len(BIG) > 8 * BODY_MIN_BYTES
    parsed: list[int] = []
    original = local.statements_together

    def recording(stretches: list[bytes], language: str, **kwargs: object) -> object:
        parsed.extend(len(s) for s in stretches)
        return original(stretches, language, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(local, "statements_together", recording)
    cache = SyntaxCache()
    parse(BIG, "m.py", cache=cache)
    before = BIG
    for i in (150, 3, 151, 77):  # one change after another: the body's starts are carried
        after = before.replace(f"return x + {i}\n", f"return x + {i} + 1\n", 1)
        assert after != before and clean_by_statements(before, after, "m.py", cache)
        before = after
    assert parsed == []  # never the whole class: the body's statements it touched
    whole = parse(before, "m.py")
    assert whole is not None and not whole.has_tree_errors


@pytest.mark.parametrize(
    "replacement",
    [
        "        return x\nafter_class = 1\n        return 0\n",  # a statement dedented out of the body
        "    else:\n        return 1\n",  # a clause with nothing to belong to
        "      return 7\n",  # a statement at another column than its block's
        "        return (\n",  # left open
        "    @decorator\n    value = 1\n",  # a decorator on what cannot be decorated
    ],
)
def test_what_breaks_the_body_is_never_judged_clean(replacement: str) -> None:
    cache = SyntaxCache()
    parse(BIG, "m.py", cache=cache)
    target = METHOD.format(100)
    after = BIG.replace(target, target.replace("        return 100\n", replacement), 1)
    assert not clean_by_statements(BIG, after, "m.py", cache)
    verdict = judge(BIG, after, "m.py", cache=SyntaxCache())
    assert verdict is not None and verdict.kind == "breaks", replacement


def test_a_clause_left_at_another_column_than_its_statement_is_an_error() -> None:
    """An ``else:`` whose ``if`` line was removed attaches, for the grammar, to the ``while``
    around it at any column; Python refuses it (the layout check now does too)."""
    source = textwrap.dedent(
        """\
        def f(chunks):
            while chunks:
                if chunks[0]:
                    chunks.pop()
                else:
                    break
        """
    )
    after = source.replace("        if chunks[0]:\n", "", 1)
    with pytest.raises(IndentationError):
        compile(after, "m.py", "exec")
    verdict = judge(source, after, "m.py")
    assert verdict is not None and verdict.kind == "breaks"


def test_an_edit_of_a_large_class_body_in_a_real_module_keeps_the_carried_starts_right() -> None:
    """Edits one after another inside the body of the re-indented textwrap module: each judged
    clean is clean in the whole file, and so is the last content."""
    cache = SyntaxCache()
    before = CLASS_SOURCE
    parse(before, "m.py", cache=cache)
    for old, new in [("placeholder=' [...]'", "placeholder=' [..]'"), ("width=70,", "width=72,"),
                     ("return text\n", "return text  # done\n"), ("    def wrap(", "    def wrap_text(")]:  # fmt: skip
        after = before.replace(old, new, 1)
        assert after != before
        if clean_by_statements(before, after, "m.py", cache):
            whole: Parsed | None = parse(after, "m.py")
            assert whole is not None and not whole.has_tree_errors and not whole.errors(limit=1)
        before = after
