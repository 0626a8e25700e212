"""Which files import a changed file: an rg pattern per language (Python, TS/JS, Go).

Servers report diagnostics for open files only (gopls aside), so after a change the client opens
a few importers itself; these patterns find them. Best effort: a missed importer is only
unreported, never wrong.
"""

from __future__ import annotations

import re
from pathlib import Path

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
