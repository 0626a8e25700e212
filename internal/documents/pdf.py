"""PDF text by page, with pypdf (pure Python; imported only when a PDF is read).

Pages are chosen with a spec such as ``"3"``, ``"1-5"`` or ``"2,4,7-9"`` (1-based, in the order
given, duplicates dropped). One call extracts at most :data:`MAX_PAGES_PER_VIEW` pages. A page
without a text layer is reported as such (it is usually a scan): rendering a page to an image
needs a native renderer (poppler, mupdf), which this pure-Python reader does not have.
"""

from __future__ import annotations

import io
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ToolError
from . import MAX_PAGES_PER_VIEW

if TYPE_CHECKING:
    from pypdf import PageObject

#: A spec naming more pages than this is refused (it is a typo, or a request to page instead).
MAX_SPEC_PAGES = 100_000
#: No page is started after a view has spent this long extracting (at least one page is): one
#: page's text can take pypdf seconds (its own limits stop a content stream at 2 million tokens),
#: and the pages left are named for the next call.
MAX_EXTRACT_SECONDS = 10.0

_RANGE = r"^\s*(\d+)\s*(?:-\s*(\d*)\s*)?$"  # compiled on first use (re caches it)


def pdf_error(message: str, code: str) -> ToolError:
    return ToolError(message, code=code)


def parse_pages(spec: str, count: int) -> list[int]:
    """1-based page numbers named by ``spec`` ("3", "1-5", "2,4", "7-" = 7 to the end)."""
    pages: list[int] = []
    seen: set[int] = set()
    for part in spec.split(","):
        match = re.match(_RANGE, part)
        if not match:
            raise pdf_error(
                f"Invalid pages {spec!r}: use page numbers and ranges from 1, e.g. \"3\", \"1-5\" or \"2,4,7-9\".",
                "invalid_pages",
            )
        first = int(match.group(1))
        last = first if match.group(2) is None else (int(match.group(2)) if match.group(2) else count)
        if first < 1 or last < first:
            raise pdf_error(f"Invalid page range {part.strip()!r}: pages are numbered from 1, low to high.",
                            "invalid_pages")  # fmt: skip
        if first > count:
            raise pdf_error(f"Page {first} does not exist: the PDF has {count} pages (1 to {count}).",
                            "page_out_of_range")  # fmt: skip
        last = min(last, count)
        if len(pages) + last - first > MAX_SPEC_PAGES:
            raise pdf_error(f"pages {spec!r} names too many pages.", "invalid_pages")
        for page in range(first, last + 1):
            if page not in seen:
                seen.add(page)
                pages.append(page)
    if not pages:
        raise pdf_error(f"pages {spec!r} names no page.", "invalid_pages")
    return pages


@dataclass
class PdfPages:
    count: int
    #: (page number, text or None for a page without a text layer, has images)
    pages: list[tuple[int, str | None, bool]] = field(default_factory=list)
    #: Pages named by the spec beyond this call's bound.
    remaining: list[int] = field(default_factory=list)
    title: str = ""


def too_complex_error(path: Path, why: object) -> ToolError:
    return pdf_error(
        f"{path} is too large or too deeply nested for the PDF reader's limits ({why}); its text cannot be shown "
        "here. A native reader (pdftotext through bash, where installed) may read it.",
        "pdf_too_complex",
    )


def open_pdf(data: bytes, path: Path) -> Any:
    """A pypdf reader for ``data``; clear errors for encrypted, malformed and oversized files (a
    page tree past pypdf's limits on entries and depth, objects nested past Python's recursion)."""
    from pypdf import PdfReader
    from pypdf.errors import DependencyError, LimitReachedError, PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            try:
                opened = reader.decrypt("")  # many "encrypted" PDFs only restrict printing/copying
            except (DependencyError, NotImplementedError) as exc:
                raise pdf_error(f"{path} is encrypted and cannot be decrypted here ({exc}).", "pdf_encrypted") from None
            if not opened:
                raise pdf_error(
                    f"{path} is encrypted with a password; its text cannot be read. Ask the user for an "
                    "unencrypted copy.", "pdf_encrypted")  # fmt: skip
        _ = len(reader.pages)  # parses the page tree: a broken one fails here, not mid-view
    except ToolError:
        raise
    except LimitReachedError as exc:
        raise too_complex_error(path, exc) from None
    except RecursionError:
        raise too_complex_error(path, "objects nested too deeply") from None
    except (PdfReadError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise pdf_error(f"{path} could not be read as a PDF: {exc}", "pdf_unreadable") from None
    return reader


def _has_images(page: PageObject) -> bool:
    from pypdf.errors import PyPdfError

    try:
        resources = page.get("/Resources")
        xobjects = resources.get_object().get("/XObject") if resources is not None else None
        if xobjects is None:
            return False
        return any(x.get_object().get("/Subtype") == "/Image" for x in xobjects.get_object().values())
    except (AttributeError, KeyError, TypeError, ValueError, RecursionError, PyPdfError):
        return False


def extract_pages(data: bytes, path: Path, spec: str | None, check: Callable[[], None]) -> PdfPages:
    """The text of the pages ``spec`` names (all when None), at most MAX_PAGES_PER_VIEW of them,
    and no more once MAX_EXTRACT_SECONDS have gone (the rest are left for the next call)."""
    reader = open_pdf(data, path)
    count = len(reader.pages)
    wanted = parse_pages(spec, count) if spec else list(range(1, count + 1))
    result = PdfPages(count, remaining=wanted[MAX_PAGES_PER_VIEW:])
    result.title = _title(reader)
    deadline = time.monotonic() + MAX_EXTRACT_SECONDS
    for at, number in enumerate(wanted[:MAX_PAGES_PER_VIEW]):
        check()
        if at and time.monotonic() > deadline:
            result.remaining = wanted[at:]
            break
        page = reader.pages[number - 1]
        try:
            text = page.extract_text() or ""
        except Exception as exc:  # pypdf raises many types for a damaged content stream
            text = f"[page {number}: its text could not be extracted: {type(exc).__name__}: {exc}]"
        stripped = text.strip()
        result.pages.append((number, stripped if stripped else None, _has_images(page) if not stripped else False))
    return result


def _title(reader: Any) -> str:
    """The document's title, or "" (also when its metadata cannot be read: it is only a label)."""
    from pypdf.errors import PyPdfError

    try:
        metadata = reader.metadata
        return str(metadata.title) if metadata is not None and metadata.title else ""
    except (PyPdfError, RecursionError, AttributeError, KeyError, TypeError, ValueError):
        return ""


def describe_ranges(pages: list[int]) -> str:
    """``[3,4,5,9]`` -> ``"3-5,9"`` (a pages value the model can pass back)."""
    parts: list[str] = []
    start = prev = pages[0]
    for page in [*pages[1:], -1]:
        if page == prev + 1:
            prev = page
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = page
    return ",".join(parts)
