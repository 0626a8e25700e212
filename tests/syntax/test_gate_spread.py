"""The gate on changes spread over a long file (a patch or multiedit touching many places)."""

from __future__ import annotations

from agent_toolsmith.syntax import judge
from agent_toolsmith.syntax.parse import SyntaxCache

FUNCTIONS = 200  # 1 000 lines: far above the spread check's minimum


def module() -> list[str]:
    body = "def function_{0}(x):\n    if x:\n        return x + {0}\n    return {0}\n"
    return "".join(body.format(i) for i in range(FUNCTIONS)).split("\n")


def changed(lines: list[str], edits: dict[int, str]) -> str:
    return "\n".join(edits.get(i, line) for i, line in enumerate(lines))


def test_a_clean_spread_change_passes_and_a_broken_line_among_many_is_found() -> None:
    lines = module()
    text = "\n".join(lines)
    spread = {i: lines[i] + "  # reviewed" for i in range(0, len(lines) - 1, 40)}
    cache = SyntaxCache()
    assert judge(text, changed(lines, spread), "m.py", cache=cache) is None
    # The same spread change with one line (in the middle, between unchanged groups) indented
    # into a block it does not belong to: the blocks around each change are checked, so the gate
    # finds what it finds for that line changed alone.
    broken = dict(spread)
    broken[403] = "            return 100"  # was "    return 100", after "        return x + 100"
    verdict = judge(text, changed(lines, broken), "m.py", cache=cache)
    alone = judge(text, changed(lines, {403: broken[403]}), "m.py", cache=SyntaxCache())
    assert verdict is not None and verdict.kind == "breaks" and alone is not None
    assert [(e.line, e.message) for e in verdict.errors] == [(e.line, e.message) for e in alone.errors]
    assert verdict.errors[0].line == 404


def test_a_spread_change_that_leaves_an_error_node_is_refused() -> None:
    lines = module()
    text = "\n".join(lines)
    edits = {i: lines[i] + "  # ok" for i in range(0, len(lines) - 1, 40)}
    edits[600] = lines[600].replace("(x):", "(x:")  # an unclosed parenthesis
    verdict = judge(text, changed(lines, edits), "m.py", cache=SyntaxCache())
    assert verdict is not None and verdict.kind == "breaks"


def test_a_change_in_more_places_than_the_spread_check_takes_is_judged_over_its_whole_range() -> None:
    from agent_toolsmith.syntax.gate import MAX_SPREAD_GROUPS

    lines = module()
    text = "\n".join(lines)
    edits = {i: lines[i] + "  # ok" for i in range(0, len(lines) - 1, 4)}  # every function's def
    assert len(edits) > MAX_SPREAD_GROUPS
    assert judge(text, changed(lines, edits), "m.py", cache=SyntaxCache()) is None
    edits[403] = "            return 100"
    verdict = judge(text, changed(lines, edits), "m.py", cache=SyntaxCache())
    assert verdict is not None and verdict.kind == "breaks" and verdict.errors[0].line == 404
