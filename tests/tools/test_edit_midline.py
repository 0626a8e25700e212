"""The mid-line rule through the edit tools: the shapes real models sent, where the literal splice
still parses (so no parser could notice the continuation lines leaving their block)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Runner
from tests.helpers import read_then

CHART = '''import matplotlib.pyplot as plt


def save_chart(values, path, font_color="black"):
    plt.bar(range(len(values)), values)
    plt.tight_layout()


def main():
    save_chart([1, 2, 3], "chart.png")
'''

TOTALS = """def total(items):
    result = 0
    for item in items:
        result += item.price
    return result
"""


def test_figtext_continuation_stays_inside_its_function(workspace: Path, run: Runner) -> None:
    # Spliced literally, plt.figtext lands at column 0 after the function: valid Python that runs
    # at import and fails there (NameError: font_color). The rule keeps it in the function.
    f = workspace / "chart.py"
    f.write_text(CHART)
    read_then(run, "chart.py")
    figtext = 'plt.figtext(0.99, 0.01, f"n={len(values)}", horizontalalignment="right", color=font_color)'
    r = run("edit", {"file_path": "chart.py", "old_string": "plt.tight_layout()",
                     "new_string": f"plt.tight_layout()\n{figtext}"})  # fmt: skip
    assert not r.is_error, r.content
    assert f.read_text() == CHART.replace("    plt.tight_layout()\n", f"    plt.tight_layout()\n    {figtext}\n")
    assert r.metadata["reindented"] is True and r.metadata["match"] == "exact"
    assert "given the line's indentation" in r.content
    compile(f.read_text(), "chart.py", "exec")


def test_figtext_continuation_with_old_string_ending_its_line(workspace: Path, run: Runner) -> None:
    # old_string carries its line's newline: still one line, still the rule.
    f = workspace / "chart.py"
    f.write_text(CHART)
    read_then(run, "chart.py")
    figtext = 'plt.figtext(0.5, 0.01, "draft", color=font_color)'
    r = run("edit", {"file_path": "chart.py", "old_string": "plt.tight_layout()\n",
                     "new_string": f"plt.tight_layout()\n{figtext}\n"})  # fmt: skip
    assert not r.is_error, r.content
    assert f.read_text() == CHART.replace("    plt.tight_layout()\n", f"    plt.tight_layout()\n    {figtext}\n")
    assert r.metadata["reindented"] is True


def test_continuation_in_a_file_that_already_has_errors(workspace: Path, run: Runner) -> None:
    # The file does not parse (an unrelated error at its end): the rule does not depend on parsing.
    source = TOTALS + "\ndef broken(:\n    pass\n"
    f = workspace / "totals.py"
    f.write_text(source)
    read_then(run, "totals.py")
    r = run("edit", {"file_path": "totals.py", "old_string": "result += item.price",
                     "new_string": "result += item.price\n# prices already include tax"})  # fmt: skip
    assert not r.is_error, r.content
    assert f.read_text() == source.replace(
        "        result += item.price\n", "        result += item.price\n        # prices already include tax\n"
    )
    assert "Warning" not in r.content


def test_comment_continuation_gets_the_line_indentation(workspace: Path, run: Runner) -> None:
    f = workspace / "totals.py"
    f.write_text(TOTALS)
    read_then(run, "totals.py")
    r = run("edit", {"file_path": "totals.py", "old_string": "result += item.price",
                     "new_string": "result += item.price\n# prices already include tax"})  # fmt: skip
    assert not r.is_error, r.content
    expected = TOTALS.replace(
        "        result += item.price\n", "        result += item.price\n        # prices already include tax\n"
    )
    assert f.read_text() == expected and r.metadata["reindented"] is True


def test_relative_indentation_of_continuation_lines_is_kept(workspace: Path, run: Runner) -> None:
    f = workspace / "totals.py"
    f.write_text(TOTALS)
    read_then(run, "totals.py")
    r = run("edit", {"file_path": "totals.py", "old_string": "return result",
                     "new_string": "if result < 0:\n    raise ValueError(result)\nreturn result"})  # fmt: skip
    assert not r.is_error, r.content
    expected = TOTALS.replace(
        "    return result\n", "    if result < 0:\n        raise ValueError(result)\n    return result\n"
    )
    assert f.read_text() == expected


def test_entry_inside_brackets_is_reindented(workspace: Path, run: Runner) -> None:
    source = 'STYLE = {\n    "color": "red",\n    "width": 2,\n}\n'
    f = workspace / "style.py"
    f.write_text(source)
    read_then(run, "style.py")
    r = run("edit", {"file_path": "style.py", "old_string": '"color": "red",',
                     "new_string": '"color": "red",\n"size": 3,'})  # fmt: skip
    assert not r.is_error, r.content
    assert f.read_text() == 'STYLE = {\n    "color": "red",\n    "size": 3,\n    "width": 2,\n}\n'


def test_continuation_lines_written_with_the_file_indentation_are_left_alone(workspace: Path, run: Runner) -> None:
    f = workspace / "totals.py"
    f.write_text(TOTALS)
    read_then(run, "totals.py")
    r = run("edit", {"file_path": "totals.py", "old_string": "return result",
                     "new_string": "assert result >= 0\n    return result"})  # fmt: skip
    assert not r.is_error, r.content
    assert f.read_text() == TOTALS.replace("    return result\n", "    assert result >= 0\n    return result\n")
    assert "reindented" not in r.metadata


def test_match_after_code_on_the_line_is_spliced_as_written(workspace: Path, run: Runner) -> None:
    source = "def f(a):\n    x = g(a)\n    return x\n"
    f = workspace / "m.py"
    f.write_text(source)
    read_then(run, "m.py")
    r = run("edit", {"file_path": "m.py", "old_string": "g(a)", "new_string": "g(\na)"})
    assert not r.is_error, r.content
    assert f.read_text() == "def f(a):\n    x = g(\na)\n    return x\n" and "reindented" not in r.metadata


def test_markdown_list_item_continuation(workspace: Path, run: Runner) -> None:
    # No grammar for Markdown: the rule needs none.
    source = "# Steps\n\n- install\n  - run make\n- test\n"
    f = workspace / "README.md"
    f.write_text(source)
    read_then(run, "README.md")
    r = run("edit", {"file_path": "README.md", "old_string": "- run make",
                     "new_string": "- run make\n- run make bench"})  # fmt: skip
    assert not r.is_error, r.content
    assert f.read_text() == "# Steps\n\n- install\n  - run make\n  - run make bench\n- test\n"


def test_multiedit_applies_the_rule_to_each_edit(workspace: Path, run: Runner) -> None:
    f = workspace / "totals.py"
    f.write_text(TOTALS)
    read_then(run, "totals.py")
    r = run("multiedit", {"file_path": "totals.py", "edits": [
        {"old_string": "result = 0", "new_string": "# running sum\nresult = 0"},
        {"old_string": "return result", "new_string": "# done\nreturn result"},
    ]})  # fmt: skip
    assert not r.is_error, r.content
    assert f.read_text() == (
        "def total(items):\n    # running sum\n    result = 0\n    for item in items:\n"
        "        result += item.price\n    # done\n    return result\n"
    )
    assert r.metadata["reindented"] is True


def test_indentation_inside_a_string_literal_keeps_the_literal_splice(workspace: Path, run: Runner) -> None:
    # Indenting the second line would change what the string says: the edit is applied as written
    # (it parses that way), and nothing is said about re-indentation.
    source = "def query():\n    sql = ''\n    return sql\n"
    f = workspace / "q.py"
    f.write_text(source)
    read_then(run, "q.py")
    r = run("edit", {"file_path": "q.py", "old_string": "sql = ''", "new_string": 'sql = """\nSELECT 1\n"""'})
    assert not r.is_error, r.content
    assert f.read_text() == 'def query():\n    sql = """\nSELECT 1\n"""\n    return sql\n'
    assert "reindented" not in r.metadata
