"""view's line-number gutter copied on only some lines of old_string (a model dropped the first
line's number, or a blank line's): stripped when the numbered lines fit the file, otherwise
refused saying why."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Runner
from tests.helpers import read_then

SOURCE = "def f(x):\n    if x:\n        return 1\n\n    if x:\n        return 1\n    return 0\n"


@pytest.mark.parametrize(
    "first_line",
    ["    if x:", "if x:"],  # copied after the gutter, or from the first visible character
)
def test_first_line_number_missing_is_stripped_at_the_numbered_lines(
    workspace: Path, run: Runner, first_line: str
) -> None:
    f = workspace / "g.py"
    f.write_text(SOURCE)
    read_then(run, "g.py")
    # The text is in the file twice; the number on the second line names lines 5-6.
    r = run("edit", {"file_path": "g.py", "old_string": f"{first_line}\n     6|        return 1",
                     "new_string": f"{first_line}\n     6|        return 2"})  # fmt: skip
    assert not r.is_error, r.content
    assert f.read_text() == SOURCE.replace("        return 1\n    return 0", "        return 2\n    return 0")
    assert r.metadata["match"].startswith("line_number_gutter") and "gutter" in r.content


def test_blank_line_without_its_number(workspace: Path, run: Runner) -> None:
    f = workspace / "g.py"
    f.write_text(SOURCE)
    read_then(run, "g.py")
    old = "     3|        return 1\n\n     5|    if x:"
    r = run("edit", {"file_path": "g.py", "old_string": old, "new_string": "        return 3\n\n    if x:"})
    assert not r.is_error, r.content
    assert f.read_text() == SOURCE.replace("        return 1\n\n", "        return 3\n\n", 1)


def test_numbers_that_name_other_lines_are_refused_with_the_reason(workspace: Path, run: Runner) -> None:
    f = workspace / "g.py"
    f.write_text(SOURCE)
    read_then(run, "g.py")
    # The numbered line says old_string starts at line 3; the text is at lines 2 and 5.
    r = run("edit", {"file_path": "g.py", "old_string": "    if x:\n     4|        return 1",
                     "new_string": "    if x:\n        return 2"})  # fmt: skip
    assert r.is_error and r.metadata["error"] == "no_match"
    assert "which puts it at line 3" in r.content and "matches at line 2, 5 instead" in r.content
    assert f.read_text() == SOURCE


def test_numbers_that_jump_are_refused_with_the_reason(workspace: Path, run: Runner) -> None:
    f = workspace / "g.py"
    f.write_text(SOURCE)
    read_then(run, "g.py")
    r = run("edit", {"file_path": "g.py", "old_string": "    if x:\n     3|        return 1\n     9|    return 0",
                     "new_string": "    return 5"})  # fmt: skip
    assert r.is_error and "do not follow each other (3, 9)" in r.content
    assert f.read_text() == SOURCE


def test_text_without_the_gutter_matching_nowhere_is_refused_with_the_reason(workspace: Path, run: Runner) -> None:
    f = workspace / "g.py"
    f.write_text(SOURCE)
    read_then(run, "g.py")
    r = run("edit", {"file_path": "g.py", "old_string": "    if y:\n     3|        return 1",
                     "new_string": "    if y:\n        return 2"})  # fmt: skip
    assert r.is_error and "line-number prefix (on 1 of its 2 lines)" in r.content
    assert "still matches nowhere" in r.content and "closest region" in r.content
    assert f.read_text() == SOURCE
