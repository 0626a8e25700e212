"""What a search asks for and what it gives back, shared by the rg runner and the Python fallback."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, NamedTuple, Protocol

#: Noise never listed by ls nor read through read_many's globs, at any depth below the directory
#: searched. That directory itself may be called any of these: only components
#: inside it are filtered.
AUTO_IGNORED = (
    ".git", "node_modules", "__pycache__", "dist", "build", "target", "vendor", ".idea", ".vscode",
    ".zig-cache", "zig-out", ".coverage", "coverage", "logs", ".venv", "venv", "env", "tmp", "temp",
    ".cache", "cache", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".next", ".DS_Store",
    "*.pyc", "*.pyo", "*.class", "*.o", "*.so", "*.dll", "*.exe",
)  # fmt: skip


class ReadableRoots(Protocol):
    """Where a search may read, resolved only as far as a question needs: ``cover`` asks about
    one real path (a read inside the workspace resolves the workspace alone), ``all`` resolves
    every root (for the kernel's confinement of rg)."""

    def cover(self, real: Path) -> bool: ...
    def all(self) -> list[Path]: ...


@dataclass(frozen=True)
class FileQuery:
    """Enumerate files under ``root``: .gitignore respected, hidden files included, .git excluded."""

    root: Path
    globs: tuple[str, ...] = ()
    max_depth: int | None = None
    #: Stat every file as it is listed (for newest-first ordering).
    with_mtimes: bool = False
    #: Where rg may read (the readable roots); empty: anywhere. See :mod:`.confine`.
    readable: tuple[Path, ...] | ReadableRoots = ()
    #: With ``max_depth``: also find the directories the listing shows (:mod:`.directories`).
    with_directories: bool = False
    #: Where that search keeps what it found for the next process (a CLI call is one;
    #: :func:`.directories.witness_file`), asked for only when the search looks into directories.
    witnesses: Callable[[], Path] | None = None


#: What a content search reports: matching lines (with context), matching files, or per-file counts.
SearchMode = Literal["content", "files_with_matches", "count"]


@dataclass(frozen=True)
class SearchQuery:
    root: Path
    pattern: str
    literal: bool = False
    include: str | None = None
    mode: SearchMode = "content"
    case_insensitive: bool = False
    #: A ripgrep file type name (``py``, ``ts``...), as ``rg --type``.
    file_type: str | None = None
    #: Patterns may span lines; ``.`` matches a newline too (``rg -U --multiline-dotall``).
    multiline: bool = False
    #: Context lines shown before and after each match (content mode only).
    before: int = 0
    after: int = 0
    #: Where rg may read (the readable roots); empty: anywhere. See :mod:`.confine`.
    readable: tuple[Path, ...] = ()
    #: Search these files (below ``root``) rather than all of ``root``.
    files: tuple[str, ...] = ()


class Match(NamedTuple):
    """One line rg printed. A tuple, not a dataclass: content searches build tens of thousands."""

    path: str  # decoded with surrogateescape: usable with os.stat, round-trips to the bytes
    line: int
    text: str
    #: A line shown around a match (``rg -A/-B/-C``), not a match itself.
    context: bool = False


@dataclass
class SearchResult:
    matches: list[Match] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    #: Per-file numbers of matching lines, in count mode (as ``rg -c``).
    counts: dict[str, int] = field(default_factory=dict)
    #: Modification times of listed or matching files (file listings that ask, and content
    #: searches through rg), gathered while rg is still running.
    mtimes: dict[str, float] = field(default_factory=dict)
    #: The caller's cap was reached and rg was stopped: more results exist.
    stopped_early: bool = False
    #: rg reported unreadable paths (exit code 2) but produced results.
    partial: bool = False
    #: rg ran confined to the query's ``readable`` roots: it read nothing outside them.
    confined: bool = False
    #: The directories a depth-limited listing shows, relative to its root (``with_directories``).
    directories: list[str] = field(default_factory=list)


def fs_path(raw: bytes) -> str:
    """Bytes from rg → a str path that os functions accept (undecodable bytes kept as surrogates)."""
    return raw.decode("utf-8", "surrogateescape")


def all_readable(readable: tuple[Path, ...] | ReadableRoots) -> tuple[Path, ...]:
    """Every readable root of a query, resolved."""
    return readable if isinstance(readable, tuple) else tuple(readable.all())
