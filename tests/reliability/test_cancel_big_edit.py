"""Cancelling a long edit: the call answers at once, nothing is written, the work stops."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from agent_toolsmith.cancel import CancelToken
from agent_toolsmith.config import Config
from agent_toolsmith.session import Session

#: A hang guard, not a speed claim (how fast a cancel answers is measured in bench/): the edit
#: itself runs for seconds, and the answer must not wait for it to finish.
ANSWER_GUARD_S = 10.0


def test_cancel_stops_a_ten_megabyte_edit(workspace: Path) -> None:
    big = workspace / "big.py"
    big.write_text("".join(f"def function_{i}(x):\n    return x + {i}\n\n" for i in range(330_000)))
    before = big.read_bytes()

    async def main() -> tuple[float, bool, str, float]:
        session = Session(workspace, config=Config(lsp_enabled=False))
        await session.run("view", {"file_path": "big.py", "limit": 1})
        token = CancelToken()
        # Every line of the file changes: matching, splicing and diffing take seconds.
        call = asyncio.ensure_future(
            session.run(
                "edit",
                {"file_path": "big.py", "old_string": "return x +", "new_string": "return x -", "replace_all": True},
                cancel=token,
            )
        )
        await asyncio.sleep(0.3)  # let the worker thread get going (not a synchronisation point)
        cancelled_at = time.monotonic()
        token.cancel()
        response = await asyncio.wait_for(call, 30)
        answered = time.monotonic() - cancelled_at
        cpu = time.process_time()
        await asyncio.sleep(1.0)  # a stopped worker burns no CPU in the meantime
        return answered, response.metadata.get("aborted", False), response.content, time.process_time() - cpu

    answered, aborted, content, cpu_after = asyncio.run(main())
    assert aborted and content == "Tool call was aborted"
    assert answered < ANSWER_GUARD_S, answered
    assert cpu_after < 0.3, cpu_after
    assert big.read_bytes() == before
