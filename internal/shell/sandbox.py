"""The opt-in bash sandbox: bubblewrap enforces what a denylist cannot.

With ``[bash] sandbox = true`` every command runs inside ``bwrap``:

- the whole file system read-only, except the workspace, the allowed directories, a private
  ``/tmp``, and the session's shell-state directory (the EXIT trap writes the cwd/env there);
- ``.git/hooks``, ``.git/config`` and ``.toolsmith`` of the workspace read-only (they configure
  commands that run outside the sandbox later: git hooks, language servers, custom tools);
  a missing one is covered by an empty read-only mount (which leaves an empty directory);
- no network at all — loopback included, since the sandbox has its own network namespace —
  unless ``[bash] network = true``;
- its own PID, IPC and UTS namespaces; killed with its parent.

The banned-command list then only annotates the permission prompt: the kernel, not a parser,
decides what a command can reach.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from ..proc import run_and_reap

#: How long the one-time "can bubblewrap run here?" probe may take.
PROBE_TIMEOUT_S = 10.0
#: Inside the workspace, kept read-only in the sandbox (see the module docstring). Directories
#: that do not exist get an empty read-only mount; a missing file is left alone.
READ_ONLY_DIRS = (".git/hooks", ".toolsmith")
READ_ONLY_FILES = (".git/config",)


class SandboxUnavailable(Exception):
    """bubblewrap is missing or cannot create namespaces here; the message says which."""


def find_bwrap() -> str | None:
    return shutil.which("bwrap")


def probe(bwrap: str) -> str | None:
    """Why bubblewrap cannot sandbox on this machine, or None when it can."""
    try:
        proc = run_and_reap(
            [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-all", "--die-with-parent", "true"],
            PROBE_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap could not be started ({exc})"
    if proc.returncode != 0:
        return f"bubblewrap cannot create namespaces here: {proc.stderr.strip() or f'exit code {proc.returncode}'}"
    return None


def wrap(
    argv: list[str],
    *,
    bwrap: str,
    workspace: Path,
    writable: list[Path],
    state_dir: Path,
    cwd: str,
    network: bool,
) -> list[str]:
    """``argv`` run inside the sandbox described in the module docstring."""
    out = [bwrap, "--die-with-parent", "--unshare-all"]
    if network:
        out.append("--share-net")
    out += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for directory in [workspace, *writable, state_dir]:
        if directory.is_dir():
            out += ["--bind", str(directory), str(directory)]
    for relative in (*READ_ONLY_DIRS, *READ_ONLY_FILES):
        path = workspace / relative
        if path.exists():
            out += ["--ro-bind", str(path), str(path)]
        elif relative in READ_ONLY_DIRS and path.parent.is_dir() and not path.is_symlink():
            out += ["--tmpfs", str(path), "--remount-ro", str(path)]
    out += ["--chdir", cwd, "--setenv", "TMPDIR", "/tmp", "--", *argv]
    return out
