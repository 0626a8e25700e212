"""Capped searches at real-repo scale: rg is stopped at the cap and reaped, never awaited forever.

The tree has more files and matches than any cap, with paths long enough that rg's unread
output overflows the pipe once we stop reading — the condition under which a plain
``proc.wait()`` never returned.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.llm.tools.glob import MAX_FILES_COLLECTED as GLOB_CAP
from agent_toolsmith.llm.tools.grep import MAX_MATCHES_COLLECTED as GREP_CAP
from agent_toolsmith.llm.tools.ls import MAX_FILES_COLLECTED as LS_CAP
from agent_toolsmith.session import Session

FILES = 60_000
ROUNDS = 20
CALL_TIMEOUT_S = 30


@pytest.fixture(scope="module")
def big_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("big")
    per_dir = 500
    body = b"def generated():\n    return 1  # marker: needle\n    # another needle here\n"
    for d in range(FILES // per_dir):
        directory = root / f"package_{d:03d}" / "a_reasonably_long_module_directory_name"
        directory.mkdir(parents=True)
        for f in range(per_dir):
            with open(directory / f"generated_source_file_number_{f:04d}.py", "wb") as handle:
                handle.write(body)
    assert max(GLOB_CAP, LS_CAP) < FILES and 2 * FILES > GREP_CAP
    return root


@pytest.mark.slow
def test_sixty_capped_searches_in_one_process_never_hang(big_tree: Path) -> None:
    async def main() -> list[str]:
        session = Session(big_tree, config=Config(lsp_enabled=False))
        calls = [("glob", {"pattern": "**/*.py"}), ("grep", {"pattern": "needle"}), ("ls", {})]
        seen = []
        for _ in range(ROUNDS):
            for tool, params in calls:
                response = await asyncio.wait_for(session.run(tool, params), CALL_TIMEOUT_S)
                assert not response.is_error, response.content[:300]
                assert response.metadata["truncated"] is True
                seen.append(tool)
        return seen

    seen = asyncio.run(main())
    assert len(seen) == 3 * ROUNDS
    assert not _rg_children(), "rg processes left behind"


def _rg_children() -> list[str]:
    mine = str(os.getpid())
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if "(rg)" in stat and fields[1] == mine and fields[0] != "Z":
            found.append(entry)
    return found
