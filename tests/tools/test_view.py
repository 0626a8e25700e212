from __future__ import annotations

import asyncio
import re
import tempfile
from pathlib import Path

from agent_toolsmith.fsutil.textio import looks_binary
from agent_toolsmith.llm.pages import text as view
from hypothesis import given
from hypothesis import strategies as st

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
    from agent_toolsmith.session import Session

    assert isinstance(session, Session)
    assert session.ctx.files.last_read(workspace / "f.txt") is not None


@given(
    st.lists(TEXT_LINE, max_size=30),
    st.sampled_from(["\n", "\r\n"]),
    st.booleans(),
    st.integers(1, 9),
    st.integers(1, 11),
)
def test_indexed_pages_equal_the_whole_file_read(
    lines: list[str], eol: str, final_newline: bool, limit: int, chunk: int
) -> None:
    """The byte-scanning path (forced on small files, with tiny chunks so every boundary case is
    hit) pages exactly like decoding the whole file."""
    from agent_toolsmith.fsutil import line_index

    ws = Path(tempfile.mkdtemp())
    text = eol.join(lines) + (eol if final_newline and lines else "")
    data = text.encode()
    if looks_binary(data):
        return
    (ws / "f.txt").write_bytes(data)
    expected = text.replace("\r\n", "\n").split("\n")
    if expected and expected[-1] == "":
        expected.pop()
    session = make_session(ws)
    saved = view.FULL_READ_MAX_BYTES, line_index.CHUNK_BYTES
    view.FULL_READ_MAX_BYTES, line_index.CHUNK_BYTES = -1, chunk
    try:
        got: list[str] = []
        offset = 0
        while offset < len(expected):
            r = asyncio.run(session.run("view", {"file_path": "f.txt", "offset": offset, "limit": limit}))
            assert not r.is_error, r.content
            page = shown_lines(r.content)
            assert [n for n, _ in page] == list(range(offset + 1, offset + 1 + len(page)))
            got += [t for _, t in page]
            offset += len(page)
            assert page
        assert got == expected
        if expected:  # asking past the end, once the whole file was seen, is an exact error
            r = asyncio.run(session.run("view", {"file_path": "f.txt", "offset": len(expected) + 3}))
            assert r.is_error and f"({len(expected)} lines)" in r.content
    finally:
        view.FULL_READ_MAX_BYTES, line_index.CHUNK_BYTES = saved


def test_deep_view_of_a_large_file_is_exact_and_cut(workspace: Path, run: Runner) -> None:
    big = workspace / "big.txt"
    with big.open("w") as handle:
        for i in range(300_000):
            handle.write(f"{i:09d} " + ("x" * 30) + "\n")
        handle.write("y" * 100_000 + "\n")  # one very long line near the end
        handle.write("last")
    r = run("view", {"file_path": "big.txt", "offset": 299_998, "limit": 10})
    page = shown_lines(r.content)
    assert [n for n, _ in page] == [299_999, 300_000, 300_001, 300_002]
    assert page[0][1].startswith("000299998 ") and page[2][1] == "y" * view.MAX_LINE_CHARS + "..."
    assert page[3][1] == "last"
    assert r.metadata["total_lines"] == 300_002 and r.metadata["total_lines_exact"] is True
    again = run("view", {"file_path": "big.txt", "offset": 150_000, "limit": 2})  # from the session's index
    assert [t[:9] for _, t in shown_lines(again.content)] == ["000150000", "000150001"]
    assert again.metadata["total_lines"] == 300_002  # the index saw the end already


def test_non_regular_files_are_refused_without_blocking(workspace: Path, run: Runner) -> None:
    import os

    fifo = workspace / "pipe"
    os.mkfifo(fifo)
    r = run("view", {"file_path": "pipe"})
    assert r.is_error and "is a FIFO (named pipe); view reads regular files only." in r.content
    r = run("view", {"file_path": "/dev/zero"})
    assert r.is_error and "is a character device" in r.content


def test_limit_is_clamped_to_the_output_bound(workspace: Path, run: Runner) -> None:
    (workspace / "f.txt").write_text("x\n" * 5000)
    r = run("view", {"file_path": "f.txt", "limit": 1_000_000_000})
    assert r.metadata["lines_shown"] == 2000 and "Use offset=2000" in r.content
