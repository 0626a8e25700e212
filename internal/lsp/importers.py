"""Which files import a changed file: an rg pattern per language (Python, TS/JS, Go), narrowed to
those that name what changed.

Servers report diagnostics for open files only (gopls aside), so after a change the client opens
a few importers itself; these patterns find them. Best effort: a missed importer is only
unreported, never wrong.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from ..logs import logger

log = logger("toolsmith.lsp")

#: Files matching a module's import pattern looked at, at most (the narrowing by name reads these).
MAX_IMPORT_CANDIDATES = 1000

TS_EXTENSIONS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")


def importer_pattern(path: Path, workspace: Path) -> tuple[str, str] | None:
    """(rg regex, include glob) matching import lines that may name ``path``, or None."""
    suffix = path.suffix.lower()
    if suffix in (".py", ".pyi"):
        module = re.escape(path.stem if path.stem != "__init__" else path.parent.name)
        return (
            rf"^\s*(from\s+[\w.]*\b{module}\b[\w.]*\s+import|import\s+[\w.]*\b{module}\b"
            rf"|from\s+[\w.]+\s+import\s+.*\b{module}\b)",
            "*.py",
        )
    if suffix in TS_EXTENSIONS:
        stem = re.escape(path.stem if path.stem != "index" else path.parent.name)
        return (
            rf"""(\bfrom|\bimport|\brequire\(|\bimport\()\s*['"][^'"]*\b{stem}(\.[cm]?[jt]sx?)?(/index)?['"]""",
            "*.{ts,tsx,js,jsx,mjs,cjs,mts,cts,vue}",
        )
    if suffix == ".go":
        package = go_import_path(path.parent, workspace)
        return (rf"""^\s*(import\s+)?(\w+\s+)?"{re.escape(package)}"$""", "*.go") if package else None
    return None


def go_import_path(directory: Path, workspace: Path) -> str | None:
    """The import path of the Go package in ``directory``, from the nearest go.mod's module line."""
    current = directory
    while True:
        mod = current / "go.mod"
        if mod.is_file():
            try:
                text = mod.read_text(encoding="utf-8", errors="replace")
            except OSError:
                return None
            match = re.search(r"^module\s+(\S+)", text, re.MULTILINE)
            if match is None:
                return None
            relative = directory.relative_to(current).as_posix()
            return match.group(1) if relative == "." else f"{match.group(1)}/{relative}"
        if current == workspace or workspace not in current.parents:
            return None
        current = current.parent


async def importers_of(
    path: Path, workspace: Path, rg_path: str | None, names: Iterable[str] | None, timeout: float
) -> list[Path] | None:
    """Files that import ``path`` and — unless ``names`` is None — name one of ``names`` as a word,
    sorted by path; None when the search failed or did not end within ``timeout``."""
    import asyncio

    from ..cancel import CancelToken
    from ..ripgrep import SearchQuery, find_rg, search

    found_pattern = importer_pattern(path, workspace)
    wanted = sorted(set(names)) if names is not None else None
    if found_pattern is None or wanted == []:
        return []
    pattern, include = found_pattern
    rg = find_rg(rg_path)
    try:
        async with asyncio.timeout(max(timeout, 0.01)):
            query = SearchQuery(workspace, pattern, include=include, mode="files_with_matches")
            found = await search(query, rg=rg, limit=MAX_IMPORT_CANDIDATES, cancel=CancelToken())
            files = sorted({f for f in found.files if Path(f) != path})
            if wanted is not None and files:
                words = r"(?:^|[^\w$])(?:" + "|".join(re.escape(n) for n in wanted) + r")(?:[^\w$]|$)"
                query = SearchQuery(workspace, words, mode="files_with_matches", files=tuple(files))
                named = await search(query, rg=rg, limit=len(files), cancel=CancelToken())
                files = sorted(set(named.files))
    except Exception as exc:
        log.info("looking for importers of %s failed: %s", path, exc)
        return None
    return [Path(f) if Path(f).is_absolute() else workspace / f for f in files]
