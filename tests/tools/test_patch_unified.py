"""patch with unified diffs: what git diff and diff -u produce, applied through the same machinery."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import make_session

GIT = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "core.autocrlf=false"]


def git(repo: Path, *args: str) -> str:
    return subprocess.run([*GIT, *args], cwd=repo, capture_output=True, text=True, check=True, timeout=60).stdout


def tree(root: Path) -> dict[str, bytes]:
    files = (p for p in sorted(root.rglob("*")) if p.is_file() and ".git" not in p.parts)
    return {str(p.relative_to(root)): p.read_bytes() for p in files}


def apply(repo: Path, diff: str, read: list[str]) -> tuple[bool, str]:
    async def main() -> tuple[bool, str]:
        session = make_session(repo)
        for name in read:
            await session.run("view", {"file_path": name})
        response = await session.run("patch", {"patch_text": diff})
        return response.is_error, response.content

    return asyncio.run(main())


def test_git_diff_with_add_delete_rename_and_missing_newlines(workspace: Path) -> None:
    git(workspace, "init", "-q")
    (workspace / "x.txt").write_text("a\nb\nc\n")
    (workspace / "nonl.txt").write_text("one\ntwo")
    (workspace / "gone.txt").write_text("keep\n")
    (workspace / "old_name.txt").write_text("r1\nr2\nr3\nr4\n")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-qm", "base")
    (workspace / "x.txt").write_text("a\nB\nc\n")
    (workspace / "nonl.txt").write_text("one\ntwo!\n")  # gains its final newline
    (workspace / "gone.txt").unlink()
    (workspace / "added.txt").write_text("new\nfile")  # no final newline
    git(workspace, "mv", "old_name.txt", "new_name.txt")
    (workspace / "new_name.txt").write_text("r1\nr2\nr3\nR4\n")
    git(workspace, "add", "-A")
    diff = git(workspace, "diff", "--cached", "-M")
    expected = tree(workspace)
    git(workspace, "reset", "-q", "--hard", "HEAD")
    failed, content = apply(workspace, diff, ["x.txt", "nonl.txt", "gone.txt", "old_name.txt"])
    assert not failed, content
    assert content.startswith("Patch applied: 5 files changed")
    assert tree(workspace) == expected


def test_plain_diff_u_without_prefixes(workspace: Path) -> None:
    (workspace / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    changed = workspace.parent / "notes.changed"
    changed.write_text("alpha\nBETA\ngamma\ndelta\n")
    argv = ["diff", "-u", str(workspace / "notes.txt"), str(changed)]
    diff = subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout
    diff = diff.replace(str(workspace / "notes.txt"), "notes.txt").replace(str(changed), "notes.txt.new")
    failed, content = apply(workspace, diff, ["notes.txt"])
    assert not failed, content
    assert (workspace / "notes.txt").read_text() == "alpha\nBETA\ngamma\ndelta\n"
    assert not (workspace / "notes.txt.new").exists()  # not a rename: the existing file changed


def test_unified_diffs_need_a_read_and_report_the_hunk_and_closest_region(workspace: Path) -> None:
    (workspace / "a.py").write_text("def f():\n    return 1\n\n\ndef g():\n    return 2\n")
    diff = "--- a/a.py\n+++ b/a.py\n@@ -4,3 +4,3 @@\n \n def g():\n-    return 3\n+    return 4\n"
    failed, content = apply(workspace, diff, [])
    assert failed and "You must read the file before editing it" in content
    failed, content = apply(workspace, diff, ["a.py"])
    assert failed and "a.py: hunk 1 (patch line 3)" in content and "@@ -4,3 +4,3 @@" in content
    assert "Closest region in the file" in content and "     6|····return 2" in content


def test_hunks_without_context_are_placed_by_their_line_numbers(workspace: Path) -> None:
    git(workspace, "init", "-q")
    body = "".join("same\n" for _ in range(10))
    (workspace / "r.txt").write_text(body)
    git(workspace, "add", "-A")
    git(workspace, "commit", "-qm", "base")
    lines = body.splitlines(keepends=True)
    lines[6:6] = ["inserted after line 6\n"]
    (workspace / "r.txt").write_text("".join(lines))
    diff = git(workspace, "diff", "-U0")
    expected = tree(workspace)
    git(workspace, "checkout", "-q", "--", "r.txt")
    failed, content = apply(workspace, diff, ["r.txt"])
    assert not failed, content
    assert tree(workspace) == expected


# --- property: git diff of random edits applies back -------------------------------------------

WORDS = ["alpha", "beta", "", "    indented", "return x", "}", "\tcode();", "end"]
CONTENT = st.lists(st.sampled_from(WORDS), min_size=0, max_size=12).map(lambda ls: "".join(w + "\n" for w in ls))


Case = tuple[dict[str, str], dict[str, str | None], dict[str, str], int]


@st.composite
def edits(draw: st.DrawFn) -> Case:
    names = ["a.txt", "b.txt", "sub/c.txt", "d.txt"]
    base = {n: draw(CONTENT) for n in names[: draw(st.integers(1, 4))]}
    changes: dict[str, str | None] = {}
    renames: dict[str, str] = {}
    for name in base:
        action = draw(st.sampled_from(["keep", "modify", "modify", "delete", "rename"]))
        if action == "modify":
            changes[name] = draw(CONTENT)
        elif action == "delete":
            changes[name] = None
        elif action == "rename" and base[name].count("\n") >= 3:
            renames[name] = "moved/" + name.replace("/", "_")
    if draw(st.booleans()):
        changes["new/added.txt"] = draw(CONTENT)
    context = draw(st.sampled_from([3, 1, 0]))
    return base, changes, renames, context


@settings(max_examples=40)
@given(edits(), st.booleans())
def test_git_diff_of_random_edits_applies_back(case: Case, prefixes: bool) -> None:
    base, changes, renames, context = case
    repo = Path(tempfile.mkdtemp())
    try:
        git(repo, "init", "-q")
        for name, text in base.items():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_text(text)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "base", "--allow-empty")
        for name, text in changes.items():
            if text is None:
                (repo / name).unlink()
            else:
                (repo / name).parent.mkdir(parents=True, exist_ok=True)
                (repo / name).write_text(text)
        for old, new in renames.items():
            (repo / new).parent.mkdir(parents=True, exist_ok=True)
            (repo / old).rename(repo / new)
        git(repo, "add", "-A")
        options = [f"-U{context}", "-M"] + ([] if prefixes else ["--no-prefix"])
        diff = git(repo, "diff", "--cached", *options)
        expected = tree(repo)
        git(repo, "reset", "-q", "--hard", "HEAD")
        git(repo, "clean", "-qfd")
        if not diff.strip():
            return
        failed, content = apply(repo, diff, list(base))
        assert not failed, content + "\n" + diff
        assert tree(repo) == expected, diff
    finally:
        shutil.rmtree(repo, ignore_errors=True)
