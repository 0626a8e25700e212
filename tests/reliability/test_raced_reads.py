"""A read checked inside the workspace cannot be turned into an outside read by a swap.

A second process swaps (renameat2 RENAME_EXCHANGE, as fast as it can) an inside file or
directory with a symlink to an outside secret, while view, grep, ls or glob reads through it
with an asker that denies every outside read: not one response may contain the secret (its
content, or for listings its name).
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import subprocess
import sys
from pathlib import Path

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.permission import Decision, PermissionRequest
from agent_toolsmith.proc import landlock
from agent_toolsmith.session import Session

from .test_escapes import SWAPPER

#: Raced reads per variant, and the whole run's hang guard.
RACED_READS = 500
RUN_TIMEOUT_S = 120.0
SWAPPER_EXIT_TIMEOUT_S = 10.0
SECRET = "TOP-SECRET-CONTENT"


@pytest.mark.slow
@pytest.mark.parametrize(("tool", "variant"), [
        ("view", "file"), ("view", "dir"), ("view", "notebook"), ("grep", "file"), ("grep", "dir"),
        ("ls", "dir"), ("ls depth", "dir"), ("glob", "dir"), ("grep", "dir, rg unconfined"),
        ("ls", "dir, rg unconfined"), ("ls depth", "dir, rg unconfined"), ("glob", "dir, rg unconfined"),
    ],)
def test_raced_reads_never_leak_outside_content(
    tmp_path: Path, tool: str, variant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rg runs confined by the kernel (Landlock) where it can; "unconfined" variants take the
    path of a kernel without it, where the tools check what rg printed."""
    assert hasattr(ctypes.CDLL(None), "renameat2"), "glibc >= 2.28 provides renameat2; the swapper needs it"
    if variant.endswith("rg unconfined"):
        monkeypatch.setattr(landlock, "available", lambda: False)
        variant = "dir"
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "d").mkdir(parents=True)
    outside.mkdir()
    (outside / "f.txt").write_text(f"{SECRET} needle\n")
    (outside / f"{SECRET}.txt").write_text("a secret name\n")  # what ls and glob must not list
    (outside / f"{SECRET}-dir").mkdir()  # what ls with depth (its directory walk) must not show
    (outside / f"{SECRET}-dir" / "x.txt").write_text("x\n")
    (ws / "d" / "f.txt").write_text("inside needle\n")
    if variant == "file":
        (ws / "evil").symlink_to(outside / "f.txt")
        swapped, read = (ws / "d" / "f.txt", ws / "evil"), "d/f.txt"
    elif variant == "notebook":  # a notebook view takes its own read path (documents/notebook.py)
        (outside / "f.ipynb").write_text(_notebook(f"{SECRET} needle"))
        (ws / "d" / "f.ipynb").write_text(_notebook("inside needle"))
        (ws / "evil").symlink_to(outside)
        swapped, read = (ws / "d", ws / "evil"), "d/f.ipynb"
    else:
        (ws / "evil").symlink_to(outside)
        swapped, read = (ws / "d", ws / "evil"), "d/f.txt"
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, *map(str, swapped)], stdout=subprocess.PIPE)
    try:
        assert swapper.stdout is not None and swapper.stdout.readline() == b"swapping\n"
        leaks, inside, denied = asyncio.run(asyncio.wait_for(_read_many(ws, tool, read), RUN_TIMEOUT_S))
    finally:
        swapper.kill()
        swapper.wait(timeout=SWAPPER_EXIT_TIMEOUT_S)
    print(f"raced {tool} ({variant}): {RACED_READS} reads, {inside} inside, {denied} refused, {leaks} leaks")
    assert leaks == 0, f"{leaks} of {RACED_READS} reads leaked the outside file"
    assert inside > 0, "no read succeeded: the race was not exercised"


def _notebook(source: str) -> str:
    cell = {"cell_type": "markdown", "id": "c1", "metadata": {}, "source": source}
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def _params(tool: str, read: str) -> dict[str, str]:
    directory = str(Path(read).parent)
    return {
        "view": {"file_path": read},
        "grep": {"pattern": "needle", "path": directory},
        "ls": {"path": directory},
        "ls depth": {"path": directory, "depth": 1},
        "glob": {"pattern": "*", "path": directory},
    }[tool]


async def _read_many(ws: Path, tool: str, read: str) -> tuple[int, int, int]:
    async def deny(request: PermissionRequest) -> Decision:
        return Decision.DENY

    session = Session(ws, asker=deny, config=Config(lsp_enabled=False))
    leaks = inside = denied = 0
    for _ in range(RACED_READS):
        response = await session.run(tool.split()[0], _params(tool, read))
        leaks += SECRET in response.content
        inside += ("inside" in response.content or "f.txt" in response.content) and not response.is_error
        denied += response.is_error
    return leaks, inside, denied
