"""Resolving paths the model gives us, and keeping mutating tools inside the workspace."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

from ..errors import ToolError

#: How many similar names a "File not found" error suggests.
MAX_SUGGESTIONS = 3


def resolve(workspace: Path, file_path: str) -> Path:
    """An absolute, normalised path; relative paths are taken from the workspace root."""
    expanded = os.path.expanduser(file_path)
    joined = expanded if os.path.isabs(expanded) else os.path.join(workspace, expanded)
    return Path(os.path.normpath(joined))


def real_path(path: Path) -> Path:
    """``path`` with every symlink resolved, also when the file itself does not exist yet."""
    return Path(os.path.realpath(path))


def is_within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def check_writable(
    path: Path,
    *,
    workspace: Path,
    allowed_dirs: list[Path],
    protected_dirs: list[str],
    confine: bool,
) -> None:
    """Refuse a write outside the workspace/allowed dirs (after symlinks) or into a protected dir."""
    target = real_path(path)
    roots = [real_path(workspace), *(real_path(d) for d in allowed_dirs)]
    if confine and not any(is_within(target, root) for root in roots):
        raise ToolError(
            f"Refusing to write {path}: it resolves to {target}, outside the workspace "
            f"{roots[0]}. Only files inside the workspace can be changed."
        )
    for protected in protected_dirs:
        pdir = Path(protected)
        pdir = real_path(pdir if pdir.is_absolute() else roots[0] / pdir)
        if is_within(target, pdir):
            raise ToolError(f"Refusing to write {path}: {pdir} is a protected directory.")


def display_path(path: Path, workspace: Path) -> str:
    """Workspace-relative when inside it (diff headers, messages), else absolute."""
    try:
        return path.relative_to(workspace).as_posix()
    except ValueError:
        return str(path)


def similar_names(path: Path) -> list[str]:
    """Up to three existing paths in the same directory whose names resemble ``path``'s."""
    try:
        names = os.listdir(path.parent)
    except OSError:
        return []
    lowered = path.name.lower()
    close = difflib.get_close_matches(path.name, names, n=MAX_SUGGESTIONS, cutoff=0.5)
    contains = [n for n in names if lowered and (lowered in n.lower() or n.lower() in lowered)]
    seen: list[str] = []
    for name in [*close, *sorted(contains)]:
        if name not in seen:
            seen.append(name)
    return [str(path.parent / n) for n in seen[:MAX_SUGGESTIONS]]


def not_found_error(path: Path) -> ToolError:
    message = f"File not found: {path}"
    suggestions = similar_names(path)
    if suggestions:
        message += "\n\nDid you mean one of these?\n" + "\n".join(suggestions)
    return ToolError(message)


def require_directory(path: Path, hint: str) -> Path:
    """``path`` if it is an existing directory; else the not-found error or ``hint``'s refusal."""
    if not path.exists():
        raise not_found_error(path)
    if not path.is_dir():
        raise ToolError(f"Path {path} is not a directory. {hint}")
    return path
