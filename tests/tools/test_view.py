from __future__ import annotations

import asyncio
import re
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from toolsmith.fsutil.textio import looks_binary
from toolsmith.llm.tools import view

from tests.conftest import Runner, make_session

LINE = re.compile(r"^\s*(\d+)\|(.*)$")


def shown_lines(content: str) -> list[tuple[int, str]]:
    body = content.split("<file>\n", 1)[1].split("\n</file>", 1)[0]
    return [(int(m.group(1)), m.group(2)) for m in map(LINE.match, body.split("\n")) if m]


def test_numbers_and_footer(workspace: Path, run: Runner) -> None:
    (workspace / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    r = run("view", {"file_path": "f.txt", "offset": 2, "limit": 3})
    assert not r.is_error
    assert shown_lines(r.content) == [(3, "line 3"), (4, "line 4"), (5, "line 5")]
    assert "(Showing lines 3-5 of 10 total. Use offset=5 to continue reading.)" in r.content
    whole = run("view", {"file_path": "f.txt"})
    assert "Showing lines" not in whole.content
    assert whole.content.startswith("<file>\n     1|line 1\n")


def test_long_lines_cut(workspace: Path, run: Runner) -> None:
    (workspace / "f.txt").write_text("x" * 5000 + "\nshort\n")
    r = run("view", {"file_path": "f.txt"})
    first = shown_lines(r.content)[0][1]
    assert first == "x" * view.MAX_LINE_CHARS + "..."


def test_not_found_suggests(workspace: Path, run: Runner) -> None:
    (workspace / "config.yaml").write_text("a: 1\n")
    r = run("view", {"file_path": "config.yml"})
    assert r.is_error
    assert r.content.startswith("File not found:")
    assert "Did you mean one of these?" in r.content and "config.yaml" in r.content


def test_directory_and_binary_refused(workspace: Path, run: Runner) -> None:
    (workspace / "d").mkdir()
    r = run("view", {"file_path": "d"})
    assert r.is_error and "ls tool" in r.content
    (workspace / "b.bin").write_bytes(b"\x00\x01\x02binary")
    r = run("view", {"file_path": "b.bin"})
    assert r.is_error and "appears to be binary" in r.content


def test_image_attached(workspace: Path, run: Runner) -> None:
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 20
    (workspace / "i.png").write_bytes(png)
    r = run("view", {"file_path": "i.png"})
    assert not r.is_error and r.images and r.images[0].media_type == "image/png"


def test_offset_beyond_end(workspace: Path, run: Runner) -> None:
    (workspace / "f.txt").write_text("a\nb\n")
    r = run("view", {"file_path": "f.txt", "offset": 5})
    assert r.is_error and "beyond the end" in r.content


def test_utf16_and_crlf_shown_as_text(workspace: Path, run: Runner) -> None:
    (workspace / "u.txt").write_bytes("\ufeffhé\r\nwo\r\n".encode("utf-16-le"))
    r = run("view", {"file_path": "u.txt"})
    assert shown_lines(r.content) == [(1, "hé"), (2, "wo")]


TEXT_LINE = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\n\x00"), max_size=30)


@given(st.lists(TEXT_LINE, max_size=40), st.integers(1, 15))
def test_pages_concatenate_to_the_file(lines: list[str], limit: int) -> None:
    ws = Path(tempfile.mkdtemp())
    data = "".join(line + "\n" for line in lines).encode()
    if looks_binary(data):
        return
    (ws / "f.txt").write_bytes(data)
    session = make_session(ws)
    got: list[str] = []
    offset = 0
    while offset < max(len(lines), 1):
        r = asyncio.run(session.run("view", {"file_path": "f.txt", "offset": offset, "limit": limit}))
        assert not r.is_error, r.content
        page = shown_lines(r.content)
        assert [n for n, _ in page] == list(range(offset + 1, offset + 1 + len(page)))
        got += [text for _, text in page]
        if not page:
            break
        offset += len(page)
    assert got == lines


def test_streaming_large_file_pages(workspace: Path, run: Runner) -> None:
    big = workspace / "big.txt"
    line = "0123456789" * 9 + "\n"
    count = view.FULL_READ_MAX_BYTES // len(line) + 5000
    with big.open("w") as handle:
        for i in range(count):
            handle.write(f"{i:09d} {line}")
    r = run("view", {"file_path": "big.txt", "offset": 1000, "limit": 5})
    assert [n for n, _ in shown_lines(r.content)] == [1001, 1002, 1003, 1004, 1005]
    assert shown_lines(r.content)[0][1].startswith("000001000 ")
    assert "of about" in r.content and "Use offset=1005" in r.content


def test_view_records_read(workspace: Path, run: Runner, session: object) -> None:
    (workspace / "f.txt").write_text("a\n")
    run("view", {"file_path": "f.txt"})
    from toolsmith.session import Session

    assert isinstance(session, Session)
    assert session.ctx.files.last_read(workspace / "f.txt") is not None
