"""Sandboxed commands cannot change git metadata nor make the host's git run their code.

Each variant plants ``core.fsmonitor`` (a program git runs on ``git status``); afterwards the
host runs ``git status`` and the planted program must not have run.
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.session import Session

#: Hang guards.
COMMAND_TIMEOUT_MS = 30_000
GIT_TIMEOUT_S = 60.0


def git(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=GIT_TIMEOUT_S)


def bash(workspace: Path, command: str, *, sandboxed: bool = True) -> Any:
    async def main() -> Any:
        session = Session(workspace, config=Config(lsp_enabled=False, bash_sandbox=sandboxed))
        return await session.run("bash", {"command": command, "timeout": COMMAND_TIMEOUT_MS})

    return asyncio.run(main())


@pytest.fixture
def evil(tmp_path: Path) -> tuple[Path, Path]:
    """A program that leaves a marker when run, and the marker's path."""
    marker = tmp_path / "pwned"
    program = tmp_path / "evil.sh"
    program.write_text(f"#!/bin/sh\ntouch {marker}\n")
    program.chmod(0o755)
    return program, marker


def _repo(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    assert git("init", "-q", cwd=path).returncode == 0


def test_mv_and_copy_of_git_is_blocked_though_it_works_unsandboxed(
    bwrap: str, workspace: Path, evil: tuple[Path, Path]
) -> None:
    program, marker = evil
    _repo(workspace)
    attack = f"mv .git .git_old && cp -r .git_old .git && git config core.fsmonitor {program}"
    boxed = bash(workspace, attack)
    assert (workspace / ".git").is_dir() and not (workspace / ".git_old").exists(), boxed.content
    git("status", cwd=workspace)
    assert not marker.exists(), boxed.content
    # The same attack without the sandbox really does make the host's git run the program.
    assert not bash(workspace, attack, sandboxed=False).is_error
    git("status", cwd=workspace)
    assert marker.exists(), "the attack did not work even unsandboxed: the test proves nothing"


def test_commondir_pointer_cannot_be_planted(bwrap: str, workspace: Path, evil: tuple[Path, Path]) -> None:
    program, marker = evil
    _repo(workspace)
    attack = (
        f"cp -r .git evilgit && git --git-dir=evilgit config core.fsmonitor {program}; "
        "echo ../evilgit > .git/commondir; echo '[core]' >> .git/config"
    )
    bash(workspace, attack)
    assert not (workspace / ".git" / "commondir").exists()
    git("status", cwd=workspace)
    assert not marker.exists()


def test_git_init_in_a_workspace_without_git_is_prevented(
    bwrap: str, workspace: Path, evil: tuple[Path, Path]
) -> None:
    program, marker = evil
    result = bash(workspace, f"git init -q . && git config core.fsmonitor {program}")
    assert "Exit code" in result.content
    assert not (workspace / ".git" / "config").exists()
    assert not (workspace / ".git").exists()  # the empty mount point is cleaned up
    assert "created git metadata" not in result.content
    git("status", cwd=workspace)
    assert not marker.exists()
    plain = bash(workspace, "echo ok")
    assert "created git metadata" not in plain.content and not (workspace / ".git").exists()


def test_nested_repos_are_read_only_and_new_ones_are_reported(
    bwrap: str, workspace: Path, evil: tuple[Path, Path]
) -> None:
    program, marker = evil
    _repo(workspace)
    _repo(workspace / "pkg" / "sub")
    git("init", "-q", "--bare", "deep/bare.git", cwd=workspace)
    plant = f"git -C pkg/sub config core.fsmonitor {program}"
    attacks = [
        plant,
        "echo evil > deep/bare.git/hooks/post-update",
        f"mv pkg pkg2 && mkdir -p pkg/sub && cp -r pkg2/sub/.git pkg/sub/.git && {plant}",
        f"mv pkg/sub pkg/sub2 && mkdir -p pkg/sub && cp -r pkg/sub2/.git pkg/sub/.git && {plant}",
    ]
    for attack in attacks:
        bash(workspace, attack)
    assert not (workspace / "pkg2").exists() and not (workspace / "pkg" / "sub2").exists()
    assert not (workspace / "deep/bare.git/hooks/post-update").exists()
    git("status", cwd=workspace / "pkg" / "sub")
    assert not marker.exists()
    created = bash(workspace, "git init -q fresh && echo made")
    assert str(workspace / "fresh" / ".git") in created.metadata.get("new_git_metadata", []), created.content
    assert "created git metadata" in created.content


def test_git_commit_in_the_sandbox_fails_and_says_why(bwrap: str, workspace: Path) -> None:
    _repo(workspace)
    (workspace / "a.txt").write_text("a\n")
    result = bash(workspace, "git add a.txt && git -c user.name=t -c user.email=t@t commit -qm x")
    assert "Exit code" in result.content
    assert "read-only inside the bash sandbox" in result.content and "sandbox off" in result.content
    assert git("log", "--oneline", cwd=workspace).stdout == ""
