"""Nothing escapes: swapped symlinks, nested .git and .toolsmith, reads outside the workspace."""

from __future__ import annotations

import asyncio
import ctypes
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.permission import Decision, PermissionRequest
from agent_toolsmith.session import Session

SWAPPER = textwrap.dedent(
    """
    import ctypes, os, sys
    libc = ctypes.CDLL(None, use_errno=True)
    AT_FDCWD, RENAME_EXCHANGE = -100, 2
    a, b = sys.argv[1].encode(), sys.argv[2].encode()
    print("swapping", flush=True)
    while True:
        libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
    """
)


def _has_renameat2() -> bool:
    return hasattr(ctypes.CDLL(None), "renameat2")


@pytest.mark.slow
def test_a_directory_swapped_for_a_symlink_never_redirects_a_write(tmp_path: Path) -> None:
    assert _has_renameat2(), "glibc >= 2.28 provides renameat2; the swapper needs it"
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "sub").mkdir(parents=True)
    outside.mkdir()
    (ws / "evil").symlink_to(outside)
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(ws / "sub"), str(ws / "evil")], stdout=subprocess.PIPE
    )
    try:
        assert swapper.stdout is not None and swapper.stdout.readline() == b"swapping\n"

        async def main() -> int:
            session = Session(ws, config=Config(lsp_enabled=False))
            landed = 0
            for i in range(3000):
                response = await session.run("write", {"file_path": f"sub/f{i}.txt", "content": f"{i}\n"})
                landed += not response.is_error
            return landed

        landed = asyncio.run(main())
    finally:
        swapper.kill()
        swapper.wait(timeout=10)
    assert os.listdir(outside) == [], f"{len(os.listdir(outside))} files escaped"
    assert landed > 0  # writes that found the real directory went through
    real_dir = next(p for p in (ws / "sub", ws / "evil") if not p.is_symlink())
    assert len(os.listdir(real_dir)) == landed


@pytest.mark.parametrize(
    "target",
    ["sub/.git/config", ".git/hooks/pre-commit", "vendor/lib/.git/hooks/post-checkout", ".toolsmith/config.toml",
     "pkg/.toolsmith/tools/x"],
)  # fmt: skip
def test_git_and_toolsmith_dirs_are_protected_at_any_depth(workspace: Path, target: str) -> None:
    path = workspace / target
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[core]\n")

    async def main() -> list[str]:
        session = Session(workspace, config=Config(lsp_enabled=False))
        await session.run("view", {"file_path": target})
        hook = {"file_path": target, "old_string": "[core]", "new_string": "[core]\n\tfsmonitor = x"}
        results = [
            await session.run("edit", hook),
            await session.run("write", {"file_path": target, "content": "x"}),
            await session.run("write", {"file_path": str(Path(target).parent / "new-file"), "content": "x"}),
            await session.run("patch", {"patch_text": f"*** Begin Patch\n*** Delete File: {target}\n*** End Patch"}),
        ]
        return [r.content for r in results if not r.is_error]

    assert asyncio.run(main()) == []
    assert path.read_text() == "[core]\n" and not (path.parent / "new-file").exists()


def test_a_symlink_into_git_is_protected_too(workspace: Path) -> None:
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("x\n")
    (workspace / "innocent").symlink_to(workspace / ".git" / "config")

    async def main() -> str:
        session = Session(workspace, config=Config(lsp_enabled=False))
        await session.run("view", {"file_path": "innocent"})
        r = await session.run("write", {"file_path": "innocent", "content": "y\n"})
        assert r.is_error
        return r.content

    assert "'.git' directories are protected" in asyncio.run(main())


def test_reads_outside_the_workspace_ask_first(workspace: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "key.txt").write_text("s3cret\n")
    (workspace / "link").symlink_to(secret / "key.txt")
    asked: list[PermissionRequest] = []

    async def deny(request: PermissionRequest) -> Decision:
        asked.append(request)
        return Decision.DENY

    async def main() -> list[str]:
        session = Session(workspace, asker=deny, config=Config(lsp_enabled=False))
        calls = [
            ("view", {"file_path": "link"}),
            ("view", {"file_path": str(secret / "key.txt")}),
            ("grep", {"pattern": "s3cret", "path": str(secret)}),
            ("glob", {"pattern": "*", "path": str(secret)}),
            ("ls", {"path": str(secret)}),
        ]
        return [(await session.run(tool, params)).content for tool, params in calls]

    contents = asyncio.run(main())
    assert all(c.startswith("Permission denied") for c in contents), contents
    assert not any("s3cret" in c for c in contents)
    assert {r.tool for r in asked} == {"view", "grep", "glob", "ls"} and all(r.action == "read" for r in asked)


def test_patch_delete_and_move_of_a_symlink_act_on_the_link(workspace: Path, tmp_path: Path) -> None:
    target = workspace / "real.txt"
    target.write_text("keep\n")
    (workspace / "a-link").symlink_to(target)
    (workspace / "b-link").symlink_to(target)

    async def main() -> str:
        session = Session(workspace, config=Config(lsp_enabled=False))
        for name in ("a-link", "b-link"):
            await session.run("view", {"file_path": name})
        patch = (
            "*** Begin Patch\n*** Delete File: a-link\n*** Update File: b-link\n*** Move to: c-link\n*** End Patch"
        )
        r = await session.run("patch", {"patch_text": patch})
        assert not r.is_error, r.content
        return r.content

    asyncio.run(main())
    assert target.read_text() == "keep\n"
    assert not os.path.lexists(workspace / "a-link") and not os.path.lexists(workspace / "b-link")
    assert (workspace / "c-link").is_symlink() and os.readlink(workspace / "c-link") == str(target)


def test_relative_allowed_and_protected_dirs_resolve_from_the_workspace(workspace: Path, tmp_path: Path) -> None:
    shared = workspace.parent / "shared"
    shared.mkdir()
    (workspace / "keep").mkdir()
    config = Config(lsp_enabled=False, allowed_dirs=[Path("../shared")], protected_dirs=[".git", "keep/"])

    async def main() -> tuple[bool, bool]:
        session = Session(workspace, config=config)
        ok = await session.run("write", {"file_path": str(shared / "x.txt"), "content": "x"})
        kept = await session.run("write", {"file_path": "keep/y.txt", "content": "y"})
        return ok.is_error, kept.is_error

    cwd = os.getcwd()
    os.chdir("/")  # the process cwd must not matter
    try:
        assert asyncio.run(main()) == (False, True)
    finally:
        os.chdir(cwd)
    assert (shared / "x.txt").read_text() == "x"
