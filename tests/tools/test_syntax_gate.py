"""The syntax gate on edit, multiedit, patch and write, with real tree-sitter parses."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent_toolsmith.config import Config

from tests.conftest import Runner, make_session

MARSHMALLOW = """def divide(a, b):
    if b:
        return int(a / b)
    return 0
"""


def read_then(run: Runner, path: str) -> None:
    r = run("view", {"file_path": path})
    assert not r.is_error, r.content


def test_mid_line_multi_line_replacement_is_reindented_and_said(workspace: Path, run: Runner) -> None:
    f = workspace / "calc.py"
    f.write_text(MARSHMALLOW)
    read_then(run, "calc.py")
    r = run("edit", {"file_path": "calc.py", "old_string": "return int(a / b)",
                     "new_string": "# round\nreturn int(round(a / b))"})  # fmt: skip
    assert not r.is_error, r.content
    assert f.read_text() == MARSHMALLOW.replace("return int(a / b)", "# round\n        return int(round(a / b))")
    assert "given the line's indentation" in r.content and r.metadata["reindented"] is True
    compile(f.read_text(), "calc.py", "exec")


def test_syntax_breaking_edit_is_refused_naming_its_line(workspace: Path, run: Runner) -> None:
    f = workspace / "calc.py"
    f.write_text(MARSHMALLOW)
    read_then(run, "calc.py")
    r = run("edit", {"file_path": "calc.py", "old_string": "    return 0\n", "new_string": "    return (0\n"})
    assert r.is_error and r.metadata["error"] == "syntax_error"
    assert f.read_text() == MARSHMALLOW
    assert r.metadata["line"] >= 4 and "nothing was written" in r.content
    assert "multiedit" in r.content and "return (0" in r.content  # the would-be lines


def test_indentation_break_python_grammar_misses_is_refused(workspace: Path, run: Runner) -> None:
    f = workspace / "calc.py"
    f.write_text(MARSHMALLOW)
    read_then(run, "calc.py")
    r = run("edit", {"file_path": "calc.py", "old_string": "    return 0", "new_string": "      return 0"})
    assert r.is_error and r.metadata["error"] == "syntax_error" and r.metadata["line"] == 4
    assert "unexpected indent" in r.content


def test_string_literal_content_is_never_reindented(workspace: Path, run: Runner) -> None:
    source = "def f():\n    x = 1\n    return x\n"
    f = workspace / "s.py"
    f.write_text(source)
    read_then(run, "s.py")
    # Re-indenting would put spaces inside the string; the literal form does not parse: refused.
    r = run("edit", {"file_path": "s.py", "old_string": "x = 1",
                     "new_string": 'x = """a\nb"""\ny = 2'})  # fmt: skip
    assert r.is_error and r.metadata["error"] == "syntax_error", r.content
    assert f.read_text() == source


def test_changes_valid_only_together_pass_in_one_multiedit(workspace: Path, run: Runner) -> None:
    f = workspace / "m.go"
    f.write_text("package m\n\nfunc A() int {\n\treturn 1\n}\n")
    read_then(run, "m.go")
    r = run("edit", {"file_path": "m.go", "old_string": "func A() int {", "new_string": "func A() int {\n\tif true {"})
    assert r.is_error and r.metadata["error"] == "syntax_error"
    r = run("multiedit", {"file_path": "m.go", "edits": [
        {"old_string": "func A() int {", "new_string": "func A() int {\n\tif true {"},
        {"old_string": "\treturn 1\n", "new_string": "\t\treturn 1\n\t}\n\treturn 0\n"},
    ]})  # fmt: skip
    assert not r.is_error, r.content
    assert "if true {" in f.read_text()


def test_patch_is_judged_per_file_and_writes_nothing_on_refusal(workspace: Path, run: Runner) -> None:
    (workspace / "a.rs").write_text("fn a() -> i32 {\n    1\n}\n")
    (workspace / "b.txt").write_text("hello\n")
    read_then(run, "a.rs")
    read_then(run, "b.txt")
    patch = (
        "*** Begin Patch\n*** Update File: b.txt\n@@\n-hello\n+bye\n"
        "*** Update File: a.rs\n@@\n fn a() -> i32 {\n-    1\n+    1 +\n }\n*** End Patch"
    )
    r = run("patch", {"patch_text": patch})
    assert r.is_error and r.metadata["error"] == "syntax_error" and "a.rs" in r.content
    assert (workspace / "b.txt").read_text() == "hello\n"


def test_write_of_new_file_with_errors_only_warns(workspace: Path, run: Runner) -> None:
    r = run("write", {"file_path": "new.py", "content": "def f(:\n    pass\n"})
    assert not r.is_error and "Warning: syntax errors" in r.content and "a new file" in r.content
    assert (workspace / "new.py").exists()


def test_write_over_clean_file_that_breaks_it_is_refused(workspace: Path, run: Runner) -> None:
    f = workspace / "a.py"
    f.write_text("x = 1\n")
    read_then(run, "a.py")
    r = run("write", {"file_path": "a.py", "content": "x = (1\n"})
    assert r.is_error and r.metadata["error"] == "syntax_error"
    assert f.read_text() == "x = 1\n"


def test_file_with_errors_already_only_warns_naming_new_ones(workspace: Path, run: Runner) -> None:
    f = workspace / "a.py"
    f.write_text("def broken(:\n    pass\n\nx = 1\n")
    read_then(run, "a.py")
    r = run("edit", {"file_path": "a.py", "old_string": "x = 1", "new_string": "x = (1"})
    assert not r.is_error, r.content
    assert "already had syntax errors" in r.content and "line 4" in r.content


def test_gate_modes_from_config(workspace: Path) -> None:
    for mode, refused in (("warn", False), ("off", False), ("refuse", True)):
        f = workspace / f"{mode}.py"
        f.write_text("x = 1\n")
        session = make_session(workspace, config=Config(lsp_enabled=False, syntax_gate=mode))
        asyncio.run(session.run("view", {"file_path": f.name}))
        r = asyncio.run(session.run("edit", {"file_path": f.name, "old_string": "x = 1", "new_string": "x = (1"}))
        assert r.is_error is refused, r.content
        assert ("Warning: syntax errors" in r.content) is (mode == "warn")


def test_unsupported_file_types_are_not_judged(workspace: Path, run: Runner) -> None:
    f = workspace / "notes.txt"
    f.write_text("a (\n")
    read_then(run, "notes.txt")
    r = run("edit", {"file_path": "notes.txt", "old_string": "a (", "new_string": "a ((("})
    assert not r.is_error and "Warning" not in r.content


def test_config_key_is_validated(workspace: Path) -> None:
    import pytest
    from agent_toolsmith.config import ConfigError

    (workspace / "c.toml").write_text('[edit]\nsyntax_gate = "maybe"\n')
    with pytest.raises(ConfigError, match="syntax_gate"):
        Config.load(workspace, file=workspace / "c.toml", user=False)
    (workspace / "c.toml").write_text('[edit]\nsyntax_gate = "warn"\n')
    assert Config.load(workspace, file=workspace / "c.toml", user=False).syntax_gate == "warn"


def test_gutter_copied_from_view_is_stripped_and_said(workspace: Path, run: Runner) -> None:
    f = workspace / "g.py"
    f.write_text("def f(x):\n    if x:\n        return 1\n    if x:\n        return 1\n")
    read_then(run, "g.py")
    # Ambiguous text, but the numbers name lines 4-5: only those change.
    r = run("edit", {"file_path": "g.py", "old_string": "     4|    if x:\n     5|        return 1",
                     "new_string": "     4|    if x:\n     5|        return 2"})  # fmt: skip
    assert not r.is_error, r.content
    assert f.read_text() == "def f(x):\n    if x:\n        return 1\n    if x:\n        return 2\n"
    assert r.metadata["match"] == "line_number_gutter" and "gutter" in r.content


def test_gutter_whose_numbers_do_not_name_the_match_is_refused(workspace: Path, run: Runner) -> None:
    source = "a = 1\nb = 2\nc = 3\n"
    f = workspace / "g.py"
    f.write_text(source)
    read_then(run, "g.py")
    for old in ("     1|b = 2\n     2|c = 3", "     2|b = 2\n     4|c = 3"):
        r = run("edit", {"file_path": "g.py", "old_string": old, "new_string": "b = 5\nc = 6"})
        assert r.is_error and f.read_text() == source, old
    # new_string without the gutter is taken as it is.
    r = run("edit", {"file_path": "g.py", "old_string": "     2|b = 2\n     3|c = 3", "new_string": "b = 5\nc = 6"})
    assert not r.is_error and f.read_text() == "a = 1\nb = 5\nc = 6\n"


FORMATTED = "import os\n\n\ndef a():\n    return 1\n\n\ndef b():\n    return 2\n"


def test_edit_after_unrelated_outside_change_applies_and_says_so(workspace: Path, run: Runner) -> None:
    f = workspace / "fmt.py"
    f.write_text(FORMATTED)
    read_then(run, "fmt.py")
    f.write_text(FORMATTED.replace("import os\n", "import os\nimport sys\n"))  # a formatter/hook
    r = run("edit", {"file_path": "fmt.py", "old_string": "    return 2", "new_string": "    return 3"})
    assert not r.is_error, r.content
    assert f.read_text() == FORMATTED.replace("import os\n", "import os\nimport sys\n").replace("return 2", "return 3")
    assert r.metadata["reanchored"] is True and "had changed since you read it" in r.content
    # The new content is recorded as read: the next edit needs no re-anchoring.
    r = run("edit", {"file_path": "fmt.py", "old_string": "    return 1", "new_string": "    return 0"})
    assert not r.is_error and "reanchored" not in r.metadata


def test_edit_whose_region_changed_outside_is_refused(workspace: Path, run: Runner) -> None:
    f = workspace / "fmt.py"
    f.write_text(FORMATTED)
    read_then(run, "fmt.py")
    for outside in (
        FORMATTED.replace("def b():\n    return 2", "def b():\n    x = 0\n    return 2"),  # touches the region
        FORMATTED + "\n\ndef b():\n    return 2\n",  # now ambiguous
        FORMATTED.replace("    return 2", "    return 22"),  # the text is gone
    ):
        f.write_text(outside)
        r = run(
            "edit",
            {"file_path": "fmt.py", "old_string": "def b():\n    return 2", "new_string": "def b():\n    return 3"},
        )
        assert r.is_error and "modified since it was last read" in r.content, (outside, r.content)
        assert f.read_text() == outside


def test_patch_after_unrelated_outside_change_applies(workspace: Path, run: Runner) -> None:
    f = workspace / "fmt.py"
    f.write_text(FORMATTED)
    read_then(run, "fmt.py")
    outside = FORMATTED.replace("import os\n", "import os\nimport sys\n")
    f.write_text(outside)
    patch = "*** Begin Patch\n*** Update File: fmt.py\n@@ def b():\n-    return 2\n+    return 3\n*** End Patch"
    r = run("patch", {"patch_text": patch})
    assert not r.is_error, r.content
    assert f.read_text() == outside.replace("return 2", "return 3")
    assert r.metadata["files"][0]["reanchored"] is True and "had changed since you read it" in r.content
    changed = f.read_text().replace("    return 1", "    return 1  # pinned")  # the target line changes outside
    f.write_text(changed)
    patch = "*** Begin Patch\n*** Update File: fmt.py\n@@ def a():\n-    return 1\n+    return 0\n*** End Patch"
    r = run("patch", {"patch_text": patch})
    assert r.is_error and "modified since it was last read" in r.content
    assert f.read_text() == changed
