"""Decode files for matching and encode them back byte-exactly.

Tools match on LF-normalised text (``TextFile.text``) but write through ``TextFile.raw`` so a
file's encoding, BOM and every line ending outside the edited span survive untouched, even in
files with mixed line endings. A file whose bytes would not survive decode → encode is refused
rather than silently rewritten.
"""

from __future__ import annotations

import bisect
import codecs
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import ToolError
from .printable import printable

#: How many leading bytes the binary sniff looks at.
BINARY_SNIFF_BYTES = 4096
#: A sample with more than this share of control bytes is binary.
BINARY_CONTROL_RATIO = 0.30

# Longest BOMs first: the UTF-32-LE BOM starts with the UTF-16-LE one.
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_TEXT_CONTROLS = frozenset(b"\t\n\r\f\b\x1b")
#: Every byte that does not count as a control byte in the binary sniff (for bytes.translate).
_NOT_CONTROLS = bytes(b for b in range(256) if not ((b < 0x20 and b not in _TEXT_CONTROLS) or b == 0x7F))


class BinaryFileError(ToolError):
    """The file's bytes are not text (a NUL, mostly control bytes)."""

    code = "binary_file"


class UndecodableFileError(ToolError):
    """No encoding reads the file's bytes as text without loss."""

    code = "undecodable_file"


class UnencodableTextError(ToolError):
    """The new text has a character the file's encoding cannot store."""

    code = "unencodable_text"


def detect_bom(data: bytes) -> tuple[bytes, str | None]:
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return bom, encoding
    return b"", None


def looks_binary(sample: bytes) -> bool:
    """NUL byte, or more than 30% control bytes, in the first 4096 bytes.

    Callers check for a UTF-16/32 BOM first: those files are full of NULs and still text.
    """
    sample = sample[:BINARY_SNIFF_BYTES]
    if not sample:
        return False
    if b"\x00" in sample:
        return True
    controls = len(sample.translate(None, _NOT_CONTROLS))  # the control bytes, kept in one pass
    return controls / len(sample) > BINARY_CONTROL_RATIO


def detect_eol(raw: str) -> str:
    """The majority line ending (LF on ties and for files with no line break)."""
    if "\r" not in raw:
        return "\n"
    crlf = raw.count("\r\n")
    cr = raw.count("\r") - crlf
    lf = raw.count("\n") - crlf
    best = max((lf, "\n"), (crlf, "\r\n"), (cr, "\r"), key=lambda pair: pair[0])
    return best[1] if best[0] > 0 else "\n"


def normalize_eol(text: str) -> str:
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


@dataclass(frozen=True)
class TextFile:
    """A decoded text file: what matching sees and what writing needs."""

    raw: str
    encoding: str
    bom: bytes = b""
    eol: str = "\n"
    #: LF-normalised text, the space every matcher works in.
    text: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", normalize_eol(self.raw))

    @functools.cached_property
    def _crlf_offsets(self) -> tuple[int, ...]:
        """Offsets in ``text`` of line breaks that were two characters (CRLF) in ``raw``."""
        offsets: list[int] = []
        shift = 0
        start = 0
        while True:
            i = self.raw.find("\r\n", start)
            if i < 0:
                break
            offsets.append(i - shift)
            shift += 1
            start = i + 2
        return tuple(offsets)

    def raw_offset(self, offset: int) -> int:
        """Map an offset in ``text`` to the same place in ``raw``."""
        return offset + bisect.bisect_left(self._crlf_offsets, offset)

    def with_eol(self, text: str) -> str:
        """LF text converted to this file's line ending."""
        return text if self.eol == "\n" else text.replace("\n", self.eol)

    def splice(self, replacements: list[tuple[int, int, str]], check: Callable[[], None] | None = None) -> str:
        """Apply non-overlapping ``(start, end, lf_text)`` replacements given in ``text`` offsets.

        Returns the new raw text: only the spans change, every other character (line endings
        included) is kept as it was. ``check`` is called now and then and may raise to stop.
        """
        pieces: list[str] = []
        cursor = 0
        for count, (start, end, new) in enumerate(sorted(replacements, key=lambda r: r[0])):
            if check is not None and count % 4096 == 0:
                check()
            raw_start, raw_end = self.raw_offset(start), self.raw_offset(end)
            if raw_start < cursor:
                raise ValueError("overlapping replacements")
            pieces.append(self.raw[cursor:raw_start])
            pieces.append(carry_eols(self.raw[raw_start:raw_end], new, self.eol))
            cursor = raw_end
        pieces.append(self.raw[cursor:])
        return "".join(pieces)

    def encode(self, raw: str | None = None) -> bytes:
        """Bytes for ``raw`` (default: this file) in this file's encoding, BOM included."""
        text = self.raw if raw is None else raw
        try:
            return self.bom + text.encode(self.encoding)
        except UnicodeEncodeError as exc:
            bad = text[exc.start : exc.end]
            raise UnencodableTextError(
                f"The new text contains {bad!r}, which cannot be written in this file's encoding "
                f"({self.encoding}). Use characters the encoding supports or an escape sequence."
            ) from exc


_RAW_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def carry_eols(old_raw: str, new: str, default: str) -> str:
    """``new`` (LF text) with each line ending taken from the line it replaces in ``old_raw``.

    Lines equal to an old line keep that line's ending; a changed line takes the ending of the
    old line in the same place of its block; added lines the one before them; ``default`` (the
    file's majority) where the old text had none. So a file with mixed endings keeps every
    line's own, also around an edit.
    """
    if "\n" not in new:
        return new
    parts = _RAW_LINE.findall(old_raw)
    endings = [part[len(part.rstrip("\r\n")) :] for part in parts]
    kinds = {e for e in endings if e}
    if len(kinds) <= 1:  # one ending throughout (or none): no alignment needed
        eol = kinds.pop() if kinds else default
        return new if eol == "\n" else new.replace("\n", eol)
    old_lines = [part.rstrip("\r\n") for part in parts]
    new_lines = new.split("\n")
    chosen: list[str] = [default] * (len(new_lines) - 1)
    import difflib  # mixed line endings only: reading a file does not load it

    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    previous = default
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for j in range(j1, min(j2, len(chosen))):
            if tag == "equal":
                source = endings[i1 + j - j1]
            elif i2 > i1:
                source = endings[min(i1 + j - j1, i2 - 1)]
            else:
                source = previous
            chosen[j] = source or previous
            previous = chosen[j]
    return "".join(line + eol for line, eol in zip(new_lines, [*chosen, ""], strict=True))


#: PEP 263's coding declaration, which Emacs (``-*- coding: X -*-``) and Vim
#: (``vim: set fileencoding=X``) modelines also satisfy: a comment in the first two lines.
_CODING_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-_.a-zA-Z0-9]+)")


def _first_lines(data: bytes, count: int) -> list[bytes]:
    """The first ``count`` lines of ``data`` (without their newlines), as ``data.split(b"\\n",
    count)[:count]`` gives them, without copying the rest of the file."""
    lines, start = [], 0
    for _ in range(count):
        end = data.find(b"\n", start)
        lines.append(data[start : end if end >= 0 else len(data)])
        if end < 0:
            break
        start = end + 1
    return lines


def declared_encoding(data: bytes) -> str | None:
    """The encoding a coding cookie in the first two lines declares, when Python knows it and
    the data decodes in it (a wrong declaration falls back to guessing)."""
    for line in _first_lines(data, 2):
        match = _CODING_COOKIE.match(line)
        if match is None:
            if line.strip() and not line.lstrip().startswith(b"#"):
                return None  # PEP 263: the cookie is on line 1, or line 2 after a comment line
            continue
        try:
            name = codecs.lookup(match.group(1).decode("ascii")).name
            data.decode(name)
        except (LookupError, UnicodeDecodeError):
            return None
        return name
    return None


def decode_bytes(data: bytes, *, path: str = "file") -> TextFile:
    """Decode ``data``: BOM, else binary sniff, else a coding cookie (PEP 263), else UTF-8, else
    charset-normalizer.

    Raises :class:`BinaryFileError` or :class:`UndecodableFileError`; never substitutes U+FFFD.
    """
    bom, encoding = detect_bom(data)
    body = data[len(bom) :]
    if encoding is None:
        if looks_binary(body):
            raise BinaryFileError(
                f"File appears to be binary: {printable(path)}. Use the appropriate tool for this file type."
            )
        encoding = declared_encoding(body)
    try:
        if encoding is None:
            raw, encoding = _decode_undeclared(body, path)
        else:
            raw = body.decode(encoding)
    except UnicodeDecodeError as exc:
        raise UndecodableFileError(
            f"Cannot decode {printable(path)} as {encoding} (byte {exc.start + len(bom)}). "
            "It may be binary or use a mixed encoding; it was not changed."
        ) from exc
    # Strict UTF-8 decoding is exact (no overlong forms, no surrogates): only other codecs can
    # decode bytes that would come back different.
    if codecs.lookup(encoding).name != "utf-8" and raw.encode(encoding) != body:
        raise UndecodableFileError(
            f"{printable(path)} does not round-trip through {encoding}; refusing to treat it as text so no byte is "
            "lost."
        )
    return TextFile(raw=raw, encoding=encoding, bom=bom, eol=detect_eol(raw))


#: Languages written in Latin script: for these, charset-normalizer's choice among single-byte
#: code pages is arbitrary on short texts, and windows-1252 is the web's legacy default (WHATWG).
_LATIN_SCRIPT_LANGUAGES = frozenset(
    {
        "English", "French", "German", "Spanish", "Portuguese", "Italian", "Dutch", "Swedish", "Danish",
        "Norwegian", "Finnish", "Hungarian", "Polish", "Czech", "Slovak", "Slovene", "Croatian",
        "Romanian", "Turkish", "Estonian", "Latvian", "Lithuanian", "Catalan", "Indonesian",
        "Vietnamese", "Malay", "Icelandic", "Irish", "Welsh", "Basque", "Galician", "Esperanto",
    }
)  # fmt: skip


def _single_byte(encoding: str) -> bool:
    return len(b"\xc3\xa9".decode(encoding, "replace")) == 2


def guess_encoding(data: bytes) -> str | None:
    """UTF-8 if valid, else charset-normalizer's guess (windows-1252 for Latin-script text that
    decodes in it), else None."""
    try:
        data.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes  # lazy: only legacy-encoded data needs it

    best = from_bytes(data).best()
    if best is None:
        return None
    encoding = codecs.lookup(best.encoding).name
    latin = not best.languages or any(lang in _LATIN_SCRIPT_LANGUAGES for lang in best.languages)
    if _single_byte(encoding) and latin:
        try:
            data.decode("cp1252")
            return "cp1252"
        except UnicodeDecodeError:
            pass
    return encoding


def _decode_undeclared(body: bytes, path: str) -> tuple[str, str]:
    """The text and encoding of data that declares none: UTF-8 when it decodes (decoded once),
    else the guess."""
    try:
        return body.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        encoding = _guess_encoding(body, path)
    return body.decode(encoding), encoding


def _guess_encoding(body: bytes, path: str) -> str:
    encoding = guess_encoding(body)
    if encoding is None:
        raise UndecodableFileError(
            f"Cannot determine the text encoding of {printable(path)}. It may be binary; it was not changed."
        )
    return encoding


def new_text_file(text: str, like: TextFile | None = None) -> TextFile:
    """A TextFile for brand-new content: UTF-8/LF, or the encoding/BOM/EOL of ``like``.

    Content that already carries its own CRLF/CR line endings keeps them (it "clearly says
    otherwise"); content that does not fit ``like``'s encoding falls back to UTF-8.
    """
    has_own_eol = "\r" in text
    if like is None:
        return TextFile(raw=text, encoding="utf-8", eol=detect_eol(text))
    raw = text if has_own_eol else like.with_eol(text)
    encoding, bom = like.encoding, like.bom
    try:
        raw.encode(encoding)
    except UnicodeEncodeError:
        encoding, bom = "utf-8", (codecs.BOM_UTF8 if like.bom else b"")
    return TextFile(raw=raw, encoding=encoding, bom=bom, eol=detect_eol(raw))
