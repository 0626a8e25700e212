"""Unified diffs (``git diff``, ``diff -u``) turned into the same file operations as Codex patches.

Models write unified diffs constantly. :func:`parse_unified` reads one with ``unidiff`` and
produces :class:`~.patch.FileOp` values, so they go through exactly the same matching (fuzz per
hunk, anchored near the hunk's own line number), preconditions and atomic commit as the Codex
format. What it understands:

- ``a/`` ``b/`` prefixes (git's default and its i/ w/ c/ o/ mnemonic ones) or none;
- new files (``--- /dev/null``, git's ``new file mode``, also empty ones) and deleted files;
- renames (git's ``rename from``/``rename to``, with or without changes);
- ``\\ No newline at end of file`` on either side.
Binary diffs are refused. A plain ``diff -u old new`` with two different names changes the file
that exists (as GNU patch does), it is not a rename.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from .patch import Chunk, FileOp, PatchError

if TYPE_CHECKING:  # unidiff is imported only when a unified diff arrives
    from unidiff.patch import Hunk, PatchedFile

DEV_NULL = "/dev/null"
#: Path prefixes git writes before the two sides (default a/ b/; diff.mnemonicPrefix i/ w/ c/ o/).
GIT_PREFIXES = ("a/", "b/", "i/", "w/", "c/", "o/")
_GIT_HEADER = re.compile(r"^diff --git ", re.M)
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@", re.M)


def looks_unified(text: str) -> bool:
    """A unified diff: git's header, or ``---``/``+++`` file lines followed by a hunk header."""
    if _GIT_HEADER.search(text):
        return True
    return bool(re.search(r"^--- \S.*\n\+\+\+ \S.*\n@@ ", text, re.M)) and bool(_HUNK.search(text))


def _strip_prefix(path: str, other: str, exists: Callable[[str], bool]) -> str:
    """Drop git's one-letter prefix when both sides carry one (and it does not name a real
    directory the unprefixed path exists in)."""
    sides = [p for p in (path, other) if p != DEV_NULL]
    if sides and all(p.startswith(GIT_PREFIXES) for p in sides):
        stripped = path[2:]
        if not (exists(path) and not exists(stripped)):
            return stripped
    return path


def parse_unified(text: str, exists: Callable[[str], bool]) -> list[FileOp]:
    """File operations for a unified diff. ``exists(path)`` says whether a workspace path exists
    (to resolve prefixes and ``diff -u old new``). Raises :class:`PatchError` with the reason."""
    from unidiff.errors import UnidiffParseError
    from unidiff.patch import PatchSet

    try:
        patch = PatchSet(text if text.endswith("\n") else text + "\n")
    except UnidiffParseError as exc:
        raise PatchError(f"The unified diff could not be parsed: {exc}.") from None
    if not len(patch):
        raise PatchError("The unified diff contains no file changes ('--- a/path', '+++ b/path', '@@ ... @@').")
    ops: list[FileOp] = []
    for number, patched in enumerate(patch, start=1):
        ops.append(_file_op(patched, number, exists))
    return ops


def _file_op(patched: PatchedFile, number: int, exists: Callable[[str], bool]) -> FileOp:
    source = _strip_prefix(patched.source_file, patched.target_file, exists)
    target = _strip_prefix(patched.target_file, patched.source_file, exists)
    if patched.is_binary_file:
        raise PatchError(f"File {number} of the diff ({target}) is a binary change, which patch cannot apply.")
    info = "\n".join(str(line) for line in patched.patch_info or [])
    # Not unidiff's is_added_file: it also says so for a hunk that fills an empty existing file.
    if source == DEV_NULL or "\nnew file mode " in "\n" + info:
        return _added(patched, target, number)
    if target == DEV_NULL or "\ndeleted file mode " in "\n" + info:
        return FileOp("delete", source, number)
    renamed = "rename from " in info and source != target
    if renamed:
        return FileOp("update", source, number, move_to=target, chunks=_chunks(patched))
    path = target if exists(target) or not exists(source) else source
    if not len(patched):
        raise PatchError(f"File {number} of the diff ({path}) has no hunks ('@@ -a,b +c,d @@').")
    return FileOp("update", path, number, chunks=_chunks(patched))


def _added(patched: PatchedFile, path: str, number: int) -> FileOp:
    op = FileOp("add", path, number)
    for hunk in patched:
        for line in hunk:
            if line.line_type == "+":
                op.add_lines.append(line.value.rstrip("\n"))
            elif line.line_type == "\\":
                op.add_final_newline = False
    return op


def _chunks(patched: PatchedFile) -> list[Chunk]:
    chunks = []
    for hunk in patched:
        old_start = hunk.source_start - 1 if hunk.source_length else hunk.source_start
        first = next(iter(hunk), None)
        chunk = Chunk(
            None,
            patch_line=first.diff_line_no - 1 if first is not None and first.diff_line_no else 0,
            anchor=max(old_start, 0),
            label="hunk",
            title=f"@@ -{hunk.source_start},{hunk.source_length} +{hunk.target_start},{hunk.target_length} @@",
        )
        previous = ""
        for line in hunk:
            kind = line.line_type
            if kind == "\\":  # the line before has no newline: it ends its side of the file
                if previous in (" ", "-"):
                    chunk.end_of_file = True
                if previous in (" ", "+"):
                    chunk.final_newline = False
                continue
            if kind in (" ", "-", "+"):
                chunk.lines.append((kind, line.value.rstrip("\n")))
                previous = kind
        if chunk.final_newline is None and _reaches_end(hunk):
            chunk.final_newline = True
        chunks.append(chunk)
    return chunks


def _reaches_end(hunk: Hunk) -> bool:
    """Whether the hunk's last line is a new-side line without a no-newline marker, i.e. a diff
    that says the new file ends with a newline — only meaningful when the hunk is at the end."""
    lines = [line for line in hunk if line.line_type != "\\"]
    return bool(lines) and lines[-1].line_type in (" ", "+")
