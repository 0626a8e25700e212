"""What an rg that could not be confined printed, checked against the files themselves.

The search process follows paths by name: a directory swapped for a symlink mid-search could
make it read a file outside the roots. Where the kernel confines rg (:mod:`.confine`) that open
fails; elsewhere each matched file is read again through the anchored, no-follow walk the writes
use (:mod:`..fsutil.anchored`) and a line not found there is dropped, and listed or counted files
are kept only if they exist as reached that way.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ToolError
from ..fsutil.anchored import AnchoredDir, names_inside, open_dir, read_at
from .query import Match, SearchResult

#: A file's text as rg's lines hold it, and with undecodable bytes dropped; None: not readable
#: through the no-follow walk.
Content = tuple[str, str] | None


def verified_matches(
    matches: list[Match], root: Path, real_root: Path, roots: list[Path], contents: dict[str, Content] | None = None
) -> list[Match]:
    """Only the matches whose line is in the file reached without following a symlink.

    The search process follows paths by name: a directory swapped for a symlink mid-search
    could make it read a file outside. Each matched file is read again through the anchored,
    no-follow walk from its root; a line not found there (the search read something else) is
    dropped — so nothing of an outside file is ever shown. Each directory is opened (that walk)
    once, not once per file: a capped search verifies up to 10 000 files. ``contents`` holds
    the files already read that way (while rg was searching).
    """
    contents = dict(contents or {})
    kept = []
    with AnchoredReader(roots, root, real_root) as reader:
        for match in matches:
            if match.path not in contents:
                contents[match.path] = reader.content(match.path)
            found = contents[match.path]
            line = match.text.rstrip("\r\n")
            if found is not None and (line in found[0] or line.replace("\ufffd", "") in found[1]):
                kept.append(match)
    return kept


class AnchoredReader:
    """Regular files read through directories opened without following a symlink
    (:func:`open_dir`), each directory opened once; as :func:`read_anchored` reads one file.
    Paths below ``root`` are read at the same place below its real path ``real_root``."""

    def __init__(self, roots: list[Path], root: Path, real_root: Path) -> None:
        self.roots = roots
        self.prefix, self.real_prefix = str(root).rstrip("/"), str(real_root).rstrip("/")
        self.directories: dict[str, AnchoredDir | None] = {}

    def __enter__(self) -> AnchoredReader:
        return self

    def __exit__(self, *exc: object) -> None:
        for directory in self.directories.values():
            if directory is not None:
                directory.close()

    def raw(self, path: str) -> bytes | None:
        """The bytes of ``path`` as the search named it (below ``root``, read below ``real_root``)."""
        inside = path == self.prefix or path.startswith(self.prefix + "/")
        return self.read(self.real_prefix + path[len(self.prefix) :] if inside else path)

    def content(self, path: str) -> Content:
        data = self.raw(path)
        if data is None:
            return None
        return data.decode("utf-8", "surrogateescape"), data.decode("utf-8", "replace").replace("\ufffd", "")

    def read(self, path: str) -> bytes | None:
        parent, _, name = path.rpartition("/")
        if parent not in self.directories:
            try:
                self.directories[parent] = open_dir(Path(parent or "/"), self.roots)
            except (OSError, ToolError, ValueError):
                self.directories[parent] = None
        directory = self.directories[parent]
        if directory is None or not name:
            return None
        return read_at(directory, name)


def verify_result(
    result: SearchResult, root: Path, real_root: Path, roots: list[Path], contents: dict[str, Content] | None = None
) -> None:
    """Keep only what the search found inside the roots without following a symlink swapped in
    mid-search: matched lines re-read through the anchored walk (see :func:`verified_matches`),
    listed files and counted files checked to exist as reached that way."""
    if result.matches:
        result.matches = verified_matches(result.matches, root, real_root, roots, contents)
    if result.files:
        result.files = names_inside(result.files, roots, root, real_root)
    if result.counts:
        kept = set(names_inside(list(result.counts), roots, root, real_root))
        result.counts = {path: n for path, n in result.counts.items() if path in kept}
