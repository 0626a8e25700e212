"""Real paths from the kernel (fsutil/realpath.py) are os.path.realpath's answer, for existing
paths, paths whose end does not exist yet, and paths through symlinks of every kind (relative,
absolute, to files, dangling, in a loop)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from agent_toolsmith.fsutil.paths import real_path
from agent_toolsmith.fsutil.realpath import kernel_real_path
from hypothesis import given
from hypothesis import strategies as st

NAMES = ["a", "b", "c", "l1", "l2"]
#: Symlink targets: relative and absolute, to directories, files, nothing, and each other.
TARGETS = ["a", "b", "../a", "a/b", "missing", "l1", "l2", "/", "f", "a/f", "."]


@st.composite
def trees(draw: st.DrawFn) -> list[tuple[str, str, str]]:
    """(path, kind, target) entries, parents before children."""
    out: list[tuple[str, str, str]] = []
    made = {""}
    for _ in range(draw(st.integers(1, 10))):
        parent = draw(st.sampled_from(sorted(made)))
        name = draw(st.sampled_from([*NAMES, "f"]))
        path = f"{parent}/{name}" if parent else name
        if path in made or any(p == path for p, _, _ in out):
            continue
        kind = "file" if name == "f" else draw(st.sampled_from(["dir", "dir", "link"]))
        out.append((path, kind, draw(st.sampled_from(TARGETS))))
        if kind == "dir":
            made.add(path)
    return out


def build(base: Path, tree: list[tuple[str, str, str]]) -> None:
    for path, kind, target in tree:
        where = base / path
        if kind == "dir":
            where.mkdir()
        elif kind == "file":
            where.write_text("x")
        else:
            where.symlink_to(str(base) + target if target.startswith("/") and target != "/" else target)


@given(tree=trees(), queries=st.lists(st.lists(st.sampled_from([*NAMES, "f", "..", ".", "new"]), min_size=1,
                                                 max_size=5), min_size=1, max_size=6))  # fmt: skip
def test_the_kernels_real_path_is_realpaths(tree: list[tuple[str, str, str]], queries: list[list[str]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(os.path.realpath(tmp))
        build(base, tree)
        for parts in queries:
            path = base.joinpath(*parts)
            expected = os.path.realpath(path)
            assert str(real_path(path)) == expected, path
            fast = kernel_real_path(path)
            assert fast is None or str(fast) == expected, path
