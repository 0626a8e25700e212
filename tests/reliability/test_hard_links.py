"""A write never goes through a hard link to a file we cannot see: the link is replaced (broken,
and the result says so); the outside file never changes, and readers never see torn content."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

from agent_toolsmith.config import Config
from agent_toolsmith.session import Session

#: Generous per-call guard (a call takes milliseconds).
CALL_TIMEOUT_S = 30.0
#: Concurrent-reader rounds: each is one write of a large file while a reader polls it.
TORN_ROUNDS = 40


def session(workspace: Path) -> Session:
    return Session(workspace, config=Config(lsp_enabled=False))


def run(s: Session, tool: str, params: dict[str, Any]) -> Any:
    return asyncio.run(asyncio.wait_for(s.run(tool, params), CALL_TIMEOUT_S))


def test_no_writing_tool_changes_a_hard_linked_outside_file(tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    secret = outside / "secret.txt"
    calls = [
        ("edit", {"file_path": "h.txt", "old_string": "alpha", "new_string": "EDITED"}),
        ("multiedit", {"file_path": "h.txt", "edits": [{"old_string": "alpha", "new_string": "MULTI"}]}),
        ("write", {"file_path": "h.txt", "content": "WRITTEN\n"}),
        ("patch", {"patch_text": "*** Begin Patch\n*** Update File: h.txt\n@@\n-alpha\n+PATCHED\n*** End Patch"}),
        ("patch", {"patch_text": "*** Begin Patch\n*** Delete File: h.txt\n*** End Patch"}),
    ]
    for tool, params in calls:
        secret.write_text("alpha\n")
        linked = ws / "h.txt"
        linked.unlink(missing_ok=True)
        os.link(secret, linked)
        s = session(ws)
        run(s, "view", {"file_path": "h.txt"})
        response = run(s, tool, params)
        assert not response.is_error, (tool, response.content)
        assert secret.read_text() == "alpha\n", f"{tool} changed the outside file"
        assert secret.stat().st_nlink == 1
        if params.get("patch_text", "").count("Delete") == 0:
            assert "link is broken" in response.content, (tool, response.content)
            assert linked.read_text() != "alpha\n"


def test_readers_never_see_a_linked_file_torn(workspace: Path) -> None:
    target = workspace / "big.txt"
    old, new = "a" * 400_000 + "\n", "b" * 400_000 + "\n"
    target.write_text(old)
    os.link(target, workspace / "second.txt")
    s = session(workspace)
    torn: list[int] = []
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            with open(target, "rb") as handle:  # the name, as another program reads it
                data = handle.read()
            if len(set(data.rstrip(b"\n"))) > 1 or 0 < len(data) < len(old):
                torn.append(len(data))

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for i in range(TORN_ROUNDS):
            run(s, "view", {"file_path": "big.txt", "limit": 1})
            response = run(s, "write", {"file_path": "big.txt", "content": new if i % 2 == 0 else old})
            assert not response.is_error, response.content
    finally:
        stop.set()
        thread.join(timeout=CALL_TIMEOUT_S)
    assert torn == [], f"{len(torn)} torn reads"


NOTEBOOK = (
    '{"cells": [{"cell_type": "markdown", "id": "c1", "metadata": {}, "source": "alpha"}], '
    '"metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n'
)


def test_the_structure_tools_break_the_link_too_and_say_so(tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    calls = [
        ("h.py", "def alpha():\n    return 1\n", "symbol_edit",
         {"file_path": "h.py", "symbol": "alpha", "action": "replace", "new_string": "def alpha():\n    return 2\n"}),
        ("h.ipynb", NOTEBOOK, "notebook_edit", {"file_path": "h.ipynb", "cell_id": "c1", "new_source": "beta"}),
    ]  # fmt: skip
    for name, content, tool, params in calls:
        secret = outside / name
        secret.write_text(content)
        os.link(secret, ws / name)
        s = session(ws)
        run(s, "view", {"file_path": name})
        response = run(s, tool, params)
        assert not response.is_error, (tool, response.content)
        assert secret.read_text() == content and secret.stat().st_nlink == 1, f"{tool} changed the outside file"
        assert "link is broken" in response.content and response.metadata["notes"], (tool, response.content)
