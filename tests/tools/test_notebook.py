"""Notebooks: view shows cells with outputs; notebook_edit changes one cell and nothing else;
text edits never leave a broken notebook."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from agent_toolsmith.llm.tools.contract import ToolResponse

from tests.conftest import Runner

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 32).decode()


def make_notebook(path: Path, *, minor: int = 5) -> dict[str, Any]:
    """A notebook as Jupyter writes it (nbformat.write: indent 1, keys sorted)."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
    nb.metadata["custom"] = {"keep": [1, 2, 3]}
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Title\nSome prose, naïve café."),
        nbformat.v4.new_code_cell(
            "import math\nprint('hi')\nmath.pi",
            execution_count=1,
            outputs=[
                nbformat.v4.new_output("stream", name="stdout", text="hi\n"),
                nbformat.v4.new_output(
                    "execute_result", data={"text/plain": "3.141592653589793", "image/png": PNG}, execution_count=1
                ),
            ],
        ),
        nbformat.v4.new_code_cell(
            "1/0",
            execution_count=2,
            outputs=[
                nbformat.v4.new_output(
                    "error",
                    ename="ZeroDivisionError",
                    evalue="division by zero",
                    traceback=["\x1b[0;31m-----\x1b[0m"] + [f"frame {i}" for i in range(40)]
                    + ["\x1b[0;31mZeroDivisionError\x1b[0m: division by zero"],
                )
            ],
        ),
        nbformat.v4.new_code_cell("x = 2", execution_count=3, outputs=[
            nbformat.v4.new_output("stream", name="stdout", text="\x1b[1mbold\x1b[0m\n")]),
    ]  # fmt: skip
    if minor < 5:
        nb.nbformat_minor = minor
        for cell in nb.cells:
            del cell["id"]
    nbformat.write(nb, str(path))
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def ids(path: Path) -> list[str]:
    return [c["id"] for c in json.loads(path.read_text())["cells"]]


def ok(response: ToolResponse) -> ToolResponse:
    assert not response.is_error, response.content
    return response


@pytest.fixture
def notebook(workspace: Path) -> Path:
    path = workspace / "analysis.ipynb"
    make_notebook(path)
    return path


def test_view_shows_cells_in_order_with_outputs_and_attaches_images(run: Runner, notebook: Path) -> None:
    response = ok(run("view", {"file_path": str(notebook)}))
    text = response.content
    cell_ids = ids(notebook)
    assert f"[cell 0] id={cell_ids[0]} markdown" in text
    assert f"[cell 1] id={cell_ids[1]} code execution_count=1" in text
    assert text.index("[cell 0]") < text.index("[cell 1]") < text.index("[cell 2]") < text.index("[cell 3]")
    assert "     1|import math\n     2|print('hi')\n     3|math.pi" in text
    assert "[stdout]\nhi" in text and "3.141592653589793" in text
    assert "[error] ZeroDivisionError: division by zero" in text
    assert "frame 39" in text and "frame 5\n" not in text and "traceback lines omitted" in text
    assert "\x1b" not in text and "bold" in text  # ANSI stripped
    assert len(response.images) == 1 and response.images[0].media_type == "image/png"
    assert response.images[0].data_base64 == PNG
    assert "attached as image 1" in text
    assert response.metadata["total_cells"] == 4 and response.metadata["notebook"] is True


def test_view_pages_by_cell(run: Runner, notebook: Path) -> None:
    first = ok(run("view", {"file_path": str(notebook), "limit": 2}))
    assert "[cell 1]" in first.content and "[cell 2]" not in first.content
    assert "Use offset=2 to continue" in first.content
    rest = ok(run("view", {"file_path": str(notebook), "offset": 2}))
    assert "[cell 2]" in rest.content and "[cell 3]" in rest.content and "[cell 1]" not in rest.content
    assert "continue" not in rest.content
    beyond = run("view", {"file_path": str(notebook), "offset": 4})
    assert beyond.is_error and beyond.metadata["error"] == "offset_out_of_range" and "4 cells" in beyond.content


def test_view_bounds_a_huge_output(run: Runner, workspace: Path) -> None:
    path = workspace / "big.ipynb"
    nb = nbformat.v4.new_notebook()
    text = "".join(f"line {i}\n" for i in range(100_000))
    output = nbformat.v4.new_output("stream", name="stdout", text=text)
    nb.cells = [nbformat.v4.new_code_cell("loop()", outputs=[output])]
    nbformat.write(nb, str(path))
    response = ok(run("view", {"file_path": str(path)}))
    assert "characters of output omitted" in response.content and "line 99999" in response.content
    assert len(response.content) < 20_000


def test_a_broken_notebook_is_shown_as_text(run: Runner, workspace: Path) -> None:
    path = workspace / "broken.ipynb"
    path.write_text('{"cells": [\n')
    response = ok(run("view", {"file_path": str(path)}))
    assert '     1|{"cells": [' in response.content


def test_replace_by_id_keeps_everything_else_byte_identical(run: Runner, notebook: Path) -> None:
    before = notebook.read_text()
    original = json.loads(before)
    ok(run("view", {"file_path": str(notebook)}))
    target = original["cells"][1]["id"]
    response = ok(run("notebook_edit", {"file_path": str(notebook), "cell_id": target, "new_source": "y = 'new'\nz"}))
    after = json.loads(notebook.read_text())
    nbformat.validate(after)
    edited = after["cells"][1]
    assert edited["source"] == ["y = 'new'\n", "z"] and edited["outputs"] == [] and edited["execution_count"] is None
    assert edited["id"] == target and edited["metadata"] == original["cells"][1]["metadata"]
    for index in (0, 2, 3):
        assert after["cells"][index] == original["cells"][index]  # outputs of untouched cells kept
    assert after["metadata"] == original["metadata"]
    assert (after["nbformat"], after["nbformat_minor"]) == (4, 5)
    # Byte-identical outside the edited cell: the same file as Jupyter would write the same notebook.
    original["cells"][1] = edited
    assert notebook.read_text() == json.dumps(original, indent=1, ensure_ascii=False) + "\n"
    assert before.split('"cells": [')[0] == notebook.read_text().split('"cells": [')[0]
    assert response.metadata["formatting_kept"] is True
    assert "-math.pi" in response.metadata["diff"] and "+y = 'new'" in response.metadata["diff"]
    assert '"source"' not in response.metadata["diff"]  # a source diff, not a JSON diff


def test_insert_and_delete(run: Runner, notebook: Path) -> None:
    ok(run("view", {"file_path": str(notebook)}))
    old_ids = ids(notebook)
    inserted = ok(run("notebook_edit", {"file_path": str(notebook), "cell_id": old_ids[0], "edit_mode": "insert",
                                        "new_source": "## Section", "cell_type": "markdown"}))  # fmt: skip
    data = json.loads(notebook.read_text())
    nbformat.validate(data)
    new_cell = data["cells"][1]
    assert new_cell["cell_type"] == "markdown" and new_cell["source"] == ["## Section"]
    assert new_cell["id"] not in old_ids and inserted.metadata["cell_index"] == 1
    assert ids(notebook) == [old_ids[0], new_cell["id"], *old_ids[1:]]

    ok(run("notebook_edit", {"file_path": str(notebook), "cell_index": 5, "edit_mode": "insert", "new_source": "end"}))
    data = json.loads(notebook.read_text())
    assert data["cells"][5]["cell_type"] == "code" and data["cells"][5]["outputs"] == []

    ok(run("notebook_edit", {"file_path": str(notebook), "cell_id": old_ids[2], "edit_mode": "delete"}))
    data = json.loads(notebook.read_text())
    nbformat.validate(data)
    assert old_ids[2] not in ids(notebook) and len(data["cells"]) == 5
    assert data["cells"][2]["outputs"][1]["data"]["image/png"] == PNG  # cell 1's outputs untouched


def test_changing_a_cell_type_keeps_the_notebook_valid(run: Runner, notebook: Path) -> None:
    ok(run("view", {"file_path": str(notebook)}))
    path = str(notebook)
    ok(run("notebook_edit", {"file_path": path, "cell_index": 1, "new_source": "text", "cell_type": "markdown"}))
    ok(run("notebook_edit", {"file_path": path, "cell_index": 0, "new_source": "x = 1", "cell_type": "code"}))
    data = json.loads(notebook.read_text())
    nbformat.validate(data)
    assert "outputs" not in data["cells"][1] and data["cells"][0]["outputs"] == []


def test_clear_errors(run: Runner, notebook: Path, workspace: Path) -> None:
    not_read = run("notebook_edit", {"file_path": str(notebook), "cell_index": 0, "new_source": "x"})
    assert not_read.is_error and "read" in not_read.content
    ok(run("view", {"file_path": str(notebook)}))
    unknown = run("notebook_edit", {"file_path": str(notebook), "cell_id": "nope", "new_source": "x"})
    assert unknown.is_error and unknown.metadata["error"] == "cell_not_found"
    assert all(i in unknown.content for i in ids(notebook))
    out_of_range = run("notebook_edit", {"file_path": str(notebook), "cell_index": 9, "new_source": "x"})
    assert out_of_range.metadata["error"] == "cell_not_found" and "has 4 cells" in out_of_range.content
    no_source = run("notebook_edit", {"file_path": str(notebook), "cell_index": 0})
    assert no_source.metadata["error"] == "invalid_params" and "new_source is required" in no_source.content
    both = run("notebook_edit", {"file_path": str(notebook), "cell_index": 0, "cell_id": "a", "new_source": "x"})
    assert both.metadata["error"] == "invalid_params"
    (workspace / "a.py").write_text("x = 1\n")
    ok(run("view", {"file_path": str(workspace / "a.py")}))
    wrong = run("notebook_edit", {"file_path": str(workspace / "a.py"), "cell_index": 0, "new_source": "x"})
    assert wrong.metadata["error"] == "not_a_notebook" and "use edit" in wrong.content
    assert (workspace / "a.py").read_text() == "x = 1\n"


def test_an_old_notebook_without_ids_is_edited_by_index(run: Runner, workspace: Path) -> None:
    path = workspace / "old.ipynb"
    make_notebook(path, minor=4)
    ok(run("view", {"file_path": str(path)}))
    by_id = run("notebook_edit", {"file_path": str(path), "cell_id": "abc", "new_source": "x"})
    assert by_id.metadata["error"] == "cell_not_found" and "cell_index" in by_id.content
    ok(run("notebook_edit", {"file_path": str(path), "cell_index": 0, "edit_mode": "insert", "new_source": "x"}))
    data = json.loads(path.read_text())
    nbformat.validate(data)
    assert "id" not in data["cells"][0] and data["nbformat_minor"] == 4


def test_the_file_style_is_kept(run: Runner, workspace: Path) -> None:
    path = workspace / "styled.ipynb"
    nb = json.loads(nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("ä"),
                                                                   nbformat.v4.new_code_cell("b")])))  # fmt: skip
    path.write_text(json.dumps(nb, indent=2, ensure_ascii=True).replace("\n", "\r\n"))  # no final newline
    ok(run("view", {"file_path": str(path)}))
    response = ok(run("notebook_edit", {"file_path": str(path), "cell_index": 1, "new_source": "é"}))
    raw = path.read_bytes()
    assert b"\r\n    {" in raw and not raw.endswith(b"\n") and b"\\u00e9" in raw and raw.isascii()
    assert response.metadata["formatting_kept"] is True
    # A UTF-8 file with a BOM keeps it; an ASCII file without escapes gets raw UTF-8 (as Jupyter writes).
    plain = workspace / "plain.ipynb"
    source = nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("a")]))
    plain.write_bytes(b"\xef\xbb\xbf" + source.encode())
    ok(run("view", {"file_path": str(plain)}))
    ok(run("notebook_edit", {"file_path": str(plain), "cell_index": 0, "new_source": "é"}))
    assert plain.read_bytes().startswith(b"\xef\xbb\xbf{") and "é" in plain.read_bytes().decode("utf-8-sig")


def test_text_edits_that_break_the_notebook_are_refused(run: Runner, notebook: Path) -> None:
    ok(run("view", {"file_path": str(notebook)}))
    before = notebook.read_bytes()
    broken = run("edit", {"file_path": str(notebook), "old_string": "print('hi')", "new_string": 'print("hi")'})
    assert broken.is_error and broken.metadata["error"] == "notebook_invalid" and "notebook_edit" in broken.content
    invalid = run("edit", {"file_path": str(notebook), "old_string": '"cell_type": "markdown"',
                           "new_string": '"cell_type": "prose"'})  # fmt: skip
    assert invalid.metadata["error"] == "notebook_invalid" and "validation" in invalid.content
    patch = run("patch", {"patch_text": f"*** Begin Patch\n*** Update File: {notebook}\n@@\n-   \"nbformat\": 4,\n"
                                        "+   \"nbformat\": 4\n*** End Patch"})  # fmt: skip
    assert patch.is_error and patch.metadata.get("error") == "notebook_invalid", patch.content
    multi = run("multiedit", {"file_path": str(notebook), "edits": [{"old_string": "math.pi", "new_string": "x\""}]})
    assert multi.metadata["error"] == "notebook_invalid"
    write = run("write", {"file_path": str(notebook), "content": "not json"})
    assert write.metadata["error"] == "notebook_invalid"
    assert notebook.read_bytes() == before
    # A change that keeps the JSON valid goes through.
    ok(run("edit", {"file_path": str(notebook), "old_string": "math.pi", "new_string": "math.tau"}))
    nbformat.validate(json.loads(notebook.read_text()))


def test_creating_a_notebook_with_edit_must_be_valid(run: Runner, workspace: Path) -> None:
    bad = run("edit", {"file_path": str(workspace / "new.ipynb"), "old_string": "", "new_string": "{}"})
    assert bad.metadata["error"] == "notebook_invalid" and not (workspace / "new.ipynb").exists()
    good = nbformat.writes(nbformat.v4.new_notebook())
    ok(run("write", {"file_path": str(workspace / "new.ipynb"), "content": good}))


def test_foreign_shapes_are_shown_not_crashed_on(run: Runner, workspace: Path) -> None:
    path = workspace / "odd.ipynb"
    cells = [
        {"cell_type": "code", "metadata": {}, "source": ["a", 1], "execution_count": None,
         "outputs": [{"output_type": "error", "ename": "E", "evalue": "v", "traceback": 5}, "junk"]},
    ]  # fmt: skip
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 4}))
    response = ok(run("view", {"file_path": str(path)}))
    assert "[cell 0] code" in response.content and "     1|a1" in response.content
    assert "[error output: malformed, not shown]" in response.content


def test_an_already_invalid_notebook_is_named_as_such(run: Runner, workspace: Path) -> None:
    path = workspace / "invalid.ipynb"
    cell = {"cell_type": "code", "metadata": {}, "source": "a", "outputs": [], "execution_count": None, "bogus": 1}
    path.write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 4}))
    ok(run("view", {"file_path": str(path)}))
    before = path.read_bytes()
    response = run("notebook_edit", {"file_path": str(path), "cell_index": 0, "new_source": "b"})
    assert response.metadata["error"] == "notebook_invalid" and "even before this change" in response.content
    assert path.read_bytes() == before
    # A text edit that repairs it is allowed.
    ok(run("edit", {"file_path": str(path), "old_string": ', "bogus": 1', "new_string": ""}))
    ok(run("notebook_edit", {"file_path": str(path), "cell_index": 0, "new_source": "b"}))


def test_images_are_capped_per_view_and_by_size(run: Runner, workspace: Path) -> None:
    from agent_toolsmith.documents import MAX_IMAGES_PER_VIEW

    jpeg = base64.b64encode(b"\xff\xd8\xff\xe0" + b"\x00" * 16).decode()
    path = workspace / "plots.ipynb"
    count = MAX_IMAGES_PER_VIEW + 2
    outputs = [nbformat.v4.new_output("display_data", data={"image/jpeg": jpeg}) for _ in range(count)]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("plot()", outputs=outputs)])
    nbformat.write(nb, str(path))
    response = ok(run("view", {"file_path": str(path)}))
    assert len(response.images) == MAX_IMAGES_PER_VIEW
    assert all(i.media_type == "image/jpeg" and i.data_base64 == jpeg for i in response.images)
    assert response.content.count(f"this view already has {MAX_IMAGES_PER_VIEW} images") == 2
    from agent_toolsmith.llm.pages import MAX_IMAGE_BYTES

    big = workspace / "big_plot.ipynb"
    huge = base64.b64encode(b"\x89PNG" + b"\x00" * MAX_IMAGE_BYTES).decode()
    output = nbformat.v4.new_output("display_data", data={"image/png": huge, "text/plain": "<Figure>"})
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("p()", outputs=[output])]), str(big))
    too_big = ok(run("view", {"file_path": str(big)}))
    assert too_big.images == [] and "larger than the" in too_big.content and "<Figure>" in too_big.content
