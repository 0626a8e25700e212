"""Every git directory in the workspace is protected like .git, whatever its name and depth."""

from __future__ import annotations

import asyncio
import itertools
import subprocess
from pathlib import Path
from typing import Any

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.session import Session

#: Hang guards.
CALL_TIMEOUT_S = 30.0
GIT_TIMEOUT_S = 60.0


def run(s: Session, tool: str, params: dict[str, Any]) -> Any:
    return asyncio.run(asyncio.wait_for(s.run(tool, params), CALL_TIMEOUT_S))


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=GIT_TIMEOUT_S)


def test_bare_repos_and_gitdir_pointer_targets_are_protected(workspace: Path) -> None:
    git("init", "-q", "--bare", "deep/bare.git", cwd=workspace)
    git("init", "-q", "--separate-git-dir", str(workspace / "gd"), "wt", cwd=workspace)
    assert (workspace / "wt" / ".git").read_text().startswith("gitdir:")
    s = Session(workspace, config=Config(lsp_enabled=False))
    for name in ("deep/bare.git/hooks/post-checkout", "deep/bare.git/config", "gd/hooks/pre-commit", "gd/config",
                 "gd/info/new-file", "wt/.git", "wt/.GIT/hooks/x"):  # fmt: skip
        response = run(s, "write", {"file_path": name, "content": "#!/bin/sh\ntouch /tmp/pwned\n"})
        assert response.is_error, name
        assert response.metadata.get("error") == "protected_path", (name, response.content)
    assert not (workspace / "deep/bare.git/hooks/post-checkout").exists()
    assert not (workspace / "gd/hooks/pre-commit").exists()
    # An ordinary file beside them is still writable.
    assert not run(s, "write", {"file_path": "wt/ok.txt", "content": "fine\n"}).is_error


# --- a git directory built piece by piece -----------------------------------------------------

#: What git needs to take a directory for a repository (HEAD, objects/, refs/), and the config
#: that makes `git status` there run a program: the planted fsmonitor leaves a marker.
PIECES = ("HEAD", "objects/info/packs", "refs/heads/main")
PLANTED_CONFIG = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = {program}\n"


def planted(workspace: Path) -> tuple[str, Path]:
    """The config text that runs a program leaving a marker, and the marker's path."""
    marker = workspace.parent / "pwned"
    program = workspace.parent / "plant.sh"
    program.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    program.chmod(0o755)
    return PLANTED_CONFIG.format(program=program), marker


def content_of(piece: str, config: str) -> str:
    return {"HEAD": "ref: refs/heads/main\n", "config": config}.get(piece, "")


def assert_git_status_runs_nothing(directory: Path, marker: Path) -> None:
    if directory.is_dir():
        subprocess.run(["git", "status"], cwd=directory, capture_output=True, timeout=GIT_TIMEOUT_S)
    assert not marker.exists(), "git status ran the planted command"


def test_the_planted_git_directory_is_real_when_assembled_by_hand(workspace: Path) -> None:
    """The check below is worth having: made outside the tools, this layout runs the program."""
    config, marker = planted(workspace)
    for piece in (*PIECES, "config"):
        (workspace / "evil" / piece).parent.mkdir(parents=True, exist_ok=True)
        (workspace / "evil" / piece).write_text(content_of(piece, config))
    subprocess.run(["git", "status"], cwd=workspace / "evil", capture_output=True, timeout=GIT_TIMEOUT_S)
    assert marker.exists()


@pytest.mark.parametrize("order", list(itertools.permutations((*PIECES, "config"))), ids="-".join)
def test_the_write_that_would_make_a_git_directory_is_refused(workspace: Path, order: tuple[str, ...]) -> None:
    config, marker = planted(workspace)
    s = Session(workspace, config=Config(lsp_enabled=False))
    refused = []
    for piece in order:
        response = run(s, "write", {"file_path": f"evil/{piece}", "content": content_of(piece, config)})
        if response.is_error:
            assert response.metadata.get("error") == "protected_path", response.content
            assert "would make" in response.content and "a git directory" in response.content
            refused.append(piece)
    # Exactly the step that completes HEAD + objects/ + refs/ is refused (config is no part of
    # the shape: written before, it is harmless; after, it is inside a git directory).
    last_piece = [p for p in order if p in PIECES][-1]
    assert refused == [last_piece]
    assert not (workspace / "evil" / last_piece).exists()
    assert_git_status_runs_nothing(workspace / "evil", marker)


def test_every_writer_is_held_to_it(workspace: Path) -> None:
    """edit's and multiedit's create, a patch's Add File and Move to, one piece at a time; and a
    patch that adds every piece at once."""
    config, marker = planted(workspace)
    s = Session(workspace, config=Config(lsp_enabled=False))
    (workspace / "seed.txt").write_text("x\n")
    run(s, "view", {"file_path": "seed.txt"})
    ok = [
        ("write", {"file_path": "a/config", "content": config}),
        ("edit", {"file_path": "a/HEAD", "old_string": "", "new_string": "ref: refs/heads/main\n"}),
        ("multiedit", {"file_path": "a/objects/x", "edits": [{"old_string": "", "new_string": "x"}]}),
        ("patch", {"patch_text": "*** Begin Patch\n*** Add File: b/HEAD\n+ref: refs/heads/main\n*** End Patch"}),
        ("patch", {"patch_text": "*** Begin Patch\n*** Add File: b/refs/heads/main\n+x\n*** End Patch"}),
    ]
    for tool, params in ok:
        response = run(s, tool, params)
        assert not response.is_error, (tool, response.content)
    completing = [
        ("edit", {"file_path": "a/refs/heads/main", "old_string": "", "new_string": "x"}),
        ("multiedit", {"file_path": "a/refs/tags/v1", "edits": [{"old_string": "", "new_string": "x"}]}),
        ("patch", {"patch_text": "*** Begin Patch\n*** Add File: a/refs/x\n+x\n*** End Patch"}),
        ("patch", {"patch_text": "*** Begin Patch\n*** Update File: seed.txt\n*** Move to: b/objects/x\n@@\n-x\n+y\n"
                                 "*** End Patch"}),
        ("write", {"file_path": "b/objects/info/packs", "content": ""}),
    ]  # fmt: skip
    for tool, params in completing:
        response = run(s, tool, params)
        assert response.is_error and response.metadata.get("error") == "protected_path", (tool, response.content)
    assert not (workspace / "a" / "refs").exists() and not (workspace / "b" / "objects").exists()
    assert (workspace / "seed.txt").read_text() == "x\n"
    whole = "".join(
        f"*** Add File: c/{piece}\n" + "".join(f"+{line}\n" for line in (content_of(piece, config) or "x").splitlines())
        for piece in (*PIECES, "config")
    )
    response = run(s, "patch", {"patch_text": f"*** Begin Patch\n{whole}*** End Patch"})
    assert response.is_error and response.metadata.get("error") == "protected_path", response.content
    assert not (workspace / "c").exists()
    for directory in ("a", "b", "c"):
        assert_git_status_runs_nothing(workspace / directory, marker)


def test_the_workspace_root_and_a_commondir_count_too(workspace: Path) -> None:
    s = Session(workspace, config=Config(lsp_enabled=False))
    for piece in ("HEAD", "objects/x"):
        assert not run(s, "write", {"file_path": piece, "content": "ref: refs/heads/main\n"}).is_error
    response = run(s, "write", {"file_path": "refs/heads/main", "content": ""})
    assert response.metadata.get("error") == "protected_path", response.content
    assert not run(s, "write", {"file_path": "wt/HEAD", "content": "ref: refs/heads/main\n"}).is_error
    response = run(s, "write", {"file_path": "wt/commondir", "content": "../../real/.git\n"})
    assert response.metadata.get("error") == "protected_path", response.content


def test_ordinary_projects_with_such_names_are_not_refused(workspace: Path) -> None:
    """Directories named objects/ or refs/ and files named HEAD or config are common; only
    together, in one directory, are they a git directory."""
    s = Session(workspace, config=Config(lsp_enabled=False))
    for name in ("src/objects/user.py", "src/refs/links.py", "src/config", "docs/HEAD", "docs/objects/a.md",
                 "docs/config", "docs/hooks/pre-commit.md", "lib/refs/x", "lib/commondir.py", "lib/head"):  # fmt: skip
        response = run(s, "write", {"file_path": name, "content": "x\n"})
        assert not response.is_error, (name, response.content)
