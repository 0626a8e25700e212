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
