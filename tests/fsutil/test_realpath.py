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


def test_a_file_swapped_out_after_the_open_is_not_named_by_where_it_went(tmp_path: Path) -> None:
    """A writer's swap moves the old inode to a temporary name: readlink of a descriptor opened
    just before names that temporary name, which is no real path of the file's path."""
    from agent_toolsmith.fsutil.realpath import _still_named

    target = tmp_path / "shared.txt"
    target.write_text("old\n")
    fd = os.open(target, os.O_PATH | os.O_CLOEXEC)
    try:
        os.rename(target, tmp_path / ".staged")  # what the swap does to the old inode
        target.write_text("new\n")
        moved = os.readlink(f"/proc/self/fd/{fd}")
        assert moved == str(tmp_path / ".staged")
        assert not _still_named(os.fstat(fd), moved, str(target))
    finally:
        os.close(fd)
    assert kernel_real_path(target) == target


def test_real_paths_during_swaps_name_the_path_never_a_temporary_name(tmp_path: Path) -> None:
    """Real-path lookups racing a thread that swaps the file in and out (as our writers do) answer
    the file's own path every time (before the fix, some answered the staged name)."""
    import threading

    from agent_toolsmith.fsutil.fs import REAL

    target, staged = tmp_path / "shared.txt", tmp_path / ".staged"
    target.write_text("a\n")
    staged.write_text("b\n")
    dir_fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    done = threading.Event()

    def swap() -> None:
        while not done.is_set():
            REAL.exchange(dir_fd, staged.name, target.name)

    swapper = threading.Thread(target=swap)
    swapper.start()
    try:
        answers = {real_path(target) for _ in range(3000)}
    finally:
        done.set()
        swapper.join(timeout=10)
        os.close(dir_fd)
    assert not swapper.is_alive()
    assert answers == {target}
