"""Documents that are not plain text: Jupyter notebooks (by cell) and PDFs (by page).

This package root holds only what view needs to decide and describe (suffixes and the per-call
bounds, enforced in ``notebook`` and ``pdf``); the modules that do the work, and the heavy parsers
they use (nbformat, pypdf), load only when a notebook or PDF is involved.
"""

from __future__ import annotations

from pathlib import Path

NOTEBOOK_SUFFIX = ".ipynb"
PDF_SUFFIX = ".pdf"
#: At most this many image outputs are attached to one notebook view; the rest are named, not attached.
MAX_IMAGES_PER_VIEW = 8
#: PDF pages extracted by one view call; the footer says which pages to ask for next.
MAX_PAGES_PER_VIEW = 20


def is_notebook(path: Path) -> bool:
    return path.suffix.lower() == NOTEBOOK_SUFFIX


def is_pdf(path: Path) -> bool:
    return path.suffix.lower() == PDF_SUFFIX
