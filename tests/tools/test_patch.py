"""patch: scenario suite from testdata/patch, atomicity, and generated-patch properties."""

from __future__ import annotations

import asyncio
import difflib
import errno
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from agent_toolsmith.diff.patch import Chunk, apply_chunks, parse_patch
from agent_toolsmith.session import Session
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import Runner, make_session

SCENARIOS = Path(__file__).resolve().parents[2] / "testdata" / "patch"


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def read_all(session: Session, root: Path) -> None:
    for rel in snapshot(root):
        r = asyncio.run(session.run("view", {"file_path": rel}))
        assert not r.is_error, r.content


@pytest.mark.parametrize("case", sorted(p.name for p in SCENARIOS.iterdir()))
def test_scenario(case: str, workspace: Path) -> None:
    source = SCENARIOS / case
    shutil.copytree(source / "before", workspace, dirs_exist_ok=True)
    before = snapshot(workspace)
    session = make_session(workspace)
    read_all(session, workspace)
    r = asyncio.run(session.run("patch", {"patch_text": (source / "patch.txt").read_text(encoding="utf-8")}))
    if (source / "after").exists():
        assert not r.is_error, r.content
        assert snapshot(workspace) == snapshot(source / "after")
        assert r.content.startswith("Patch applied:")
    else:
        expected = (source / "error.txt").read_text(encoding="utf-8").strip()
        assert r.is_error and expected in r.content, r.content
        assert snapshot(workspace) == before


def test_fuzz_reported_per_chunk(workspace: Path) -> None:
    shutil.copytree(SCENARIOS / "fuzz_passes" / "before", workspace, dirs_exist_ok=True)
    session = make_session(workspace)
    read_all(session, workspace)
    r = asyncio.run(session.run("patch", {"patch_text": (SCENARIOS / "fuzz_passes" / "patch.txt").read_text()}))
    assert r.metadata["files"][0]["fuzz"] == [1, 2, 3]
    assert "fuzz 3" in r.content


def test_an_update_whose_context_matches_exactly_needs_no_read(workspace: Path, run: Runner) -> None:
    (workspace / "x.txt").write_text("x\n")
    r = run("patch", {"patch_text": "*** Begin Patch\n*** Update File: x.txt\n@@\n-x\n+y\n*** End Patch"})
    assert not r.is_error, r.content
    assert (workspace / "x.txt").read_text() == "y\n"


@pytest.mark.parametrize(
    "chunk",
    [
        "@@\n-x  \n+y\n",  # matched only with trailing whitespace ignored (fuzz 1)
        "@@ x\n+y\n",  # only added lines: nothing in the chunk shows the file's content
    ],
)
def test_a_fuzzy_or_context_free_update_of_an_unread_file_is_refused(
    workspace: Path, run: Runner, chunk: str
) -> None:
    (workspace / "x.txt").write_text("x\n")
    r = run("patch", {"patch_text": f"*** Begin Patch\n*** Update File: x.txt\n{chunk}*** End Patch"})
    assert r.is_error and r.metadata["error"] == "not_read", r.content
    assert "You must read the file" in r.content
    assert (workspace / "x.txt").read_text() == "x\n"


def test_delete_and_move_of_an_unread_file_need_a_read(workspace: Path, run: Runner) -> None:
    (workspace / "x.txt").write_text("x\n")
    for op in ("*** Delete File: x.txt\n", "*** Update File: x.txt\n*** Move to: y.txt\n"):
        r = run("patch", {"patch_text": f"*** Begin Patch\n{op}*** End Patch"})
        assert r.is_error and r.metadata["error"] == "not_read", r.content
    assert (workspace / "x.txt").read_text() == "x\n" and not (workspace / "y.txt").exists()


def test_failure_while_writing_last_file_leaves_tree_unchanged(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "a.txt").write_text("a\n")
    (workspace / "b.txt").write_text("b\n")
    session = make_session(workspace)
    read_all(session, workspace)
    before = snapshot(workspace)
    real_link = os.link

    def link(src: str, dst: str, **kwargs: object) -> None:
        if str(dst) == "new.txt":  # the last change: putting the new file in place
            raise OSError(errno.ENOSPC, "No space left on device (injected)")
        real_link(src, dst, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "link", link)
    patch = (
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n*** Delete File: b.txt\n"
        "*** Add File: new.txt\n+n\n*** End Patch"
    )
    r = asyncio.run(session.run("patch", {"patch_text": patch}))
    monkeypatch.undo()
    assert r.is_error and "no space left on the device" in r.content and "Nothing was changed" in r.content
    assert snapshot(workspace) == before


# --- generated patches ------------------------------------------------------------------------


def lines_of(text: str) -> list[str]:
    return text.split("\n")[:-1] if text else []


def first_at(lines: list[str], pattern: list[str], start: int) -> int:
    for at in range(start, len(lines) - len(pattern) + 1):
        if lines[at : at + len(pattern)] == pattern:
            return at
    return -1


def make_patch(a: str, b: str, path: str = "f.txt") -> str:
    """A Codex patch turning a into b: grouped opcodes with 3 lines of context, widened upward
    until each chunk's old lines first occur exactly where they belong."""
    al, bl = lines_of(a), lines_of(b)
    out = ["*** Begin Patch", f"*** Update File: {path}"]
    cursor = 0
    for group in difflib.SequenceMatcher(None, al, bl, autojunk=False).get_grouped_opcodes(3):
        start, stop = group[0][1], group[-1][2]
        while start > cursor and first_at(al, al[start:stop], cursor) != start:
            start -= 1
        out.append("@@")
        out += [" " + line for line in al[start : group[0][1]]]
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out += [" " + line for line in al[a1:a2]]
            else:
                out += ["-" + line for line in al[a1:a2]]
                out += ["+" + line for line in bl[b1:b2]]
        if stop == len(al) and al:
            out.append("*** End of File")
        cursor = stop
    out.append("*** End Patch")
    return "\n".join(out)


texts = st.lists(st.sampled_from(["a", "b", "c", "", "  d", "e  ", "x = 1"]), max_size=25).map(
    lambda ls: "".join(line + "\n" for line in ls)
)


def apply_text(a: str, patch: str) -> str:
    (op,) = parse_patch(patch)
    replacements, _ = apply_chunks(a, op.chunks, "f.txt")
    out, cursor = [], 0
    for start, end, new in replacements:
        out += [a[cursor:start], new]
        cursor = end
    return "".join([*out, a[cursor:]])


@given(texts, texts)
def test_generated_patch_applies_to_give_b(a: str, b: str) -> None:
    if a == b:
        return
    assert apply_text(a, make_patch(a, b)) == b


@given(texts, texts, st.data())
def test_patch_on_modified_file_applies_exactly_or_changes_nothing(a: str, b: str, data: st.DataObject) -> None:
    if a == b or not a:
        return
    lines = lines_of(a)
    i = data.draw(st.integers(0, len(lines) - 1))
    lines[i] = "MODIFIED"
    modified = "".join(line + "\n" for line in lines)
    ws = Path(tempfile.mkdtemp())
    (ws / "f.txt").write_text(modified)
    session = make_session(ws)
    asyncio.run(session.run("view", {"file_path": "f.txt"}))
    r = asyncio.run(session.run("patch", {"patch_text": make_patch(a, b)}))
    after = (ws / "f.txt").read_text()
    if r.is_error:
        assert after == modified
    else:
        meta = r.metadata["files"][0]
        assert len(lines_of(after)) == len(lines) + meta["additions"] - meta["removals"]
        if max(meta["fuzz"]) == 0 and "MODIFIED" not in "".join(
            line for line in make_patch(a, b).split("\n") if line[:1] in " -"
        ):
            assert "MODIFIED" in after


def test_parse_errors_name_lines() -> None:
    from agent_toolsmith.diff.patch import PatchError

    with pytest.raises(PatchError, match="line 3: in Update File x, expected a line starting with"):
        parse_patch("*** Begin Patch\n*** Update File: x\n?? what\n*** End Patch")
    with pytest.raises(PatchError, match="End Patch"):
        parse_patch("*** Begin Patch\n*** Add File: x\n+a\n")


def test_pure_addition_goes_after_its_header() -> None:
    chunk = Chunk("def b():", [("+", "    # note")])
    text = "def a():\n    pass\ndef b():\n    pass\ndef c():\n    pass\n"
    (rep,), _ = apply_chunks(text, [chunk], "f")
    assert text[: rep[0]] + rep[2] + text[rep[1] :] == text.replace("def b():\n", "def b():\n    # note\n")
