"""The one ripgrep runner: every tool that enumerates or searches files goes through here.

``rg`` runs from an argument vector (never a shell string) with the pattern after ``-e`` and the
paths after ``--``, so a pattern or name starting with ``-`` is data. Output is parsed as it
streams (NUL-terminated paths, so ``:``, ``|``, spaces and newlines in names never misparse) and
rg is killed as soon as the caller has enough, on timeout, or on cancellation. Exit code 1 means
no matches; exit code 2 with results means some paths could not be read (results are kept).

When no ``rg`` binary is available, :mod:`internal.ripgrep.fallback` gives the same results in
pure Python.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path

from ..cancel import CancelToken, race_cancel
from ..errors import ToolError
from ..fsutil.paths import quote_input
from ..proc import REAP_TIMEOUT_S, check_argument, spawn
from .query import FileQuery, Match, SearchQuery, SearchResult, fs_path

#: A single rg run is stopped after this long.
RG_TIMEOUT_S = 30.0
#: How much rg stderr is kept for error messages.
MAX_STDERR_BYTES = 4096
READ_CHUNK = 256 * 1024

#: Globs excluded from every enumeration: VCS metadata is never useful to the model.
ALWAYS_EXCLUDED = ("!.git",)


def find_rg(configured: str | None) -> str | None:
    """``configured`` if set ("" disables rg), else the ripgrep wheel's binary beside our
    interpreter, else ``rg`` on PATH."""
    if configured is not None:
        return configured or None
    beside = Path(sys.executable).parent / "rg"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("rg")


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


class _Parser:
    """Incremental parser for ``--null`` output; ``limit`` records then it asks to stop."""

    def __init__(self, mode: str, limit: int, with_mtimes: bool = False) -> None:
        self.mode = mode
        self.limit = limit
        self.with_mtimes = with_mtimes
        self.buffer = b""
        self.result = SearchResult()

    def count(self) -> int:
        return len(self.matches_or_files())

    def matches_or_files(self) -> list[Match] | list[str]:
        return self.result.matches if self.mode == "search" else self.result.files

    def feed(self, chunk: bytes) -> bool:
        """Consume ``chunk``; return False once ``limit`` records were collected."""
        self.buffer += chunk
        if self.mode == "files":
            *records, self.buffer = self.buffer.split(b"\0")
            files = self.result.files
            room = self.limit - len(files)
            new = list(map(fs_path, records[:room]))
            files.extend(new)
            if self.with_mtimes:  # stat now, while rg keeps enumerating on another core
                self.result.mtimes.update(zip(new, map(_mtime, new), strict=True))
            return len(records) < room
        while True:
            nul = self.buffer.find(b"\0")
            if nul < 0:
                return True
            newline = self.buffer.find(b"\n", nul)
            if newline < 0:
                return True
            if self.count() >= self.limit:
                return False
            path, rest = self.buffer[:nul], self.buffer[nul + 1 : newline]
            self.buffer = self.buffer[newline + 1 :]
            number, _, text = rest.partition(b"|")
            text = text[:-1] if text.endswith(b"\r") else text
            try:
                line = int(number)
            except ValueError:
                continue
            self.result.matches.append(Match(fs_path(path), line, text.decode("utf-8", "replace")))


async def run_rg(
    rg: str,
    args: list[str],
    *,
    cwd: Path,
    mode: str,
    limit: int,
    cancel: CancelToken,
    timeout: float = RG_TIMEOUT_S,
    with_mtimes: bool = False,
) -> SearchResult:
    """Run ``rg args`` in ``cwd`` and parse its ``--null`` output in ``mode`` "files" or "search".

    Globs are matched relative to rg's working directory, so callers pass the search root as
    ``cwd``. Whatever happens — enough results, timeout, cancellation, an error — rg is killed
    and reaped within bounded time before this returns.
    """
    parser = _Parser(mode, limit, with_mtimes)
    for arg in args:
        check_argument(arg, "search pattern or glob")
    child = await spawn([rg, *args], cwd=cwd)
    assert child.stderr is not None
    stderr_task = asyncio.ensure_future(_read_limited(child.stderr))
    stopped = finished = False
    try:
        stopped = await race_cancel(asyncio.wait_for(_pump(child.stdout, parser), timeout), cancel)
        finished = not stopped
    except TimeoutError as exc:
        raise ToolError(
            f"Search timed out after {timeout:.0f}s. Use a more specific path or pattern.",
            {"timed_out": True},
        ) from exc
    finally:
        # rg that reached EOF is exiting by itself; anything else is killed now.
        exited = finished and await child.wait(REAP_TIMEOUT_S) is not None
        if not exited:
            await asyncio.shield(child.stop(grace_s=0))
        child.close()
        stderr = await _bounded(stderr_task)
    result = parser.result
    result.stopped_early = stopped
    if stopped:
        return result
    if child.returncode == 2:
        if not parser.count() and stderr.strip():
            message = _rg_message(stderr, args)
            raise ToolError(message[0].upper() + message[1:] if message.startswith("invalid") else f"rg: {message}")
        result.partial = True
    elif child.returncode not in (0, 1):
        raise ToolError(f"ripgrep failed with exit code {child.returncode}: {_rg_message(stderr, args)}")
    return result


async def _bounded(task: asyncio.Future[bytes]) -> bytes:
    """rg's stderr once the pipe is closed: at EOF already, so this returns at once."""
    try:
        return await asyncio.wait_for(task, REAP_TIMEOUT_S)
    except TimeoutError:
        return b""


def _rg_message(stderr: bytes, args: list[str]) -> str:
    """rg's complaint in the model's terms. A regex error names the user's pattern, not rg's
    internal ``(?:…)`` wrapping of it, and says how to search for the text as written."""
    text = stderr.decode("utf-8", "replace").strip()
    if "regex parse error" in text and "-e" in args:
        pattern = args[args.index("-e") + 1]
        reason = next((line[len("error:") :].strip() for line in reversed(text.splitlines())
                       if line.startswith("error:")), "it does not parse")  # fmt: skip
        return (
            f"invalid regular expression {quote_input(pattern)!r}: {reason}. Escape special characters, or set "
            "literal_text to true to search for the text as written."
        )
    return quote_input(text)


async def _pump(stream: asyncio.StreamReader, parser: _Parser) -> bool:
    """Feed stdout to the parser; True when the parser had enough and stopped early."""
    while True:
        chunk = await stream.read(READ_CHUNK)
        if not chunk:
            parser.feed(b"\0" if parser.mode == "files" and parser.buffer else b"")
            return False
        if not parser.feed(chunk):
            return True


async def _read_limited(stream: asyncio.StreamReader) -> bytes:
    kept = b""
    while chunk := await stream.read(READ_CHUNK):
        if len(kept) < MAX_STDERR_BYTES:
            kept += chunk[: MAX_STDERR_BYTES - len(kept)]
    return kept


# --- the high-level operations the tools use ------------------------------------------------


def _file_args(query: FileQuery) -> list[str]:
    args = ["--files", "--null", "--hidden", "--no-require-git", "--no-messages"]
    for glob in (*ALWAYS_EXCLUDED, *query.globs):
        args += ["--glob", glob]
    if query.max_depth is not None:
        args += ["--max-depth", str(query.max_depth)]
    return [*args, "--", str(query.root)]


def _search_args(query: SearchQuery) -> list[str]:
    args = [
        "-H",
        "-n",
        "--no-heading",
        "--no-messages",
        "--null",
        "--field-match-separator=|",
        "--hidden",
        "--no-require-git",
        "--color=never",
    ]
    for glob in ALWAYS_EXCLUDED:
        args += ["--glob", glob]
    if query.include:
        args += ["--glob", query.include]
    if query.literal:
        args.append("--fixed-strings")
    return [*args, "-e", query.pattern, "--", str(query.root)]


async def list_files(query: FileQuery, *, rg: str | None, limit: int, cancel: CancelToken) -> SearchResult:
    if rg is None:
        from . import fallback

        return fallback.list_files(query, limit=limit, cancel=cancel)
    return await run_rg(
        rg, _file_args(query), cwd=query.root, mode="files", limit=limit, cancel=cancel, with_mtimes=query.with_mtimes
    )


async def search(query: SearchQuery, *, rg: str | None, limit: int, cancel: CancelToken) -> SearchResult:
    if rg is None:
        from . import fallback

        return fallback.search(query, limit=limit, cancel=cancel)
    cwd = query.root if query.root.is_dir() else query.root.parent
    return await run_rg(rg, _search_args(query), cwd=cwd, mode="search", limit=limit, cancel=cancel)


StatCache = dict[str, float]


def newest_first(paths: list[str], known: StatCache | None = None) -> list[str]:
    """Sort by modification time, newest first, ties by path; one stat per path not in ``known``."""
    mtimes: StatCache = dict(known or {})
    for path in paths:
        if path not in mtimes:
            mtimes[path] = _mtime(path)
    return sorted(paths, key=lambda p: (-mtimes[p], p))
