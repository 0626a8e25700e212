"""Function tools for the tests of `toolsmith-mcp --tools` (tests/integration/test_mcp_function_tools.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from agent_toolsmith import tool


def add(a: int, b: int = 2) -> int:
    """Adds two integers."""
    return a + b


@tool(name="word_count", read_only=True)
def count_words(text: str) -> int:
    """Counts the words of a text."""
    return len(text.split())


async def steps(count: int, progress: Callable[[str], None] | None = None) -> str:
    """Reports each of `count` steps as progress."""
    for i in range(count):
        if progress is not None:
            progress(f"step {i + 1} of {count}")
        await asyncio.sleep(0)
    return f"{count} steps"


async def wait_for_cancel(marker: str) -> str:
    """Writes `marker`.started, waits until cancelled, then writes `marker` (a file path)."""
    Path(marker + ".started").write_text("waiting\n")
    try:
        await asyncio.sleep(600)
    except asyncio.CancelledError:
        Path(marker).write_text("cancelled\n")
        raise
    return "never"


TOOLS = [add, count_words, steps, wait_for_cancel]
NOT_A_TOOL = 42
