from __future__ import annotations

import codecs

import pytest
from agent_toolsmith.fsutil.textio import (
    BinaryFileError,
    UndecodableFileError,
    UnencodableTextError,
    decode_bytes,
    detect_eol,
    looks_binary,
    new_text_file,
)
from hypothesis import given
from hypothesis import strategies as st

ENCODINGS = [
    ("utf-8", b""),
    ("utf-8", codecs.BOM_UTF8),
    ("utf-16-le", codecs.BOM_UTF16_LE),
    ("utf-16-be", codecs.BOM_UTF16_BE),
    ("utf-32-le", codecs.BOM_UTF32_LE),
    ("utf-32-be", codecs.BOM_UTF32_BE),
]

line_text = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\n\x00"), max_size=20)


@st.composite
def text_with_eols(draw: st.DrawFn) -> str:
    lines = draw(st.lists(line_text, max_size=8))
    eols = draw(st.lists(st.sampled_from(["\n", "\r\n", "\r"]), min_size=len(lines), max_size=len(lines)))
    body = "".join(line + eol for line, eol in zip(lines, eols, strict=True))
    return body + draw(line_text)


@pytest.mark.parametrize(("encoding", "bom"), ENCODINGS)
def test_bom_detected_and_round_trips(encoding: str, bom: bytes) -> None:
    data = bom + "héllo\r\nwörld\r\n".encode(encoding)
    tf = decode_bytes(data)
    assert tf.encoding == encoding
    assert tf.bom == bom
    assert tf.eol == "\r\n"
    assert tf.text == "héllo\nwörld\n"
    assert tf.encode() == data


@given(text_with_eols(), st.sampled_from(ENCODINGS))
def test_round_trip_is_byte_exact(text: str, enc: tuple[str, bytes]) -> None:
    encoding, bom = enc
    data = bom + text.encode(encoding)
    if not bom and looks_binary(data):
        return
    tf = decode_bytes(data)
    assert tf.encode() == data


@given(text_with_eols(), st.data())
def test_splice_keeps_bytes_outside_span(text: str, data: st.DataObject) -> None:
    tf = decode_bytes(text.encode("utf-8")) if not looks_binary(text.encode()) else None
    if tf is None:
        return
    start = data.draw(st.integers(0, len(tf.text)))
    end = data.draw(st.integers(start, len(tf.text)))
    new = data.draw(line_text)
    raw = tf.splice([(start, end, new)])
    a, b = tf.raw_offset(start), tf.raw_offset(end)
    assert raw[:a] == tf.raw[:a]
    assert raw[len(raw) - (len(tf.raw) - b) :] == tf.raw[b:]


def test_latin1_detected_and_round_trips() -> None:
    data = "café crème brûlée, naïve façade, déjà vu\n".encode("latin-1") * 5
    tf = decode_bytes(data)
    assert "café" in tf.text
    assert tf.encode() == data


def test_eol_majority() -> None:
    assert detect_eol("a\r\nb\r\nc\n") == "\r\n"
    assert detect_eol("a\nb\nc\r\n") == "\n"
    assert detect_eol("a\rb\rc") == "\r"
    assert detect_eol("no newline") == "\n"


def test_binary_detection() -> None:
    with pytest.raises(BinaryFileError, match="appears to be binary"):
        decode_bytes(b"abc\x00def")
    with pytest.raises(BinaryFileError):
        decode_bytes(bytes(range(1, 32)) * 10)
    assert not looks_binary(b"plain text\twith tabs\n")


@given(st.binary(max_size=5000))
def test_binary_sniff_counts_control_bytes_as_the_rule_says(data: bytes) -> None:
    # The rule (seed 2.15), written out byte by byte: NUL, or more than 30% control bytes
    # (other than tab, newline, CR, form feed, backspace, escape; DEL counts) in the first 4096.
    sample = data[:4096]
    controls = sum(1 for b in sample if (b < 0x20 and b not in b"\t\n\r\f\b\x1b") or b == 0x7F)
    expected = bool(sample) and (0 in sample or controls / len(sample) > 0.30)
    assert looks_binary(data) == expected


@given(st.lists(st.sampled_from([b"\x01", b"\x7f", b"\t", b"a", b"\x1b", b"\x1f"]), max_size=200))
def test_binary_sniff_threshold_with_dense_controls(parts: list[bytes]) -> None:
    data = b"".join(parts)
    controls = sum(1 for b in data if b in (0x01, 0x7F, 0x1F))
    assert looks_binary(data) == (bool(data) and controls / len(data) > 0.30)


def test_undeclared_encoding_is_utf8_when_it_decodes_else_guessed() -> None:
    assert decode_bytes("caf\u00e9 \u2603\n".encode()).encoding == "utf-8"
    latin = decode_bytes("caf\u00e9 cr\u00e8me br\u00fbl\u00e9e, na\u00efve fa\u00e7ade\n".encode("cp1252"))
    assert latin.encoding == "cp1252" and latin.text.startswith("caf\u00e9")


def test_undecodable_is_refused_not_replaced() -> None:
    # Invalid UTF-8 that no single-byte guess should round-trip into garbage silently.
    data = b"\x81\x8d\x8f\x90\x9d" * 50
    try:
        tf = decode_bytes(data)
    except (UndecodableFileError, BinaryFileError):
        return
    assert "\ufffd" not in tf.text
    assert tf.encode() == data


def test_unencodable_new_text_is_a_clear_error() -> None:
    tf = decode_bytes("café\n".encode("latin-1") * 20)
    with pytest.raises(UnencodableTextError, match="cannot be written"):
        tf.encode(tf.raw + "€ and ✓")


def test_new_text_file_follows_existing_style() -> None:
    like = decode_bytes(codecs.BOM_UTF8 + b"a\r\nb\r\n")
    new = new_text_file("x\ny\n", like=like)
    assert new.encode() == codecs.BOM_UTF8 + b"x\r\ny\r\n"
    own = new_text_file("x\r\ny\n", like=decode_bytes(b"a\nb\n"))
    assert own.raw == "x\r\ny\n"
