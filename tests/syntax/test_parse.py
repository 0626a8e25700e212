"""The syntax layer's own pieces: changed ranges, incremental parses, error positions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from agent_toolsmith.syntax import SyntaxCache, judge, language_for, parse
from agent_toolsmith.syntax.parse import changed_range
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
BLOBS = st.binary(max_size=40).map(lambda b: b * 700)  # long enough to cross scan chunks


@given(BLOBS, st.binary(max_size=30), st.binary(max_size=30), st.integers(min_value=0))
def test_changed_range_is_the_one_differing_range(base: bytes, cut: bytes, insert: bytes, where: int) -> None:
    where = where % (len(base) + 1)
    old = base[:where] + cut + base[where:]
    new = base[:where] + insert + base[where:]
    start, old_end, new_end = changed_range(old, new)
    assert old[:start] == new[:start]
    assert old[old_end:] == new[new_end:]
    assert old[:start] + new[start:new_end] + old[old_end:] == new
    assert len(old) - old_end == len(new) - new_end


def test_incremental_parse_matches_a_fresh_parse() -> None:
    cache = SyntaxCache()
    text = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(300))
    parse(text, "a.py", cache=cache)
    edited = text.replace("return x + 150", "return (x +", 1)
    incremental = parse(edited, "a.py", cache=cache)
    fresh = parse(edited, "a.py")
    assert incremental is not None and fresh is not None
    assert str(incremental.tree.root_node) == str(fresh.tree.root_node)
    assert incremental.errors()[0].line == fresh.errors()[0].line


def test_error_position_is_line_and_character_column() -> None:
    parsed = parse("s = 'é'\nfn(é, )\nx = (\n", "a.py")
    assert parsed is not None
    errors = parsed.errors()
    assert errors and errors[0].line >= 2


def test_languages_by_extension_and_lazy_import() -> None:
    assert language_for("x/Main.java") == "java" and language_for("a.TSX") == "tsx" and language_for("README") is None
    assert judge("x = 1\n", "x = 2\n", "a.py") is None
    assert "tree_sitter" in sys.modules  # loaded by the parse above, not before (see the CLI test)


def test_cli_view_does_not_import_tree_sitter(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    params = json.dumps({"file_path": str(tmp_path / "a.py")})
    command = [sys.executable, "-X", "importtime", "-m", "cmd.tools", "view", params]
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "1|x = 1" in proc.stdout, proc.stderr[-2000:]
    assert "tree_sitter" not in proc.stderr
