"""Test helpers: an independent unified-diff applier built on unidiff's parser, a /proc scan, and
the view a change needs first."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import unidiff


def read_then(run: Callable[[str, Any], Any], path: str) -> None:
    """View ``path`` (what edit, multiedit and patch need first), asserting the view worked."""
    r = run("view", {"file_path": path})
    assert not r.is_error, r.content


def lines_of(text: str) -> list[str]:
    """Split on LF only, keeping it (independent of the code under test)."""
    return re.findall(r"[^\n]*\n|[^\n]+$", text)


def apply_unified_diff(old: str, diff: str) -> str:
    """Apply a single-file unified diff (parsed by unidiff) to ``old``."""
    if not diff:
        return old
    patch = unidiff.PatchSet(diff)
    assert len(patch) == 1
    old_lines = lines_of(old)
    out: list[str] = []
    cursor = 0
    for hunk in patch[0]:
        start = hunk.source_start - 1 if hunk.source_length else hunk.source_start
        out.extend(old_lines[cursor:start])
        cursor = start
        pending: list[tuple[str, str]] = []
        for line in hunk:
            if line.line_type == "\\":
                kind, value = pending[-1]
                pending[-1] = (kind, value[:-1] if value.endswith("\n") else value)
                continue
            pending.append((line.line_type, line.value))
        for kind, value in pending:
            if kind in (" ", "-"):
                assert old_lines[cursor] == value, (cursor, old_lines[cursor], value)
                cursor += 1
            if kind in (" ", "+"):
                out.append(value)
    out.extend(old_lines[cursor:])
    return "".join(out)


def processes_with(needle: bytes, parent: int | None = None) -> list[int]:
    """Live (not zombie) processes whose command line contains ``needle`` — only the children of
    ``parent`` when given."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            fields = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if needle in cmdline and fields[0] != b"Z" and (parent is None or int(fields[1]) == parent):
            found.append(int(entry))
    return found


def running(needle: bytes, program: str, timeout_s: float = 30.0) -> list[int]:
    """:func:`processes_with` ``needle`` once one of them runs ``program`` (its exec done: during
    an exec the command line reads empty for a moment), polled within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = processes_with(needle)
        if any(_program(pid) == program for pid in found) or time.monotonic() > deadline:
            return found
        time.sleep(0.005)


def _program(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def user_config() -> Path:
    """The user's own config file (under the tests' private XDG_CONFIG_HOME): where settings a
    workspace's .toolsmith/config.toml may not make (a language server's command) go."""
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "toolsmith" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path
