"""Unified diffs (``git diff``, ``diff -u``) turned into the same file operations as Codex patches.

Models write unified diffs constantly. :func:`parse_unified` reads one with ``unidiff`` and
produces :class:`~.patch.FileOp` values, so they go through exactly the same matching (fuzz per
hunk, anchored near the hunk's own line number), preconditions and atomic commit as the Codex
format. What it understands:

- ``a/`` ``b/`` prefixes (git's default and its i/ w/ c/ o/ mnemonic ones) or none;
- new files (``--- /dev/null``, git's ``new file mode``, also empty ones) and deleted files;
- renames (git's ``rename from``/``rename to``, with or without changes);
- ``\\ No newline at end of file`` on either side;
- hunks without line numbers — ``@@ ... @@`` or ``@@ @@``, the headers aider's udiff format and
  models write — read by :func:`parse_loose` (unidiff needs the numbers): such a hunk is located by
  its context alone, with the Codex chunks' fuzz passes, and refused when that context matches
  more than one place in the file (the message names them);
- the diff inside fenced blocks (```` ```diff ```` … ```` ``` ````), as aider sends it.
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
#: A hunk header with its line numbers (groups: old start, old length), or without them.
_NUMBERED = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")
_NUMBERLESS = re.compile(r"^@@\s*(?:\.\.\.|\u2026)?\s*(?:@@)?\s*$")
#: A fence line of a Markdown code block at column 0 (hunk lines always start with ' ', '-', '+').
_FENCE = re.compile(r"^```+\s*[\w+-]*\s*$")


def unfenced(text: str) -> str:
    """The lines inside fenced code blocks (```` ```diff ```` … ```` ``` ````) when ``text`` has any
    (aider sends its diffs that way, prose around them); otherwise ``text`` itself."""
    lines = text.replace("\r\n", "\n").split("\n")
    inside, kept = False, []
    for line in lines:
        if _FENCE.match(line):
            inside = not inside
            continue
        if inside:
            kept.append(line)
    return "\n".join(kept) + "\n" if kept else text


def looks_unified(text: str) -> bool:
    """A unified diff: git's header, or ``---``/``+++`` file lines followed by a hunk header (with
    line numbers or without)."""
    if _GIT_HEADER.search(text):
        return True
    return bool(re.search(r"^--- \S.*\n\+\+\+ \S.*\n@@", text, re.M))


def _numberless(text: str) -> bool:
    """Has a hunk header without line numbers, which unidiff cannot read."""
    return any(line.startswith("@@") and not _NUMBERED.match(line) for line in text.split("\n"))


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
    text = unfenced(text)
    if _numberless(text):
        return parse_loose(text, exists)
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


# --- hunks without line numbers ----------------------------------------------------------------


def parse_loose(text: str, exists: Callable[[str], bool]) -> list[FileOp]:
    """File operations for a unified diff whose hunks may lack line numbers (``@@ ... @@``, as
    aider's udiff format writes them): each such hunk is located by its context alone (see
    :attr:`Chunk.unique`); a numbered one is placed near its number as usual. Lines between files
    (``diff --git``, ``index``, prose) are skipped, and several blocks for one file are one update
    (their hunks in the order given)."""
    lines = text.replace("\r\n", "\n").split("\n")
    ops: list[FileOp] = []
    i = 0
    while i < len(lines):
        if _file_header_at(lines, i):
            source, target = _header_path(lines[i]), _header_path(lines[i + 1])
            header_line = i + 1
            i, chunks = _loose_hunks(lines, i + 2)
            op = _loose_op(source, target, chunks, header_line, exists)
            same = next((o for o in ops if op.kind == o.kind == "update" and o.path == op.path), None)
            if same is not None:  # aider sends a block per change, several for one file: one update
                same.chunks += op.chunks
            else:
                ops.append(op)
            continue
        i += 1
    if not ops:
        raise PatchError("The unified diff contains no file changes ('--- a/path', '+++ b/path', '@@ ... @@').")
    return ops


def _file_header_at(lines: list[str], i: int) -> bool:
    return lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")


def _header_path(line: str) -> str:
    """The path of a ``---``/``+++`` line, without a timestamp after a tab."""
    return line[4:].split("\t", 1)[0].strip()


def _loose_hunks(lines: list[str], i: int) -> tuple[int, list[Chunk]]:
    """The hunks of one file from line ``i``: where they end, and the chunks."""
    chunks: list[Chunk] = []
    chunk: Chunk | None = None
    previous = ""
    while i < len(lines) and not _file_header_at(lines, i) and not lines[i].startswith("diff --git "):
        line = lines[i]
        if line.startswith("@@"):
            chunk = _loose_chunk(line, i + 1)
            chunks.append(chunk)
            previous = ""
        elif chunk is None:
            if line.strip():
                raise PatchError(f"line {i + 1}: expected a hunk header ('@@ ... @@') after '+++', got {line!r}.")
        elif line[:1] in (" ", "-", "+") or line == "":
            previous = line[:1] or " "
            chunk.lines.append((previous, line[1:]))
        elif line.startswith("\\"):  # "\ No newline at end of file": the line before ends its side
            chunk.end_of_file |= previous in (" ", "-")
            if previous in (" ", "+"):
                chunk.final_newline = False
        else:
            raise PatchError(
                f"line {i + 1}: in a hunk, expected a line starting with ' ', '-', '+' or '@@', got {line!r}."
            )
        i += 1
    for c in chunks:
        while c.lines and c.lines[-1] == (" ", "") and not c.end_of_file:
            c.lines.pop()  # empty lines after a hunk separate it from what follows
        if not c.lines:
            raise PatchError(f"line {c.patch_line}: the hunk has no lines.")
    return i, chunks


def _loose_chunk(line: str, number: int) -> Chunk:
    """A hunk from its header: numbered (placed near the number), bare (``@@ ... @@``: located by
    context alone), or ``@@ <a line of the file>`` (placed after that line, as in a Codex patch)."""
    title = line.strip()
    numbered = _NUMBERED.match(line)
    if numbered:
        start, length = int(numbered.group(1)), numbered.group(2)
        anchor = start - 1 if length != "0" else start
        return Chunk(None, patch_line=number, anchor=max(anchor, 0), label="hunk", title=title)
    if _NUMBERLESS.match(line):
        return Chunk(None, patch_line=number, label="hunk", title=title, unique=True)
    header = line[2:].strip()
    header = header[:-2].strip() if header.endswith("@@") else header
    return Chunk(header, patch_line=number, label="hunk", title=title)


def _loose_op(source: str, target: str, chunks: list[Chunk], number: int, exists: Callable[[str], bool]) -> FileOp:
    source, target = _strip_prefix(source, target, exists), _strip_prefix(target, source, exists)
    if source == DEV_NULL:
        op = FileOp("add", target, number)
        op.add_lines = [text for chunk in chunks for kind, text in chunk.lines if kind == "+"]
        op.add_final_newline = all(chunk.final_newline is not False for chunk in chunks)
        return op
    if target == DEV_NULL:
        return FileOp("delete", source, number)
    path = target if exists(target) or not exists(source) else source
    if not chunks:
        raise PatchError(f"line {number}: {path} has no hunks ('@@ ... @@').")
    return FileOp("update", path, number, chunks=chunks)
