"""PDFs in view: text by page, a bounded number of pages per call, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_toolsmith.documents import MAX_PAGES_PER_VIEW

from tests.conftest import Runner
from tests.pdf_writer import encrypted, text_pdf


@pytest.fixture
def report(workspace: Path) -> Path:
    path = workspace / "report.pdf"
    pages: list[str | None] = [f"Page {n} heading\nbody of page {n} (with parens)" for n in range(1, 6)]
    pages[3] = None  # page 4 is a scan
    path.write_bytes(text_pdf(pages, title="Quarterly"))
    return path


def test_page_two_alone(run: Runner, report: Path) -> None:
    response = run("view", {"file_path": str(report), "pages": "2"})
    assert not response.is_error, response.content
    assert "--- page 2 of 5 ---\nPage 2 heading\nbody of page 2 (with parens)" in response.content
    assert "Page 1 heading" not in response.content and "Page 3 heading" not in response.content
    assert "Showed page 2 of 5" in response.content and 'title="Quarterly"' in response.content
    assert response.metadata["pages_shown"] == [2] and response.metadata["total_pages"] == 5


@pytest.mark.parametrize(("spec", "shown"), [("1-3", [1, 2, 3]), ("2,5", [2, 5]), ("5,1", [5, 1]), ("4-", [4, 5])])
def test_page_specs(run: Runner, report: Path, spec: str, shown: list[int]) -> None:
    response = run("view", {"file_path": str(report), "pages": spec})
    assert response.metadata["pages_shown"] == shown
    positions = [response.content.index(f"--- page {n} of 5 ---") for n in shown]
    assert positions == sorted(positions)


def test_image_only_page_is_reported(run: Runner, report: Path) -> None:
    response = run("view", {"file_path": str(report)})
    assert "[page 4 has no text layer: it is an image" in response.content and "not rendered" in response.content
    assert response.metadata["image_only_pages"] == [4]
    assert "Page 5 heading" in response.content


def test_bad_page_specs_are_clear(run: Runner, report: Path) -> None:
    beyond = run("view", {"file_path": str(report), "pages": "9"})
    assert beyond.is_error and beyond.metadata["error"] == "page_out_of_range" and "5 pages" in beyond.content
    for spec in ("0", "3-1", "two", "1,,2"):
        bad = run("view", {"file_path": str(report), "pages": spec})
        assert bad.is_error and bad.metadata["error"] == "invalid_pages", spec
    not_pdf = run("view", {"file_path": str(report.with_suffix(".txt")), "pages": "1"})
    assert not_pdf.is_error and "PDF files only" in not_pdf.content


def test_a_long_pdf_is_bounded_and_says_how_to_continue(run: Runner, workspace: Path) -> None:
    path = workspace / "book.pdf"
    path.write_bytes(text_pdf([f"chapter text {n}" for n in range(1, 46)]))
    first = run("view", {"file_path": str(path)})
    assert first.metadata["pages_shown"] == list(range(1, MAX_PAGES_PER_VIEW + 1))
    assert f'Use pages="{MAX_PAGES_PER_VIEW + 1}-45" to continue' in first.content
    nxt = run("view", {"file_path": str(path), "pages": f"{MAX_PAGES_PER_VIEW + 1}-45"})
    assert nxt.metadata["pages_shown"][0] == MAX_PAGES_PER_VIEW + 1
    assert f"chapter text {MAX_PAGES_PER_VIEW + 1}" in nxt.content and "chapter text 1\n" not in nxt.content


def test_encrypted_pdf(run: Runner, workspace: Path) -> None:
    locked = workspace / "locked.pdf"
    locked.write_bytes(encrypted(text_pdf(["secret text"]), "hunter2"))
    response = run("view", {"file_path": str(locked)})
    assert response.is_error and response.metadata["error"] == "pdf_encrypted"
    assert "password" in response.content and "secret text" not in response.content
    # An empty user password (only permissions restricted) opens as usual.
    open_pdf = workspace / "restricted.pdf"
    open_pdf.write_bytes(encrypted(text_pdf(["readable text"]), ""))
    opened = run("view", {"file_path": str(open_pdf)})
    assert not opened.is_error and "readable text" in opened.content


def test_a_damaged_pdf_is_a_clear_error(run: Runner, workspace: Path) -> None:
    path = workspace / "damaged.pdf"
    path.write_bytes(b"%PDF-1.4\nnot really a pdf\n")
    response = run("view", {"file_path": str(path)})
    assert response.is_error and response.metadata["error"] == "pdf_unreadable"


def test_an_empty_pdf_and_a_scattered_page_list(run: Runner, workspace: Path) -> None:
    empty = workspace / "empty.pdf"
    empty.write_bytes(text_pdf([]))
    response = run("view", {"file_path": str(empty)})
    assert not response.is_error, response.content
    assert "no pages" in response.content and response.metadata["total_pages"] == 0

    path = workspace / "many.pdf"
    path.write_bytes(text_pdf([f"p{n}" for n in range(1, 121)]))
    odd = ",".join(str(n) for n in range(1, 121, 2))  # 60 pages, none adjacent
    first = run("view", {"file_path": str(path), "pages": odd})
    assert first.metadata["pages_shown"] == list(range(1, 41, 2))
    nxt = ",".join(str(n) for n in range(41, 81, 2))
    assert f'Use pages="{nxt}" to continue; 40 of the requested pages remain.' in first.content
