"""Every git directory in the workspace is protected like .git, whatever its name and depth."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

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
