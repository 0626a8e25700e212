"""Nothing lost: every edit either lands or is refused — across sessions, processes and prompts."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from agent_toolsmith.config import Config
from agent_toolsmith.permission import Decision, PermissionRequest
from agent_toolsmith.session import Session

ROOT = Path(__file__).resolve().parents[2]
LINES = 50


def numbered(workspace: Path) -> Path:
    target = workspace / "shared.txt"
    target.write_text("".join(f"line {i}\n" for i in range(LINES)))
    return target


def changed_lines(target: Path) -> int:
    return sum(1 for line in target.read_text().splitlines() if line.startswith("EDITED"))


def test_a_save_during_the_permission_prompt_is_not_overwritten(workspace: Path) -> None:
    target = workspace / "f.txt"
    target.write_text("original\n")

    async def ask(request: PermissionRequest) -> Decision:
        if request.tool != "view":
            target.write_text("the user's save\n")  # the human saves while the prompt is open
        return Decision.ALLOW_ONCE

    async def main() -> str:
        session = Session(workspace, asker=ask, config=Config(lsp_enabled=False))
        await session.run("view", {"file_path": "f.txt"})
        response = await session.run("edit", {"file_path": "f.txt", "old_string": "original", "new_string": "mine"})
        assert response.is_error
        return response.content

    message = asyncio.run(main())
    assert "has been modified since it was last read" in message
    assert target.read_text() == "the user's save\n"


def test_fifty_sessions_in_one_process_lose_nothing(workspace: Path) -> None:
    target = numbered(workspace)

    async def one(session: Session, i: int) -> bool:
        await session.run("view", {"file_path": "shared.txt"})
        response = await session.run(
            "edit", {"file_path": "shared.txt", "old_string": f"line {i}\n", "new_string": f"EDITED {i}\n"}
        )
        assert not response.is_error or "modified since it was last read" in response.content, response.content
        return not response.is_error

    async def main() -> list[bool]:
        sessions = [Session(workspace, config=Config(lsp_enabled=False)) for _ in range(LINES)]
        return await asyncio.gather(*(one(s, i) for i, s in enumerate(sessions)))

    for _ in range(3):
        target = numbered(workspace)
        reported = asyncio.run(main())
        assert sum(reported) == changed_lines(target) >= 1


def test_thirty_cli_processes_lose_nothing(workspace: Path, tmp_path: Path) -> None:
    target = numbered(workspace)
    processes = []
    for i in range(30):
        calls = "\n".join(
            json.dumps(call)
            for call in (
                {"tool": "view", "params": {"file_path": "shared.txt"}},
                {"tool": "edit", "params": {"file_path": "shared.txt", "old_string": f"line {i}\n",
                                            "new_string": f"EDITED {i}\n"}},
            )
        )  # fmt: skip
        processes.append(
            subprocess.Popen(
                [sys.executable, "-m", "cmd.tools", "--cwd", str(workspace), "--no-lsp", "--session", f"p{i}",
                 "--batch", "-"],
                cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            )
        )  # fmt: skip
        assert processes[-1].stdin is not None
        processes[-1].stdin.write(calls + "\n")
        processes[-1].stdin.close()
    reported = 0
    for proc in processes:
        assert proc.stdout is not None
        envelopes = [json.loads(line) for line in proc.stdout.read().splitlines()]
        proc.wait(timeout=120)
        edit = envelopes[1]
        assert not edit["is_error"] or "modified since it was last read" in edit["content"], edit["content"]
        reported += not edit["is_error"]
    assert reported == changed_lines(target) >= 1
