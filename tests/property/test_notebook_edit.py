"""notebook_edit of arbitrary sources: the notebook stays valid, every other cell is unchanged,
and the edited cell holds exactly the source given."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from pathlib import Path

import nbformat
from agent_toolsmith.config import Config
from agent_toolsmith.session import Session
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SOURCES = st.text(st.characters(codec="utf-8"), max_size=200) | st.sampled_from(
    ["", "\n", "a\r\nb", "x\ry", "line\u2028sep", '"quoted" \\ back', "tab\there\n\n", "\x00\x1b[0m"]
)


def notebook(sources: list[str]) -> str:
    cells = [
        nbformat.v4.new_code_cell(s, execution_count=i, outputs=[nbformat.v4.new_output("stream", text=f"out {i}\n")])
        if i % 2 else nbformat.v4.new_markdown_cell(s)
        for i, s in enumerate(sources)
    ]  # fmt: skip
    text: str = nbformat.writes(nbformat.v4.new_notebook(cells=cells))
    return text


def source_of(cell: dict[str, object]) -> str:
    source = cell["source"]
    return "".join(source) if isinstance(source, list) else str(source)


@settings(deadline=None, max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(
    existing=st.lists(SOURCES, min_size=1, max_size=5),
    new_source=SOURCES,
    mode=st.sampled_from(["replace", "insert", "delete"]),
    pick=st.integers(min_value=0, max_value=10),
    cell_type=st.sampled_from([None, "code", "markdown", "raw"]),
)
def test_notebook_edit_keeps_the_notebook_valid_and_other_cells_identical(
    existing: list[str], new_source: str, mode: str, pick: int, cell_type: str | None
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(os.path.realpath(tmp))
        path = workspace / "nb.ipynb"
        path.write_text(notebook(existing), encoding="utf-8")
        before = json.loads(path.read_text(encoding="utf-8"))
        index = pick % (len(existing) + (1 if mode == "insert" else 0))
        session = Session(workspace, config=Config(lsp_enabled=False))
        assert not asyncio.run(session.run("view", {"file_path": str(path)})).is_error
        params = {"file_path": str(path), "cell_index": index, "new_source": new_source, "edit_mode": mode,
                  "cell_type": cell_type}  # fmt: skip
        response = asyncio.run(session.run("notebook_edit", params))
        assert not response.is_error, response.content
        after = json.loads(path.read_text(encoding="utf-8"))
        nbformat.validate(after)
        cells, old = after["cells"], before["cells"]
        if mode == "delete":
            assert cells == old[:index] + old[index + 1 :]
            return
        assert source_of(cells[index]) == new_source
        others = cells[:index] + cells[index + 1 :]
        if mode == "insert":
            assert others == old
            assert cells[index]["cell_type"] == (cell_type or "code")
        else:
            assert others == old[:index] + old[index + 1 :]
            assert cells[index]["cell_type"] == (cell_type or old[index]["cell_type"])
            assert cells[index]["id"] == old[index]["id"]
        assert after["metadata"] == before["metadata"]
        # Written in the file's own style (nbformat.writes: indent 1, no final newline): the file is
        # exactly the serialisation of its content, so nothing outside the edited cell moved.
        assert path.read_text(encoding="utf-8") == json.dumps(after, indent=1, ensure_ascii=False)


@given(source=st.text(st.characters(categories=["Cs"]), min_size=1, max_size=3))
@settings(deadline=None, max_examples=10)
def test_unencodable_sources_are_refused_cleanly(source: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(os.path.realpath(tmp))
        path = workspace / "nb.ipynb"
        path.write_text(notebook(["a"]), encoding="utf-8")
        before = path.read_bytes()
        session = Session(workspace, config=Config(lsp_enabled=False))
        asyncio.run(session.run("view", {"file_path": str(path)}))
        response = asyncio.run(session.run("notebook_edit", {"file_path": str(path), "cell_index": 0,
                                                             "new_source": source}))  # fmt: skip
        assert response.is_error and response.metadata["error"] == "invalid_source"
        assert path.read_bytes() == before


def odd_layout(sources: list[str]) -> str:
    """A notebook no rewrite reproduces: 2-space indent, a number written as 1.50, spaced colons."""
    text = json.dumps(json.loads(notebook(sources)), indent=2, ensure_ascii=False)
    text = text.replace('"metadata": {},\n  "nbformat": 4', '"metadata": {"ratio": 1.50},\n  "nbformat" :  4')
    assert "1.50" in text and json.dumps(json.loads(text), indent=2, ensure_ascii=False) != text
    return text


@settings(deadline=None, max_examples=30, suppress_health_check=[HealthCheck.too_slow])
@given(
    existing=st.lists(SOURCES, min_size=2, max_size=4),
    new_source=SOURCES,
    mode=st.sampled_from(["replace", "insert", "delete"]),
    pick=st.integers(min_value=0, max_value=10),
)
def test_an_odd_layout_is_kept_byte_for_byte_outside_the_edited_cell(
    existing: list[str], new_source: str, mode: str, pick: int
) -> None:
    from agent_toolsmith.documents.notebook_edit import cell_spans

    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(os.path.realpath(tmp))
        path = workspace / "nb.ipynb"
        original = odd_layout(existing)
        path.write_text(original, encoding="utf-8")
        index = pick % (len(existing) + (1 if mode == "insert" else 0))
        session = Session(workspace, config=Config(lsp_enabled=False))
        assert not asyncio.run(session.run("view", {"file_path": str(path)})).is_error
        params = {"file_path": str(path), "cell_index": index, "new_source": new_source, "edit_mode": mode}
        response = asyncio.run(session.run("notebook_edit", params))
        assert not response.is_error, response.content
        assert response.metadata["formatting_kept"] is True
        result = path.read_text(encoding="utf-8")
        nbformat.validate(json.loads(result))
        old_spans, new_spans = cell_spans(original), cell_spans(result)
        assert old_spans is not None and new_spans is not None
        old_cells = [original[a:b] for a, b in old_spans]
        new_cells = [result[a:b] for a, b in new_spans]
        if mode == "delete":
            assert new_cells == old_cells[:index] + old_cells[index + 1 :]
        elif mode == "insert":
            assert new_cells[:index] + new_cells[index + 1 :] == old_cells
        else:
            assert new_cells[:index] + new_cells[index + 1 :] == old_cells[:index] + old_cells[index + 1 :]
        assert result[: new_spans[0][0]] == original[: old_spans[0][0]]
        assert result[new_spans[-1][1] :] == original[old_spans[-1][1] :]  # "1.50" and the spaced colon kept
