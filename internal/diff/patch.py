"""The Codex patch format: parsing and applying to text, with honest fuzz.

    *** Begin Patch
    *** Add File: path        then "+" lines
    *** Delete File: path
    *** Update File: path
    *** Move to: new/path     (optional, right after Update)
    @@ optional context line  (positions the chunk after that whole line)
     context / -removed / +added lines ("" is an empty context line)
    *** End of File           (optional: the chunk sits at the end of the file)
    *** End Patch

Marker lines may carry surrounding whitespace; a heredoc wrapper (``<<'EOF'`` … ``EOF``) is
ignored. Context is found from a moving cursor in passes of growing tolerance, each adding to
the chunk's fuzz: exact 0, trailing whitespace 1, all surrounding whitespace 2, typographic
punctuation folded 3. A chunk found only before the cursor, or an End-of-File chunk that does
not sit at the end, adds :data:`FUZZ_MISPLACED`. Chunks above :data:`FUZZ_THRESHOLD` are refused.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from ..errors import Ambiguous, NoMatch, ToolError
from ..textmatch import Text, closest_region, fold_punctuation

#: A chunk whose fuzz is above this is rejected.
FUZZ_THRESHOLD = 3
#: Added to a chunk found out of order, or an End-of-File chunk not at the end.
FUZZ_MISPLACED = 10
#: Candidate lines named when a hunk located by context alone matches several places.
MAX_CANDIDATES_LISTED = 20
#: Fuzz of each matching pass.
PASS_FUZZ = {"exact": 0, "trailing_whitespace": 1, "whitespace": 2, "punctuation": 3}

BEGIN, END = "*** Begin Patch", "*** End Patch"
ADD, DELETE, UPDATE, MOVE = "*** Add File: ", "*** Delete File: ", "*** Update File: ", "*** Move to: "
EOF_MARKER = "*** End of File"
_HEREDOC_OPEN = re.compile(r"^\s*(?:\S+\s+)?<<-?\s*['\"]?(\w+)['\"]?\s*$")


class PatchError(ToolError):
    """A patch that cannot apply as written: malformed (``invalid_patch``), or a chunk placed only
    with fuzz over the threshold, out of order or overlapping another (``code="patch_misplaced"``)."""

    code = "invalid_patch"


class HunkNotFound(PatchError, NoMatch):
    """A chunk's context and removed lines match nowhere (code ``no_match``)."""

    code = "no_match"


class HunkAmbiguous(PatchError, Ambiguous):
    """A hunk located by its context alone matches several places (code ``ambiguous_match``)."""

    code = "ambiguous_match"


@dataclass
class Chunk:
    header: str | None
    #: (kind, text): kind is " ", "-" or "+".
    lines: list[tuple[str, str]] = field(default_factory=list)
    end_of_file: bool = False
    patch_line: int = 0
    #: Unified diffs: the 0-based line where the hunk's old lines start (its header's number).
    #: Context is looked for nearest to it; a hunk without old lines is placed there.
    anchor: int | None = None
    #: Unified diffs: whether the new text ends with a newline when the hunk reaches the end of
    #: the file ("\\ No newline at end of file"). None: keep the file's own.
    final_newline: bool | None = None
    #: How the chunk is named and shown in messages.
    label: str = "chunk"
    title: str | None = None
    #: Located by its context alone (a unified hunk without line numbers, ``@@ ... @@``): the
    #: context must match one place in the whole file, else the patch is refused naming them.
    unique: bool = False

    @property
    def old_lines(self) -> list[str]:
        return [text for kind, text in self.lines if kind != "+"]

    @property
    def new_lines(self) -> list[str]:
        return [text for kind, text in self.lines if kind != "-"]


@dataclass
class FileOp:
    kind: Literal["add", "delete", "update"]
    path: str
    patch_line: int
    move_to: str | None = None
    add_lines: list[str] = field(default_factory=list)
    chunks: list[Chunk] = field(default_factory=list)
    #: Add: whether the new file ends with a newline (unified diffs can say it does not).
    add_final_newline: bool = True


def _strip_wrapper(lines: list[str]) -> list[str]:
    """Drop a heredoc wrapper (``apply_patch <<'EOF'`` … ``EOF``) around the patch."""
    if lines and (m := _HEREDOC_OPEN.match(lines[0])):
        tag = m.group(1)
        if lines[-1].strip() == tag:
            return lines[1:-1]
    return lines


def parse_patch(text: str) -> list[FileOp]:
    """Parse patch text; errors name the 1-based line and what was expected."""
    lines = text.replace("\r\n", "\n").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    lines = _strip_wrapper(lines)
    offset = 0
    while offset < len(lines) and not lines[offset].strip():
        offset += 1
    if offset >= len(lines) or lines[offset].strip() != BEGIN:
        raise PatchError(
            f"line {offset + 1}: expected '{BEGIN}' as the first line of the patch (or a unified diff: "
            "'--- a/path', '+++ b/path', then '@@ -1,2 +1,2 @@' or '@@ ... @@' hunks)."
        )
    if lines[-1].strip() != END:
        raise PatchError(f"line {len(lines)}: expected '{END}' as the last line of the patch.")
    ops: list[FileOp] = []
    i = offset + 1
    end = len(lines) - 1
    while i < end:
        marker = lines[i].strip()
        number = i + 1
        if marker.startswith(ADD):
            op = FileOp("add", _path(marker, ADD, number), number)
            i += 1
            while i < end and not _is_file_marker(lines[i]):
                if not lines[i].startswith("+"):
                    raise PatchError(f"line {i + 1}: in Add File, every line must start with '+' (got {lines[i]!r}).")
                op.add_lines.append(lines[i][1:])
                i += 1
        elif marker.startswith(DELETE):
            op = FileOp("delete", _path(marker, DELETE, number), number)
            i += 1
        elif marker.startswith(UPDATE):
            op = FileOp("update", _path(marker, UPDATE, number), number)
            i += 1
            if i < end and lines[i].strip().startswith(MOVE):
                op.move_to = _path(lines[i].strip(), MOVE, i + 1)
                i += 1
            i = _parse_chunks(lines, i, end, op)
            if not op.chunks and op.move_to is None:
                raise PatchError(f"line {number}: Update File {op.path} has no '@@' chunks.")
        elif not marker:
            i += 1
            continue
        else:
            raise PatchError(
                f"line {number}: expected '*** Add File: ', '*** Delete File: ', '*** Update File: ' or "
                f"'{END}', got {lines[i]!r}."
            )
        ops.append(op)
    if not ops:
        raise PatchError("The patch contains no file operations.")
    return ops


def _path(marker: str, prefix: str, number: int) -> str:
    path = marker[len(prefix) :].strip()
    if not path:
        raise PatchError(f"line {number}: '{prefix.strip()}' needs a path.")
    return path


def _is_file_marker(line: str) -> bool:
    stripped = line.strip()
    return stripped.startswith(("*** Add File:", "*** Delete File:", "*** Update File:")) or stripped == END


def _parse_chunks(lines: list[str], i: int, end: int, op: FileOp) -> int:
    chunk: Chunk | None = None
    while i < end and not _is_file_marker(lines[i]):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("@@"):
            header = stripped[2:].strip()
            if header.endswith("@@") and (header.startswith("-") or header[:-2].strip() in ("", "...", "\u2026")):
                header = ""  # "@@ -1,2 +1,2 @@", "@@ ... @@", "@@ @@": unified-diff headers, positioning nothing
            chunk = Chunk(header or None, patch_line=i + 1)
            op.chunks.append(chunk)
        elif stripped == EOF_MARKER:
            if chunk is None:
                raise PatchError(f"line {i + 1}: '{EOF_MARKER}' must end a chunk.")
            chunk.end_of_file = True
        elif line[:1] in (" ", "-", "+") or line == "":
            if chunk is None:
                if not op.chunks:  # context before the first @@: an implicit chunk
                    chunk = Chunk(None, patch_line=i + 1)
                    op.chunks.append(chunk)
                else:
                    raise PatchError(f"line {i + 1}: expected '@@' to start a chunk.")
            chunk.lines.append((line[:1] or " ", line[1:]))
        else:
            raise PatchError(
                f"line {i + 1}: in Update File {op.path}, expected a line starting with ' ', '-', '+' "
                f"or '@@', got {line!r}."
            )
        i += 1
    for c in op.chunks:
        if not c.lines:
            raise PatchError(f"line {c.patch_line}: the chunk has no lines.")
    return i


# --- applying ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class AppliedChunk:
    fuzz: int
    pass_name: str
    line: int


_PASSES: list[tuple[str, Callable[[str], str]]] = [
    ("exact", lambda s: s),
    ("trailing_whitespace", lambda s: s.rstrip()),
    ("whitespace", lambda s: s.strip()),
    ("punctuation", lambda s: fold_punctuation(s).strip()),
]


class _Lines:
    """The file's lines under each matching pass, normalised and indexed once per file. Only the
    lines a chunk's context can start with (``firsts``, its first old lines) are indexed: those
    are the only lines ever looked up."""

    def __init__(self, lines: list[str], firsts: set[str]) -> None:
        self.lines = lines
        self.firsts = firsts
        self._by_pass: dict[str, tuple[list[str], dict[str, list[int]]]] = {}

    def under(self, name: str, norm: Callable[[str], str]) -> tuple[list[str], dict[str, list[int]]]:
        cached = self._by_pass.get(name)
        if cached is None:
            have = self.lines if name == "exact" else [norm(line) for line in self.lines]
            wanted = {norm(line) for line in self.firsts}
            index: dict[str, list[int]] = {line: [] for line in wanted}
            for at in [at for at, line in enumerate(have) if line in wanted]:
                index[have[at]].append(at)
            cached = self._by_pass[name] = (have, index)
        return cached


class LineStarts:
    """Where line ``i`` of ``lines`` starts in their text (``i == len(lines)``: the end), for
    the few lines a patch's chunks touch: each is summed (in C) from the one asked before, so
    chunks in file order cost one pass over the lines they pass, not a table for every line."""

    def __init__(self, lines: list[str]) -> None:
        self._lines = lines
        self._line = self._offset = 0

    def __getitem__(self, line: int) -> int:
        if line < self._line:
            if line <= self._line - line:  # nearer the start: sum from there
                self._line = self._offset = 0
            else:
                self._offset -= sum(map(len, self._lines[line : self._line])) + (self._line - line)
                self._line = line
        self._offset += sum(map(len, self._lines[self._line : line])) + (line - self._line)
        self._line = line
        return self._offset


def _find(
    lines: _Lines, pattern: list[str], start: int, eof: bool, hint: int | None = None, unique: bool = False
) -> tuple[int, str, int, list[int]] | None:
    """(index, pass name, extra fuzz, candidates) of ``pattern``: at the end for EOF chunks, else
    the occurrence from ``start`` — the first, or the one nearest ``hint``; out-of-place finds cost
    FUZZ_MISPLACED. With ``unique``, every occurrence in the file at the first pass that finds any
    is a candidate: more than one is for the caller to refuse."""
    n = len(pattern)
    total = len(lines.lines)
    if not eof and hint is not None and start <= hint and lines.lines[hint : hint + n] == pattern:
        return hint, "exact", 0, [hint]  # found exactly where the chunk says: no other occurrence is nearer
    for misplaced in (False, True):
        for name, norm in _PASSES:
            have, index = lines.under(name, norm)
            want = [norm(p) for p in pattern]
            if eof and not misplaced:
                at = total - n
                if at >= start and have[at:] == want:
                    return at, name, 0, [at]
                continue
            candidates = [
                at for at in index.get(want[0], ())
                if (misplaced or unique or at >= start) and at + n <= total and have[at : at + n] == want
            ]  # fmt: skip
            if candidates:
                best = min(candidates, key=lambda at: abs(at - hint)) if hint is not None else candidates[0]
                return best, name, FUZZ_MISPLACED if misplaced or best < start else 0, candidates
    return None


def _find_header(lines: list[str], header: str, start: int) -> int | None:
    for _, norm in _PASSES:
        want = norm(header)
        for at in range(start, len(lines)):
            if norm(lines[at]) == want:
                return at
    return None


def apply_chunks(text: str, chunks: list[Chunk], path: str) -> tuple[list[tuple[int, int, str]], list[AppliedChunk]]:
    """Replacements ``(start, end, new_text)`` in ``text`` offsets, and each chunk's fuzz.

    ``text`` is LF-normalised. Raises :class:`PatchError` naming the chunk when context is
    missing or the fuzz is above the threshold.
    """
    ends_nl = text.endswith("\n") or not text
    lines = (text[:-1] if text.endswith("\n") else text).split("\n") if text else []
    starts = LineStarts(lines)
    cursor = 0
    replacements: list[tuple[int, int, str]] = []
    applied: list[AppliedChunk] = []
    indexed = _Lines(lines, {chunk.old_lines[0] for chunk in chunks if chunk.old_lines})
    for number, chunk in enumerate(chunks, start=1):
        if chunk.header is not None:
            at = _find_header(lines, chunk.header, cursor)
            if at is None:
                raise PatchError(
                    f"{path}: chunk {number} (patch line {chunk.patch_line}): the '@@ {chunk.header}' line "
                    "was not found in the file.",
                    code="no_match",
                )
            cursor = at + 1
        old = chunk.old_lines
        if not old:
            if chunk.anchor is not None:
                index = min(max(chunk.anchor, cursor), len(lines))
            else:
                index = len(lines) if chunk.end_of_file or chunk.header is None else cursor
            found: tuple[int, str, int, list[int]] | None = (index, "exact", 0, [index])
        else:
            found = _find(indexed, old, cursor, chunk.end_of_file, chunk.anchor, chunk.unique)
        if found is None:
            raise HunkNotFound(*_context_error(path, number, chunk, text, cursor))
        index, pass_name, extra, candidates = found
        if chunk.unique and len(candidates) > 1:
            raise _ambiguous(path, number, chunk, candidates)
        fuzz = PASS_FUZZ[pass_name] + extra
        if fuzz > FUZZ_THRESHOLD:
            raise PatchError(
                f"{path}: {chunk.label} {number} (patch line {chunk.patch_line}) matched only with fuzz {fuzz} "
                f"(threshold {FUZZ_THRESHOLD}): its context was found at line {index + 1}, "
                f"{'not at the end of the file' if chunk.end_of_file else 'before an earlier chunk'}.\n"
                f"{_render(chunk)}",
                code="patch_misplaced",
            )
        if index < cursor and extra == 0:
            raise PatchError(
                f"{path}: {chunk.label} {number} overlaps an earlier {chunk.label}.", code="patch_misplaced"
            )
        replacements.append(_replacement(lines, starts, index, chunk, ends_nl, len(text)))
        applied.append(AppliedChunk(fuzz, pass_name, index + 1))
        cursor = index + len(old)
    replacements.sort()
    for (_, end_a, _), (start_b, _, _) in itertools.pairwise(replacements):
        if start_b < end_a:
            raise PatchError(f"{path}: two {chunks[0].label}s change the same lines.", code="patch_misplaced")
    return replacements, applied


def _replacement(
    lines: list[str], starts: LineStarts, index: int, chunk: Chunk, ends_nl: bool, size: int
) -> tuple[int, int, str]:
    """The file's lines ``index..`` matched by the chunk's old lines, rewritten."""
    out: list[str] = []
    at = index
    for kind, text in chunk.lines:
        if kind == " ":
            out.append(lines[at])  # keep the file's own version of a context line
            at += 1
        elif kind == "-":
            at += 1
        else:
            out.append(text)
    start, end = starts[index], starts[at]
    body = "".join(line + "\n" for line in out)
    if at != len(lines):
        return min(start, size), min(end, size), body
    if chunk.final_newline is not None:  # a unified diff says how the file ends
        if index == len(lines) and size and not ends_nl:  # appending after a last line without one
            return size, size, "\n" + (body if chunk.final_newline else body[:-1])
        return min(start, size), size, body if chunk.final_newline or not body else body[:-1]
    if not ends_nl:  # keep the file's own missing final newline
        end = size
        if index == len(lines) and size:  # appending to a file without a final newline
            return size, size, ("\n" + body[:-1]) if body else ""
        if not out and index > 0:  # the file's last lines deleted: so is the newline before them
            start -= 1
        body = body[:-1]
    return min(start, size), min(end, size), body


def _render(chunk: Chunk) -> str:
    head = chunk.title or (f"@@ {chunk.header}" if chunk.header else "@@")
    return "\n".join([head, *(kind + text for kind, text in chunk.lines)])


def _ambiguous(path: str, number: int, chunk: Chunk, candidates: list[int]) -> HunkAmbiguous:
    lines = [at + 1 for at in candidates]
    listed = ", ".join(map(str, lines[:MAX_CANDIDATES_LISTED]))
    listed += ", ..." if len(lines) > MAX_CANDIDATES_LISTED else ""
    return HunkAmbiguous(
        f"{path}: {chunk.label} {number} (patch line {chunk.patch_line}) has no line numbers, and its context and "
        f"removed lines match {len(lines)} places in the file (lines {listed}), so where it goes is not known. "
        "Nothing was changed. Add context lines that only one of them has, or give the hunk's line numbers "
        f"('@@ -12,4 +12,5 @@').\n{_render(chunk)}",
        lines,
    )


def _context_error(path: str, number: int, chunk: Chunk, text: str, cursor: int) -> tuple[str, str]:
    """The message for a chunk not found, and the closest region it shows ("" when none)."""
    message = (
        f"{path}: {chunk.label} {number} (patch line {chunk.patch_line}): its context and removed lines were not "
        f"found in the file (searched from line {cursor + 1}).\n{_render(chunk)}"
    )
    region = closest_region(Text(text), "\n".join(chunk.old_lines))
    if region:
        message += f"\n\nClosest region in the file (whitespace shown as · for spaces, → for tabs):\n{region}"
    return message, region
