"""Writing tools refuse FIFOs, sockets and devices at once; unreadable special files get a
specific error, never "Internal error"."""

from __future__ import annotations

import asyncio
import os
import socket
import stat
from pathlib import Path
from typing import Any

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.session import Session

#: A hang guard, far above the milliseconds a refusal takes.
HANG_GUARD_S = 5.0


def session(workspace: Path) -> Session:
    return Session(workspace, config=Config(lsp_enabled=False))


def run(s: Session, tool: str, params: dict[str, Any]) -> Any:
    return asyncio.run(asyncio.wait_for(s.run(tool, params), HANG_GUARD_S))


def _calls(name: str) -> list[tuple[str, dict[str, Any]]]:
    update = f"*** Begin Patch\n*** Update File: {name}\n@@\n-a\n+b\n*** End Patch"
    delete = f"*** Begin Patch\n*** Delete File: {name}\n*** End Patch"
    return [
        ("write", {"file_path": name, "content": "x\n"}),
        ("edit", {"file_path": name, "old_string": "a", "new_string": "b"}),
        ("multiedit", {"file_path": name, "edits": [{"old_string": "a", "new_string": "b"}]}),
        ("patch", {"patch_text": update}),
        ("patch", {"patch_text": delete}),
    ]


@pytest.mark.parametrize("kind", ["fifo", "socket"])
def test_writing_tools_refuse_special_files_promptly(workspace: Path, kind: str) -> None:
    special = workspace / "special"
    listener = None
    if kind == "fifo":
        os.mkfifo(special)
    else:
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(str(special))
    try:
        s = session(workspace)
        for tool, params in _calls("special"):
            response = run(s, tool, params)  # wait_for: a hang fails the test, it does not block it
            assert response.is_error, (tool, response.content)
            assert response.metadata.get("error") == "not_regular_file", (tool, response.metadata)
            assert "FIFO" in response.content or "socket" in response.content, (tool, response.content)
            assert "Internal error" not in response.content
        assert os.path.exists(special) and sorted(os.listdir(workspace)) == ["special"]
    finally:
        if listener is not None:
            listener.close()


def test_writing_tools_refuse_a_device_in_the_workspace(workspace: Path) -> None:
    device = workspace / "null"
    try:
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null's numbers
    except PermissionError:
        pytest.skip("creating a device node needs root (CAP_MKNOD)")
    s = session(workspace)
    for tool, params in _calls("null"):
        response = run(s, tool, params)
        assert response.is_error and response.metadata.get("error") == "not_regular_file", (tool, response.content)
        assert "character device" in response.content


def test_view_of_proc_self_mem_is_a_specific_error(workspace: Path) -> None:
    response = run(session(workspace), "view", {"file_path": "/proc/self/mem"})
    assert response.is_error
    assert "Internal error" not in response.content and "/proc/self/mem" in response.content
    assert response.metadata.get("error") == "unreadable_file"


@pytest.mark.parametrize("kind", ["fifo", "link to a fifo", "socket"])
def test_searches_refuse_a_special_file_at_once(workspace: Path, kind: str) -> None:
    """grep given a FIFO used to wait for its whole search timeout (rg blocks opening it)."""
    listener = None
    if kind == "socket":
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(str(workspace / "special"))
    elif kind == "fifo":
        os.mkfifo(workspace / "special")
    else:
        os.mkfifo(workspace / "pipe")
        (workspace / "special").symlink_to("pipe")
    try:
        s = session(workspace)
        for tool, params in [
            ("grep", {"pattern": "x", "path": "special"}),
            ("grep", {"pattern": "x", "path": "special", "output_mode": "count"}),
            ("glob", {"pattern": "*", "path": "special"}),
            ("ls", {"path": "special"}),
        ]:
            response = run(s, tool, params)  # wait_for: a hang fails the test, it does not block it
            assert response.is_error and response.metadata.get("error") == "not_regular_file", (tool, response)
            assert ("FIFO" in response.content or "socket" in response.content) and "special" in response.content
    finally:
        if listener is not None:
            listener.close()


def test_a_fifo_inside_a_searched_directory_is_skipped(workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    (workspace / "a.txt").write_text("needle\n")
    response = run(session(workspace), "grep", {"pattern": "needle"})
    assert not response.is_error and "a.txt" in response.content and "pipe" not in response.content


def test_glob_and_ls_given_a_file_say_it_is_not_a_directory(workspace: Path) -> None:
    (workspace / "a.txt").write_text("x\n")
    s = session(workspace)
    for tool, params in [("glob", {"pattern": "*", "path": "a.txt"}), ("ls", {"path": "a.txt"})]:
        response = run(s, tool, params)
        assert response.is_error and response.metadata.get("error") == "not_a_directory", (tool, response)
        assert "is not a directory" in response.content
