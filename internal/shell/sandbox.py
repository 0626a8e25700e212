"""The opt-in bash sandbox: bubblewrap enforces what a denylist cannot.

With ``[bash] sandbox = true`` every command runs inside ``bwrap``:

- the whole file system read-only, except the workspace, the allowed directories and a private
  ``/tmp``;
- the state directory hidden whole (an empty read-only directory in its place): it holds the
  session hosts' sockets and secrets (docs/cli-session-host.md), other sessions' state, spilled
  outputs and logs. Nothing in it is for a command: the shell hands its directory and
  environment back through a pipe (runner.py). A workspace or allowed directory inside it stays
  visible and writable;
- every git directory read-only — the workspace's ``.git`` (or the target of its ``gitdir:``
  pointer, and a ``commondir`` target), nested repositories and bare repositories found within
  :data:`GIT_SCAN_DEPTH` levels — and ``.toolsmith``: they configure commands that run outside
  the sandbox later (git hooks, ``core.fsmonitor``, language servers, custom tools). Each is a
  mount point, and so is every directory between it and the workspace root, so none can be
  renamed away and replaced by a copy (``mv .git x`` fails with EBUSY);
- a workspace without ``.git`` gets an empty read-only ``.git`` mount, so ``git init`` there
  fails instead of planting metadata the host's git would trust (the empty mount point is
  removed after the command). A repository created deeper (``git init sub``) cannot be prevented
  by a mount; :func:`new_git_dirs` finds it after the command and the result reports it;
- no network at all — loopback included, since the sandbox has its own network namespace —
  unless ``[bash] network = true``;
- its own PID, IPC and UTS namespaces; killed with its parent.

The banned-command list then only annotates the permission prompt: the kernel, not a parser,
decides what a command can reach.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
from pathlib import Path

from ..fsutil.paths import is_git_dir
from ..proc import run_and_reap

#: How long the one-time "can bubblewrap run here?" probe may take.
PROBE_TIMEOUT_S = 10.0
#: Inside the workspace, kept read-only in the sandbox (see the module docstring). Directories
#: that do not exist get an empty read-only mount; a missing file is left alone.
READ_ONLY_DIRS = (".toolsmith",)
#: How deep below the workspace (and how many entries at most) the search for git directories
#: looks, before each sandboxed command and after it.
GIT_SCAN_DEPTH = 4
GIT_SCAN_MAX_ENTRIES = 20_000
#: Directories never searched for git directories (large, and not where repositories live).
GIT_SCAN_SKIP = frozenset({"node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", ".tox", "target"})
#: Added to a sandboxed command's result when git failed on its read-only metadata.
GIT_READ_ONLY_HINT = (
    "Note: git metadata is read-only inside the bash sandbox (so a command cannot plant hooks or "
    "config that the host's git would run). Commands that change the repository (git commit, "
    "git checkout, git init ...) must run with the sandbox off ([bash] sandbox = false) or be "
    "run by the user; ask the user."
)


def find_bwrap() -> str | None:
    return shutil.which("bwrap")


@functools.lru_cache(maxsize=4)
def unavailable(bwrap: str) -> str | None:
    """:func:`probe`, asked once per ``bwrap`` for the life of the process (a machine's namespaces
    do not come and go between commands)."""
    return probe(bwrap)


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
    hidden: list[Path],
    cwd: str,
    network: bool,
) -> list[str]:
    """``argv`` run inside the sandbox described in the module docstring; ``hidden``: the state
    directories."""
    out = [bwrap, "--die-with-parent", "--unshare-all"]
    if network:
        out.append("--share-net")
    out += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    roots = [workspace, *writable]
    for directory in roots:
        if directory.is_dir():
            out += ["--bind", str(directory), str(directory)]
    out += _hide(hidden, roots)
    for relative in READ_ONLY_DIRS:
        path = workspace / relative
        if path.exists():
            out += ["--ro-bind", str(path), str(path)]
        elif path.parent.is_dir() and not path.is_symlink():
            out += ["--tmpfs", str(path), "--remount-ro", str(path)]
    if not os.path.lexists(workspace / ".git") and workspace.is_dir():
        out += ["--tmpfs", str(workspace / ".git"), "--remount-ro", str(workspace / ".git")]
    pinned: set[Path] = set()
    read_only: list[Path] = []
    for found in sorted(git_metadata(workspace, writable), key=lambda p: len(p.parts)):
        root = next((r for r in roots if found != r and r in found.parents), None)
        if root is None or any(r in found.parents for r in read_only):
            continue  # outside every writable bind, or inside a read-only one: already read-only
        read_only.append(found)
        for parent in reversed(found.parents):  # pin the way down so nothing on it can be renamed
            if root in parent.parents and parent not in pinned:
                pinned.add(parent)
                out += ["--bind", str(parent), str(parent)]
        out += ["--ro-bind", str(found), str(found)]
        pinned.add(found)
    out += ["--chdir", cwd, "--setenv", "TMPDIR", "/tmp", "--", *argv]
    return out


def _hide(hidden: list[Path], roots: list[Path]) -> list[str]:
    """Arguments that put an empty read-only directory over each of ``hidden`` (after the
    writable binds, so one inside the workspace is hidden too), binding again the writable roots
    that lie inside it."""
    out: list[str] = []
    for directory in dict.fromkeys(Path(os.path.realpath(h)) for h in hidden):
        if not directory.is_dir():
            continue
        out += ["--tmpfs", str(directory)]
        for root in roots:
            if directory in root.parents and root.is_dir():
                out += ["--bind", str(root), str(root)]
        out += ["--remount-ro", str(directory)]
    return out


def _pointer(path: Path, key: str) -> Path | None:
    """The directory a ``gitdir:`` file (key "gitdir: ") or a ``commondir`` file (key "") names."""
    try:
        text = path.read_text(errors="replace").strip()
    except OSError:
        return None
    if not text.startswith(key):
        return None
    target = Path(text[len(key) :].strip())
    return Path(os.path.realpath(path.parent / target))


def _related(git_dir: Path) -> list[Path]:
    """``git_dir`` and the shared directory its ``commondir`` file names."""
    found = [git_dir]
    common = _pointer(git_dir / "commondir", "")
    if common is not None and common.is_dir():
        found.append(common)
    return found


def git_metadata(workspace: Path, writable: list[Path] | None = None) -> set[Path]:
    """Every git directory and ``.git`` pointer file the sandbox must keep read-only: below the
    workspace and the writable directories (bounded search), plus what their pointers name."""
    found: set[Path] = set()
    for base in [workspace, *(writable or [])]:
        for entry in _scan(base):
            if entry.name == ".git" and entry.is_file() and not entry.is_symlink():
                found.add(entry)
                target = _pointer(entry, "gitdir: ")
                if target is not None and is_git_dir(target):
                    found.update(_related(target))
            elif entry.is_dir() and not entry.is_symlink() and (entry.name == ".git" or is_git_dir(entry)):
                found.update(_related(entry))
    return found


def _scan(base: Path) -> list[Path]:
    """Entries below ``base`` that may be git metadata, breadth first and bounded; git
    directories are not descended into."""
    out: list[Path] = []
    level = [base]
    seen = 0
    for _ in range(GIT_SCAN_DEPTH):
        deeper: list[Path] = []
        for directory in level:
            try:
                entries = list(os.scandir(directory))
            except OSError:
                continue
            for entry in entries:
                seen += 1
                if seen > GIT_SCAN_MAX_ENTRIES:
                    return out
                path = Path(entry.path)
                if entry.name == ".git" or (entry.is_dir(follow_symlinks=False) and is_git_dir(path)):
                    out.append(path)
                elif entry.is_dir(follow_symlinks=False) and entry.name not in GIT_SCAN_SKIP:
                    deeper.append(path)
        level = deeper
    return out


def new_git_dirs(before: set[Path], workspace: Path, writable: list[Path] | None = None) -> list[Path]:
    """Git metadata that appeared during a command (a ``git init sub`` the mounts cannot stop).

    The empty ``.git`` mount point left in a workspace without one is removed first (it is not
    metadata, and an empty ``.git`` would make ripgrep start honouring .gitignore files there).
    """
    empty = workspace / ".git"
    if empty not in before:
        with contextlib.suppress(OSError):
            empty.rmdir()  # only when empty: anything a command put there stays, and is reported
    return sorted(git_metadata(workspace, writable) - before)


def explain_failure(output: str) -> str:
    """A hint for the result when git failed because its metadata is read-only here."""
    if "Read-only file system" in output and ".git" in output:
        return GIT_READ_ONLY_HINT
    return ""
