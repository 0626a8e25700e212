"""view of a 5 MB notebook and of a 300-page PDF, the whole call through Session.run, vs the
parser alone: ``nbformat.read`` (what any notebook reader pays) and pypdf's extraction of the same
pages. Runs are interleaved (A B A B, bench/harness.py) so machine noise hits both alike; each row
prints the median and min–max of the per-pair ratios. Goal: ≤ 1.5× for both. Also, for
information: notebook_edit of one cell (read guard, validation, atomic commit) vs nbformat reading,
changing and writing the same notebook.

Run from the repository root: ``.venv/bin/python bench/documents.py`` (or ``make bench
BENCH=documents.py``).
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import nbformat
from agent_toolsmith.config import Config
from agent_toolsmith.session import Session
from harness import exit_status, pairs_async
from pypdf import PdfReader

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/ is not installed
from tests.pdf_writer import text_pdf

#: Pairs per row: a single-page PDF view is ~25 ms and varies by half between runs on this
#: machine (nine pairs printed 1.57× and 1.05× in two runs of the same code), so 21.
RUNS = int(os.environ.get("BENCH_RUNS", "21"))
#: A document view through Session.run vs its parser alone (docs/benchmarks.md).
VIEW_GOAL = 1.5
NOTEBOOK_BYTES = 5 * 1024 * 1024
PDF_PAGES = 300
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40).decode()


def make_notebook(path: Path) -> int:
    """Code cells with stream output, and every tenth a figure, until the file is ~5 MB; written
    as Jupyter writes (indent 1, keys sorted)."""

    def pair(index: int) -> list[dict[str, Any]]:
        source = [f"value_{index}_{k} = compute({k}, scale={index})\n" for k in range(12)]
        outputs: list[dict[str, Any]] = [{"name": "stdout", "output_type": "stream",
                                          "text": [f"step {k}: loss={1 / (k + 1):.6f}\n" for k in range(60)]}]
        if index % 10 == 0:
            outputs.append({"data": {"image/png": PNG, "text/plain": ["<Figure>"]}, "metadata": {},
                            "output_type": "display_data"})
        return [
            {"cell_type": "code", "execution_count": index, "id": f"c{index:07d}", "metadata": {},
             "outputs": outputs, "source": source},
            {"cell_type": "markdown", "id": f"m{index:07d}", "metadata": {},
             "source": [f"## Step {index}\n", f"Notes about step {index}."]},
        ]  # fmt: skip

    def document(count: int) -> str:
        cells = [cell for index in range(count) for cell in pair(index)]
        notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        return json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"

    per_ten = len(document(10))
    text = document(10 * NOTEBOOK_BYTES // per_ten)
    path.write_text(text)
    return text.count('"cell_type"')


def make_pdf(path: Path) -> None:
    lines = [f"Line {k}: the quick brown fox jumps over the lazy dog, section {k // 10}." for k in range(45)]
    path.write_bytes(text_pdf(["\n".join([f"Page {n}", *lines]) for n in range(1, PDF_PAGES + 1)]))


async def compare(
    label: str,
    tool: Callable[[], Awaitable[object]],
    reference: Callable[[], object],
    *,
    reference_name: str,
    goal: float | None = VIEW_GOAL,
) -> None:
    await pairs_async(label, tool, reference, runs=RUNS, reference_name=reference_name, goal=goal)


async def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        notebook = workspace / "big.ipynb"
        cells = make_notebook(notebook)
        pdf = workspace / "book.pdf"
        make_pdf(pdf)
        print(f"notebook: {notebook.stat().st_size / 1e6:.1f} MB, {cells} cells; pdf: {PDF_PAGES} pages, "
              f"{pdf.stat().st_size / 1e6:.1f} MB; {RUNS} interleaved pairs")  # fmt: skip
        session = Session(workspace, config=Config(lsp_enabled=False))

        def view(params: dict[str, object]) -> Callable[[], Awaitable[object]]:
            async def run() -> object:
                response = await session.run("view", params)
                assert not response.is_error, response.content[:300]
                return response

            return run

        def read_notebook() -> object:
            return nbformat.read(str(notebook), as_version=4)  # type: ignore[no-untyped-call]

        await compare("notebook view (first page of cells)", view({"file_path": str(notebook)}), read_notebook,
                reference_name="nbformat.read")  # fmt: skip
        middle = view({"file_path": str(notebook), "offset": cells // 2})
        await compare("notebook view (cells from the middle)", middle, read_notebook, reference_name="nbformat.read")

        turn = iter(range(1_000_000))

        async def edit_cell() -> object:
            params = {"file_path": str(notebook), "cell_index": cells // 2, "new_source": f"x = {next(turn)}"}
            response = await session.run("notebook_edit", params)
            assert not response.is_error, response.content[:300]
            return response

        def nbformat_round_trip() -> object:
            nb = nbformat.read(str(notebook), as_version=4)  # type: ignore[no-untyped-call]
            nb.cells[cells // 2].source = f"x = {next(turn)}"
            nbformat.write(nb, str(workspace / "copy.ipynb"))  # type: ignore[no-untyped-call]
            return nb

        await compare("notebook_edit one cell", edit_cell, nbformat_round_trip, reference_name="nbformat read+write",
                goal=None)  # fmt: skip

        def extract(first: int, last: int) -> Callable[[], object]:
            def run() -> object:
                reader = PdfReader(io.BytesIO(pdf.read_bytes()))
                return [reader.pages[n - 1].extract_text() for n in range(first, last + 1)]

            return run

        for label, pages, first, last in (
            ("pdf view pages 1-20", "1-20", 1, 20),
            ("pdf view pages 281-300", "281-300", 281, 300),
            ("pdf view page 150", "150", 150, 150),
        ):
            viewed = view({"file_path": str(pdf), "pages": pages})
            await compare(label, viewed, extract(first, last), reference_name="pypdf")
        await session.close()
    return exit_status()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
