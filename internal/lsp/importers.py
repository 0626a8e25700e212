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
#: Re-exporting files followed in a row (a module, its package's barrel, a barrel above it).
REEXPORT_DEPTH = 2

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
        package = ts_package_name(path)
        named = f"|{re.escape(package)}" if package else ""
        return (
            rf"""(\bfrom|\bimport|\brequire\(|\bimport\()\s*['"]([^'"]*\b{stem}(\.[cm]?[jt]sx?)?(/index)?{named})['"]""",
            "*.{ts,tsx,js,jsx,mjs,cjs,mts,cts,vue}",
        )
    if suffix == ".go":
        package = go_import_path(path.parent, workspace)
        return (rf"""^\s*(import\s+)?(\w+\s+)?"{re.escape(package)}"$""", "*.go") if package else None
    return None


def ts_package_name(path: Path) -> str | None:
    """The package name (package.json ``name``) an index file is the entry of — ``@vue/shared``
    for ``packages/shared/src/index.ts`` — so imports by package name find it; else None."""
    if path.stem != "index":
        return None
    import json

    for directory in (path.parent, path.parent.parent):
        manifest = directory / "package.json"
        if manifest.is_file():
            try:
                name = json.loads(manifest.read_text(encoding="utf-8")).get("name")
            except (OSError, ValueError, AttributeError):
                return None
            return name if isinstance(name, str) and name else None
    return None


def reexports(path: Path, text: str, module: Path) -> bool:
    """Whether ``path`` (with content ``text``) passes on what ``module`` exports: a TS/JS
    ``export * from`` / ``export {…} from`` naming it, or a Python package ``__init__.py`` importing
    it (what a package's ``__init__`` imports, its importers import from the package)."""
    stem = re.escape(module.stem)
    if path.suffix.lower() in TS_EXTENSIONS:
        passing = rf"""export\s+(\*|\{{[^}}]*\}})\s*(as\s+\w+\s+)?from\s*['"][^'"]*\b{stem}(\.[cm]?[jt]sx?)?['"]"""
        return re.search(passing, text) is not None
    if path.name == "__init__.py":
        return re.search(rf"^\s*from\s+[\w.]*\b{stem}\s+import\b", text, re.MULTILINE) is not None
    return False


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
    """Files that import ``path`` — directly, or through a file that re-exports it (a barrel
    ``index.ts``, a package's ``__init__.py``: up to REEXPORT_DEPTH of them in a row) — and, unless
    ``names`` is None, name one of ``names`` as a word; sorted by path. None when the search
    failed or did not end within ``timeout``."""
    import asyncio

    wanted = sorted(set(names)) if names is not None else None
    if wanted == []:
        return []
    try:
        async with asyncio.timeout(max(timeout, 0.01)):
            files = await _importers(path, workspace, rg_path, REEXPORT_DEPTH)
            files.discard(path)
            if wanted is not None and files:
                files = await _naming(sorted(files), wanted, workspace, rg_path)
    except Exception as exc:
        log.info("looking for importers of %s failed: %s", path, exc)
        return None
    return sorted(files)


async def _importers(path: Path, workspace: Path, rg_path: str | None, depth: int) -> set[Path]:
    from ..cancel import CancelToken
    from ..ripgrep import SearchQuery, find_rg, search

    found_pattern = importer_pattern(path, workspace)
    if found_pattern is None:
        return set()
    pattern, include = found_pattern
    query = SearchQuery(workspace, pattern, include=include, mode="files_with_matches")
    found = await search(query, rg=find_rg(rg_path), limit=MAX_IMPORT_CANDIDATES, cancel=CancelToken())
    files = {Path(f) if Path(f).is_absolute() else workspace / f for f in found.files}
    files.discard(path)
    if depth > 0:
        for passer in [f for f in sorted(files) if reexports(f, _read(f), path)]:
            files |= await _importers(passer, workspace, rg_path, depth - 1)
    return files


async def _naming(files: list[Path], names: list[str], workspace: Path, rg_path: str | None) -> set[Path]:
    from ..cancel import CancelToken
    from ..ripgrep import SearchQuery, find_rg, search

    words = r"(?:^|[^\w$])(?:" + "|".join(re.escape(n) for n in names) + r")(?:[^\w$]|$)"
    query = SearchQuery(workspace, words, mode="files_with_matches", files=tuple(str(f) for f in files))
    named = await search(query, rg=find_rg(rg_path), limit=len(files), cancel=CancelToken())
    return {Path(f) if Path(f).is_absolute() else workspace / f for f in named.files}


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
