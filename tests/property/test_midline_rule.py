"""The mid-line rule (textmatch/continuation.py) over generated files and edits: it fires only
for a match at the first non-blank character of an indented line with an old_string that leaves
the columns open, and whatever it does, every byte outside the matched span stays identical."""

from __future__ import annotations

from agent_toolsmith.fsutil.textio import TextFile, decode_bytes
from agent_toolsmith.textmatch import EditRequest, apply_edits
from hypothesis import assume, given
from hypothesis import strategies as st

INDENTS = st.sampled_from(["", "  ", "    ", "\t", "        ", "\t  "])
WORDS = st.sampled_from(["x", "y = 1", "call(a, b)", "return z", "# note", "if q:", "}", "item,", "é = 'ü'"])
CODE = st.lists(WORDS, min_size=1, max_size=3).map(" ".join)
LINE = st.tuples(INDENTS, CODE).map("".join)
#: new_string's lines: any indentation (relative or not), any code, blank lines too.
NEW_LINE = st.one_of(st.just(""), LINE)
NEW = st.lists(NEW_LINE, min_size=2, max_size=5).map("\n".join).filter(lambda s: s.strip() != "")
EOLS = st.sampled_from(["\n", "\r\n"])


def file_of(lines: list[str], eol: str) -> TextFile:
    return decode_bytes((eol.join(lines) + eol).encode("utf-8"), path="f.py")


def edited(file: TextFile, old: str, new: str, *, reindent: bool = True) -> str:
    return apply_edits(file, [EditRequest(old, new)], path="f.py", reindent=reindent).file.raw


def literal(file: TextFile, old: str, new: str) -> str:
    """The raw text with ``old`` (unique) replaced by ``new`` as written, in the file's line endings."""
    start = file.text.index(old)
    return file.with_eol(file.text[:start] + new + file.text[start + len(old) :])


@given(st.lists(LINE, min_size=1, max_size=8), st.data(), NEW, EOLS)
def test_never_fires_when_old_string_includes_the_indentation(
    lines: list[str], data: st.DataObject, new: str, eol: str
) -> None:
    at = data.draw(st.integers(0, len(lines) - 1))
    line = lines[at]
    # The whole line, or from anywhere in its indentation: old_string starts with (some of) it.
    cut = data.draw(st.integers(0, max(len(line) - len(line.lstrip(" \t")) - 1, 0)))
    old = line[cut:]
    file = file_of(lines, eol)
    assume(file.text.count(old) == 1 and old != new)
    outcome = apply_edits(file, [EditRequest(old, new)], path="f.py")
    assert outcome.file.raw == literal(file, old, new) and outcome.inserted_indents == []


@given(st.lists(LINE, min_size=1, max_size=8), st.data(), NEW, EOLS)
def test_never_fires_for_a_match_after_other_text_on_its_line(
    lines: list[str], data: st.DataObject, new: str, eol: str
) -> None:
    at = data.draw(st.integers(0, len(lines) - 1))
    line = lines[at]
    first_visible = len(line) - len(line.lstrip(" \t"))
    assume(len(line) - first_visible >= 2)
    cut = data.draw(st.integers(first_visible + 1, len(line) - 1))  # mid-token or after code
    old = line[cut:]
    file = file_of(lines, eol)
    assume(old.strip() and file.text.count(old) == 1 and old != new)
    outcome = apply_edits(file, [EditRequest(old, new)], path="f.py")
    assert outcome.file.raw == literal(file, old, new) and outcome.inserted_indents == []


def oracle(new: str, indent: str) -> str:
    """The rule, written out: lines 2..n that are not blank get the indentation in front, unless
    every one of them already starts with it."""
    first, *rest = new.split("\n")
    visible = [line for line in rest if line.strip()]
    if all(line.startswith(indent) for line in visible):
        return new
    return "\n".join([first, *(indent + line if line.strip() else line for line in rest)])


@given(st.lists(LINE, min_size=1, max_size=8), st.data(), NEW, EOLS)
def test_fires_at_the_first_visible_character_and_keeps_bytes_outside_the_span(
    lines: list[str], data: st.DataObject, new: str, eol: str
) -> None:
    at = data.draw(st.integers(0, len(lines) - 1))
    line = lines[at]
    code = line.lstrip(" \t")
    indent = line[: len(line) - len(code)]
    assume(indent)
    file = file_of(lines, eol)
    assume(file.text.count(code) == 1 and code != new)
    start = file.text.index(code)
    outcome = apply_edits(file, [EditRequest(code, new)], path="f.py")
    if new.startswith(indent):
        return  # new_string written whole from the line start: the first-line slip, not this rule
    expected_lf = file.text[:start] + oracle(new, indent) + file.text[start + len(code) :]
    assert outcome.file.raw == file.with_eol(expected_lf)
    # Bytes outside the span: the raw prefix and suffix are the file's own.
    raw_start = len(file.with_eol(file.text[:start]))
    raw_end = len(file.with_eol(file.text[: start + len(code)]))
    assert outcome.file.raw[:raw_start] == file.raw[:raw_start]
    assert outcome.file.raw.endswith(file.raw[raw_end:])
    # Without the rule the same edit is the literal splice.
    assert edited(file, code, new, reindent=False) == literal(file, code, new)
