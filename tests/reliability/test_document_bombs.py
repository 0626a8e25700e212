"""Nesting and size bombs in notebooks and PDFs: each answers with a clear, documented error (never
"Internal error"), in bounded time, and nothing is written."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from agent_toolsmith.documents import notebook, pdf

from tests.conftest import Runner
from tests.pdf_writer import raw_pdf, text_pdf

#: Bound for one call on a bomb: only a hang or an unbounded walk passes it.
SLOW_S = 60.0
CATALOG = b"<< /Type /Catalog /Pages 2 0 R >>"
LEAF = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"


def nested_json(depth: int) -> str:
    return "[" * depth + "]" * depth


def a_notebook(metadata_value: str) -> str:
    return (
        '{"nbformat": 4, "nbformat_minor": 5, "metadata": {"x": ' + metadata_value + '}, "cells": [{"cell_type": '
        '"code", "id": "a1", "metadata": {}, "source": "print(1)", "execution_count": null, "outputs": []}]}\n'
    )


# --- notebooks ----------------------------------------------------------------------------------


def test_a_notebook_nested_100_000_deep_is_refused_clearly(workspace: Path, run: Runner) -> None:
    body = a_notebook(nested_json(100_000))
    (workspace / "deep.ipynb").write_text(body)
    started = time.monotonic()
    viewed = run("view", {"file_path": "deep.ipynb"})
    assert viewed.is_error and viewed.metadata["error"] == "notebook_too_deep", viewed.content
    assert f"deeper than {notebook.MAX_NOTEBOOK_DEPTH} levels" in viewed.content
    edited = run("notebook_edit", {"file_path": "deep.ipynb", "cell_index": 0, "new_source": "x"})
    assert time.monotonic() - started < SLOW_S
    assert edited.is_error and edited.metadata["error"] == "notebook_too_deep", edited.content
    assert (workspace / "deep.ipynb").read_text() == body


@pytest.mark.parametrize("depth", [900, notebook.MAX_NOTEBOOK_DEPTH + 1])
def test_a_notebook_json_can_load_still_is_too_deep_past_the_limit(workspace: Path, run: Runner, depth: int) -> None:
    (workspace / "d.ipynb").write_text(a_notebook(nested_json(depth - 2)))  # in the notebook and its metadata
    r = run("view", {"file_path": "d.ipynb"})
    assert r.is_error and r.metadata["error"] == "notebook_too_deep", r.content


def test_a_notebook_at_the_limit_is_read_and_edited(workspace: Path, run: Runner) -> None:
    (workspace / "ok.ipynb").write_text(a_notebook(nested_json(notebook.MAX_NOTEBOOK_DEPTH - 2)))
    viewed = run("view", {"file_path": "ok.ipynb"})
    assert not viewed.is_error and "print(1)" in viewed.content, viewed.content
    edited = run("notebook_edit", {"file_path": "ok.ipynb", "cell_index": 0, "new_source": "print(2)"})
    assert not edited.is_error, edited.content
    assert "print(2)" in (workspace / "ok.ipynb").read_text()


def test_brackets_inside_strings_do_not_make_a_notebook_deep(workspace: Path, run: Runner) -> None:
    (workspace / "s.ipynb").write_text(a_notebook(json.dumps("(" * 10_000 + "[" * 10_000)))
    assert not run("view", {"file_path": "s.ipynb"}).is_error


def test_a_text_edit_cannot_make_a_notebook_too_deep_but_may_replace_one(workspace: Path, run: Runner) -> None:
    good = a_notebook("1")
    (workspace / "n.ipynb").write_text(good)
    run("view", {"file_path": "n.ipynb"})
    r = run("write", {"file_path": "n.ipynb", "content": a_notebook(nested_json(5_000))})
    assert r.is_error and r.metadata["error"] == "notebook_invalid" and "nests deeper than" in r.content, r.content
    assert (workspace / "n.ipynb").read_text() == good
    (workspace / "bad.ipynb").write_text(a_notebook(nested_json(5_000)))
    refused = run("view", {"file_path": "bad.ipynb"})
    assert refused.is_error and "write can replace it" in refused.content
    replaced = run("write", {"file_path": "bad.ipynb", "content": good})
    assert not replaced.is_error and (workspace / "bad.ipynb").read_text() == good, replaced.content


# --- PDFs ---------------------------------------------------------------------------------------


def kids_pdf(kids: int) -> bytes:
    """One page tree node whose Kids array names the same page ``kids`` times."""
    tree = ("<< /Type /Pages /Kids [" + " 3 0 R" * kids + f"] /Count {kids} >>").encode()
    return raw_pdf([CATALOG, tree, LEAF])


def wide_pdf(nodes: int, kids: int) -> bytes:
    """``nodes`` page tree nodes of ``kids`` pages each: no array is long, the tree is."""
    children = " ".join(f"{3 + i} 0 R" for i in range(nodes))
    objects = [CATALOG, f"<< /Type /Pages /Kids [{children}] /Count {nodes * kids} >>".encode()]
    leaf = 3 + nodes
    objects += [("<< /Type /Pages /Parent 2 0 R /Kids [" + f" {leaf} 0 R" * kids + f"] /Count {kids} >>").encode()
                for _ in range(nodes)]  # fmt: skip
    return raw_pdf([*objects, b"<< /Type /Page /MediaBox [0 0 612 792] >>"])


def deep_tree_pdf(depth: int) -> bytes:
    objects = [CATALOG] + [f"<< /Type /Pages /Kids [{i + 3} 0 R] /Count 1 >>".encode() for i in range(depth)]
    return raw_pdf([*objects, b"<< /Type /Page /MediaBox [0 0 612 792] >>"])


@pytest.mark.parametrize(
    ("name", "make"),
    [
        ("kids.pdf", lambda: kids_pdf(200_000)),
        ("wide.pdf", lambda: wide_pdf(4, 60_000)),
        ("deep-tree.pdf", lambda: deep_tree_pdf(20_000)),
    ],
)
def test_a_page_tree_past_the_readers_limits_is_refused_clearly(
    workspace: Path, run: Runner, name: str, make: Callable[[], bytes]
) -> None:
    (workspace / name).write_bytes(make())
    started = time.monotonic()
    r = run("view", {"file_path": name})
    assert r.is_error and r.metadata["error"] == "pdf_too_complex", r.content
    assert "too large or too deeply nested" in r.content and time.monotonic() - started < SLOW_S


def test_objects_nested_past_recursion_are_a_clear_error(workspace: Path, run: Runner) -> None:
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /X " + b"[" * 100_000 + b"]" * 100_000 + b" >>"
    (workspace / "deep.pdf").write_bytes(raw_pdf([CATALOG, b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>", page]))
    r = run("view", {"file_path": "deep.pdf"})
    assert r.is_error and r.metadata["error"] in ("pdf_unreadable", "pdf_too_complex"), r.content
    assert not r.content.startswith("Internal error")


def test_extraction_stops_starting_pages_past_its_time(
    workspace: Path, run: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "three.pdf").write_bytes(text_pdf(["one", "two", "three"]))
    monkeypatch.setattr(pdf, "MAX_EXTRACT_SECONDS", 0.0)
    r = run("view", {"file_path": "three.pdf"})
    assert not r.is_error and r.metadata["pages_shown"] == [1], r.content
    assert 'Use pages="2-3" to continue' in r.content
