"""names_inside: what a listing made by name found is kept only when it is reachable from its root
without following a symlink — over many directories too (descriptors are bounded)."""

from __future__ import annotations

import os
from pathlib import Path

from agent_toolsmith.fsutil.anchored import MAX_OPEN_DIRS, names_inside


def test_a_listing_of_many_directories_keeps_every_real_file_and_drops_what_lies_through_a_symlink(
    tmp_path: Path,
) -> None:
    root, outside = tmp_path / "ws", tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "secret.txt").write_text("x")
    listed = []
    for n in range(MAX_OPEN_DIRS * 2 + 7):  # more directories than may be open at once
        directory = root / f"d{n % 40}" / f"e{n}"
        directory.mkdir(parents=True)
        (directory / "f.txt").write_text("x")
        listed.append(str(directory / "f.txt"))
    os.symlink(outside / "deep", root / "d3" / "swapped")  # as if a directory became a link mid-walk
    through_link = str(root / "d3" / "swapped" / "secret.txt")
    missing = str(root / "d5" / "gone.txt")
    kept = names_inside([*listed, through_link, missing], [root], root, root)
    assert kept == listed
