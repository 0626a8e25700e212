"""The syntax gate through the edit tool: where a refusal says the error is, and edits of files
that already have syntax errors (quiet when they add none, bounded when the file is huge)."""

from __future__ import annotations

from pathlib import Path

from agent_toolsmith.syntax.parse import MAX_PARSE_BYTES

from tests.conftest import Runner
from tests.helpers import read_then

HEAD = '"""Digests of files."""\nimport os\nimport hashlib\n\n\n'
HELPERS = "".join(f"def helper_{i}(path):\n    return os.path.basename(path) * {i}\n\n\n" for i in range(8))
DIGEST = (
    'def digest(path):\n    with open(path, "rb") as f:\n        data = f.read()\n'
    "    return hashlib.sha256(data).hexdigest()\n"
)


def indented(text: str) -> str:
    return "".join("    " + line if line.strip() else line for line in text.splitlines(keepends=True))


def functions(count: int) -> str:
    body = "def function_{0}(x):\n    if x:\n        return x + {0}\n    return {0}\n\n"
    return "".join(body.format(i) for i in range(count))


def test_a_refused_mid_line_splice_names_the_line_of_the_change(workspace: Path, run: Runner) -> None:
    source = HEAD + HELPERS + DIGEST
    f = workspace / "digest.py"
    f.write_text(source)
    read_then(run, "digest.py")
    line = source[: source.index("data = f.read()")].count("\n") + 1
    r = run("edit", {"file_path": "digest.py", "old_string": "data = f.read()",
                     "new_string": "data = f.read()\nelse:\n    data = b''"})  # fmt: skip
    assert r.is_error and r.metadata["error"] == "syntax_error"
    assert r.metadata["line"] >= line, r.content  # not 1 (the docstring) or 3 (import hashlib)
    assert f.read_text() == source


def test_edits_of_a_broken_file_that_add_no_error_say_nothing(workspace: Path, run: Runner) -> None:
    f = workspace / "broken.py"
    f.write_text(indented(functions(2000)))
    read_then(run, "broken.py")
    for old, new in (("def function_1000(x):", "def renamed_1000(x):"), ("return x + 1500", "return x - 1500"),
                     ("def renamed_1000(x):", "def function_1000(x):")):  # fmt: skip
        r = run("edit", {"file_path": "broken.py", "old_string": old, "new_string": new})
        assert not r.is_error, r.content
        assert "Warning" not in r.content, r.content
    r = run("edit", {"file_path": "broken.py", "old_string": "return x + 1700", "new_string": "return (x + 1700"})
    assert not r.is_error and "the file already had syntax errors; these are new" in r.content


def test_an_edit_of_a_broken_file_over_the_parse_limit_applies_unjudged(workspace: Path, run: Runner) -> None:
    text = indented(functions(MAX_PARSE_BYTES // 80 + 40_000))  # about 10 MB
    assert len(text) > 2 * MAX_PARSE_BYTES
    f = workspace / "huge.py"
    f.write_text(text)
    read_then(run, "huge.py")
    r = run("edit", {"file_path": "huge.py", "old_string": "def function_7(x):", "new_string": "def renamed_7(x):"})
    assert not r.is_error and "Warning" not in r.content, r.content[:500]
    assert f.read_text() == text.replace("def function_7(x):", "def renamed_7(x):", 1)
