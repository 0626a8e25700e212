"""read_many: several files by path or glob, each under a header, bounded, counted as read."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.llm.tools.contract import ToolResponse
from agent_toolsmith.llm.tools.read_many import MAX_PATHS
from agent_toolsmith.permission import Decision, PermissionRequest
from agent_toolsmith.session import Session

from tests.conftest import Runner, make_session

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 16


def headers(content: str) -> list[str]:
    return re.findall(r"^==> (.*) \(.*\) <==$", content, re.M)


def tree(ws: Path) -> None:
    for rel, text in {
        "src/b.py": "b = 2\n",
        "src/a.py": "a = 1\nprint(a)\n",
        "src/lib/c.py": "c = 3\n",
        "src/notes.md": "# notes\n",
        "src/node_modules/x.py": "noise\n",
        "src/ignored.py": "secret = 1\n",
        "README.md": "hello\n",
    }.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    (ws / ".gitignore").write_text("src/ignored.py\n")
    (ws / "src" / "blob.py").write_bytes(b"\0\1\2binary")
    (ws / "src" / "pic.png").write_bytes(PNG)


@pytest.mark.parametrize("use_rg", [True, False])
def test_a_glob_shows_each_file_under_its_header_and_an_edit_can_follow(workspace: Path, use_rg: bool) -> None:
    tree(workspace)
    session = make_session(workspace, config=Config(lsp_enabled=False, rg_path=None if use_rg else ""))
    r = asyncio.run(session.run("read_many", {"paths": ["src/**/*.py", "README.md", "src/a.py"]}))
    assert not r.is_error, r.content
    assert headers(r.content) == [f"{workspace}/src/a.py", f"{workspace}/src/b.py", f"{workspace}/src/lib/c.py",
                                  f"{workspace}/README.md"]  # fmt: skip
    assert f"==> {workspace}/src/a.py (2 lines) <==\n<file>\n     1|a = 1\n     2|print(a)\n</file>" in r.content
    assert "node_modules" not in r.content and "secret" not in r.content  # default excludes, .gitignore
    assert f"- {workspace}/src/blob.py: File appears to be binary" in r.content
    assert r.content.startswith("Read 4 files (1 skipped).")
    change = {"file_path": "src/lib/c.py", "old_string": "c = 3", "new_string": "c = 4"}
    edited = asyncio.run(session.run("edit", change))
    assert not edited.is_error, edited.content
    assert (workspace / "src/lib/c.py").read_text() == "c = 4\n"
    unread = asyncio.run(session.run("edit", {"file_path": "src/notes.md", "old_string": "notes", "new_string": "n"}))
    assert unread.is_error and "must read the file" in unread.content.lower()


def test_globs_anchor_without_double_star_and_directories_expand(workspace: Path, run: Runner) -> None:
    tree(workspace)
    r = run("read_many", {"paths": ["src/*.py"]})
    assert headers(r.content) == [f"{workspace}/src/a.py", f"{workspace}/src/b.py"]
    r = run("read_many", {"paths": ["src/lib"]})
    assert headers(r.content) == [f"{workspace}/src/lib/c.py"]


def test_images_only_when_named_and_ignored_files_when_named(workspace: Path, run: Runner) -> None:
    tree(workspace)
    r = run("read_many", {"paths": ["src/*"]})
    assert f"- {workspace}/src/pic.png: an image or PDF: name it explicitly to read it" in r.content
    assert not r.images
    r = run("read_many", {"paths": ["src/pic.png", "src/ignored.py"]})
    assert len(r.images) == 1 and r.images[0].media_type == "image/png"
    assert f"==> {workspace}/src/pic.png (image, {len(PNG)} bytes) <==" in r.content
    assert "     1|secret = 1" in r.content


def test_the_total_is_bounded_fairly_and_says_how_to_get_the_rest(workspace: Path) -> None:
    for i in range(40):
        (workspace / f"f{i:02}.txt").write_text("".join(f"line {n} of file {i} " + "x" * 60 + "\n" for n in range(400)))
    session = make_session(workspace, config=Config(lsp_enabled=False, max_output_bytes=24 * 1024))
    r = asyncio.run(session.run("read_many", {"paths": ["*.txt"]}))
    assert len(r.content.encode()) <= 24 * 1024
    shown = headers(r.content)
    assert 10 <= len(shown) < 40  # each gets a share (at least 1 KiB), so many files show
    first = re.search(r"\(400 lines; showing 1-(\d+), view with offset=(\d+) for the rest\)", r.content)
    assert first is not None and first[1] == first[2]
    left_out = r.content.split("Left out, the output cap was reached")[1]
    named = re.findall(r"^- (.*)$", left_out, re.M)
    assert named[:20] == [f"{workspace}/f{i:02}.txt" for i in range(len(shown), 40)][:20]
    assert r.metadata["truncated"] is True and len(r.metadata["not_shown"]) == 40 - len(shown)
    rest = asyncio.run(session.run("view", {"file_path": "f00.txt", "offset": int(first[1])}))
    assert f"{int(first[1]) + 1:6d}|line {first[1]} of file 0" in rest.content


def test_limit_per_file(workspace: Path, run: Runner) -> None:
    (workspace / "a.txt").write_text("".join(f"{n}\n" for n in range(50)))
    r = run("read_many", {"paths": ["a.txt"], "limit_per_file": 5})
    header = f"==> {workspace / 'a.txt'} (50 lines; showing 1-5, view with offset=5 for the rest) <=="
    assert header in r.content
    assert "     5|4" in r.content and "     6|" not in r.content


def test_outside_the_workspace_asks_once_per_glob_and_a_refusal_skips(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in ("x.md", "y.md", "z.md"):
        (outside / name).write_text(f"{name}\n")
    (workspace / "in.txt").write_text("inside\n")
    asked: list[PermissionRequest] = []

    def session_with(decision: Decision) -> Session:
        async def asker(request: PermissionRequest) -> Decision:
            asked.append(request)
            return decision

        return Session(workspace, asker=asker, config=Config(lsp_enabled=False))

    r = asyncio.run(session_with(Decision.ALLOW_ONCE).run("read_many", {"paths": [f"{outside}/*.md", "in.txt"]}))
    assert len(headers(r.content)) == 4
    assert [(a.tool, a.action, a.target) for a in asked] == [("read_many", "read", str(outside))]
    asked.clear()
    r = asyncio.run(session_with(Decision.DENY).run("read_many", {"paths": [f"{outside}/x.md", "in.txt"]}))
    assert headers(r.content) == [str(workspace / "in.txt")]
    assert f"- {outside}/x.md: Permission denied" in r.content and "x.md\n" not in r.content.split("Skipped")[0]


def test_errors_are_clear(workspace: Path, run: Runner) -> None:
    r = run("read_many", {"paths": ["missing.txt", "nothing/*.py", ""]})
    assert r.is_error and r.metadata["error"] == "nothing_read"
    assert "File not found" in r.content and "nothing/*.py" in r.content and "an empty path" in r.content
    r = run("read_many", {"paths": ["a"] * (MAX_PATHS + 1)})
    assert r.is_error and r.metadata["error"] == "too_many_paths"
    bad: ToolResponse = run("read_many", {"paths": []})
    assert bad.is_error and bad.metadata["error"] == "invalid_params"
    params: dict[str, Any] = {"paths": ["a"], "limit_per_file": 0}
    assert run("read_many", params).metadata["error"] == "invalid_params"
