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
import contextlib
import difflib
import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

from ..cancel import CancelToken, race_cancel
from ..errors import ToolError
from ..fsutil.paths import quote_input
from ..proc import REAP_TIMEOUT_S, check_argument
from ..proc.confined import ReadConfinement, confined_executor
from ..proc.stream import StreamControl, Streamed, run_streaming
from ..vocabulary import set_flag
from .confine import confinement_for, unconfinable
from .directories import load_witnesses, save_witnesses, shown_directories
from .fallback import InexactRules
from .output import OutputParser, mtime
from .query import FileQuery, ReadableRoots, SearchQuery, SearchResult, all_readable
from .shallow import NeedsLook, list_shallow, shallow_rules

#: A single rg run is stopped after this long.
RG_TIMEOUT_S = 30.0
#: The exit status of a process whose loader could not start it (a library it could not read).
LOADER_FAILED = 127
#: How much rg stderr is kept for error messages.
MAX_STDERR_BYTES = 4096

#: Listings at most this deep run rg on one thread whatever the CPUs: they read few directories,
#: and starting rg's thread pool costs more than it saves (depth 1 of the standard library: 4.1 ms
#: against 6.5 ms).
SINGLE_THREAD_MAX_DEPTH = 2
#: The most threads rg starts by default (its own cap), and so the most a listing asks for.
RG_MAX_THREADS = 12
#: Globs excluded from every enumeration: VCS metadata is never useful to the model.
ALWAYS_EXCLUDED = ("!.git",)


def find_rg(configured: str | None) -> str | None:
    """``configured`` if set ("" disables rg), else the ripgrep wheel's binary beside our
    interpreter, else ``rg`` on PATH."""
    if configured is not None:
        return configured or None
    beside = _beside_interpreter()
    if os.access(beside, os.X_OK) and not os.path.isdir(beside):
        return beside
    return shutil.which("rg")


@functools.cache
def _beside_interpreter() -> str:
    return str(Path(sys.executable).parent / "rg")


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
    on_path: Callable[[str], None] | None = None,
    confine: ReadConfinement | None = None,
    alongside: Callable[[], list[str]] | None = None,
) -> SearchResult:
    """Run ``rg args`` in ``cwd`` and parse its ``--null`` output in ``mode`` "files", "search" or "count".

    Globs are matched relative to rg's working directory, so callers pass the search root as
    ``cwd``. rg runs on a worker thread (:func:`run_streaming`), which parses as it reads.
    Whatever happens — enough results, timeout, cancellation, an error — rg is killed and reaped
    within bounded time before this returns. With ``confine``, rg reads only what it allows
    where the kernel enforces that (the result says whether it did: ``confined``).
    """
    parser = OutputParser(mode, limit, with_mtimes, on_path)
    for arg in args:
        check_argument(arg, "search pattern or glob")
    executor = None if confine is None else confined_executor(confine, rg)
    refused = False
    try:
        streamed, directories = await race_cancel(
            _streamed([rg, *args], cwd, parser, timeout, executor, alongside), cancel
        )
    except PermissionError:
        if executor is None:
            raise
        # A thread of the confiner could not be restricted (the rg or the walk beside it was
        # refused): whatever the other one parsed meanwhile is dropped, and rg runs as before.
        streamed, directories, refused = Streamed(LOADER_FAILED, b""), None, True
    if streamed.timed_out:
        raise ToolError(
            f"Search timed out after {timeout:.0f}s. Use a more specific path or pattern.",
            {"timed_out": True}, code="search_timed_out",
        )
    stderr, returncode = streamed.stderr, streamed.returncode
    result = parser.result
    result.stopped_early, result.confined = streamed.stopped, executor is not None
    result.directories = directories or []  # the walk's, when there was one
    if result.confined and returncode == LOADER_FAILED and (refused or not parser.count()):
        unconfinable(rg)  # its loader wanted a file it was not allowed: run it as before
        return await run_rg(rg, args, cwd=cwd, mode=mode, limit=limit, cancel=cancel, timeout=timeout,
                            with_mtimes=with_mtimes, on_path=on_path, alongside=alongside)  # fmt: skip
    if streamed.stopped:
        return result
    parser.feed(b"\0" if parser.mode == "files" and parser.buffer else b"")  # the last record
    if returncode == 2:
        if not parser.count() and stderr.strip():
            message = _rg_message(stderr, args)
            if message.startswith("invalid"):
                raise ToolError(message[0].upper() + message[1:], code="invalid_regex")
            raise ToolError(f"rg: {message}", code="search_failed")
        result.partial = True
    elif returncode not in (0, 1):
        raise ToolError(
            f"ripgrep failed with exit code {returncode}: {_rg_message(stderr, args)}",
            code="search_failed",
        )
    return result


async def _streamed(
    argv: list[str],
    cwd: Path,
    parser: OutputParser,
    timeout: float,
    executor: Executor | None,
    alongside: Callable[[], list[str]] | None,
) -> tuple[Streamed, list[str] | None]:
    """rg run to its end on a thread of ``executor`` (the default pool when None), and the
    ``alongside`` work on another of its threads at the same time (rg's start-up, mostly spent
    outside Python, overlaps it). Cancelled, rg is killed, and both are let finish (bounded)
    before the cancellation goes on."""
    loop = asyncio.get_running_loop()
    control = StreamControl()
    run = functools.partial(
        run_streaming, argv, cwd=cwd, stdin=_devnull(), consume=parser.feed, control=control, timeout_s=timeout,
        max_stderr=MAX_STDERR_BYTES,
    )  # fmt: skip
    running = loop.run_in_executor(executor, run)
    work: list[asyncio.Future[Any]] = [running]
    if alongside is not None:
        work.append(loop.run_in_executor(executor, alongside))
    gathered = asyncio.gather(*work)
    gathered.add_done_callback(_retrieved)  # cancelled below, it ends with nobody awaiting it
    try:
        done = await asyncio.shield(gathered)
    except asyncio.CancelledError:
        control.stop()
        await _settled(work, loop.time() + REAP_TIMEOUT_S)
        raise
    except BaseException:
        control.stop()  # the walk failed: rg is not needed any more
        await asyncio.gather(*work, return_exceptions=True)
        raise
    return done[0], done[1] if alongside is not None else None


def _retrieved(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


async def _settled(work: list[asyncio.Future[Any]], deadline: float) -> None:
    """Wait (until ``deadline``, loop time) for ``work`` to end after rg was told to stop: a
    caller that cancels again meanwhile (the MCP SDK does at every await of a cancelled call)
    does not cut the wait short, so rg is reaped before the cancellation goes on."""
    loop = asyncio.get_running_loop()
    while (left := deadline - loop.time()) > 0 and not all(f.done() for f in work):
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait(work, timeout=left)


@functools.cache
def _devnull() -> int:
    """rg's stdin: one descriptor for the process's life, opened on the caller's side (a
    confined thread may not open it)."""
    return os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)


def _rg_message(stderr: bytes, args: list[str]) -> str:
    """rg's complaint in the model's terms. A regex error names the user's pattern, not rg's
    internal ``(?:…)`` wrapping of it, and says how to search for the text as written."""
    text = stderr.decode("utf-8", "replace").strip()
    if "regex parse error" in text and "-e" in args:
        pattern = args[args.index("-e") + 1]
        reason = next((line[len("error:") :].strip() for line in reversed(text.splitlines())
                       if line.startswith("error:")), "it does not parse")  # fmt: skip
        return (
            f"invalid regular expression {quote_input(pattern)!r}: {reason}. Escape special characters"
            f"{set_flag('grep', 'literal_text', ' to search for the text as written')}."
        )
    return quote_input(text)


# --- the high-level operations the tools use ------------------------------------------------


def _file_args(query: FileQuery) -> list[str]:
    args = ["--files", "--null", "--hidden", "--no-require-git", "--no-messages"]
    for glob in (*ALWAYS_EXCLUDED, *query.globs):
        args += ["--glob", glob]
    threads = listing_threads()
    if query.max_depth is not None:
        args += ["--max-depth", str(query.max_depth)]
        if query.max_depth <= SINGLE_THREAD_MAX_DEPTH:
            threads = 1
    args.append(f"--threads={threads}")
    return [*args, "--", str(query.root)]


@functools.cache
def listing_threads() -> int:
    """rg's threads for a listing: one fewer than the CPUs this process may run on (at most rg's
    own default's cap), so the thread that parses rg's output and stats each path (newest first)
    has a core of its own. On two CPUs that is one thread, which lists the standard library as
    fast as two (8.0 against 9.4 ms) on half the CPU (7.6 against 10.4 ms)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(min(cpus - 1, RG_MAX_THREADS), 1)


def _search_args(query: SearchQuery) -> list[str]:
    args = ["-H", "--no-messages", "--null", "--hidden", "--no-require-git", "--color=never"]
    if query.mode == "files_with_matches":
        args.append("--files-with-matches")
    elif query.mode == "count":
        args.append("--count")
    else:
        args += ["-n", "--no-heading", "--field-match-separator=|"]
        if query.before or query.after:
            # Context lines carry "-" after the number; rg merges overlapping ranges itself,
            # and the caller marks the gaps, so rg's "--" lines (which have no path) are off.
            args += ["--field-context-separator=-", "--no-context-separator"]
            args += ["--before-context", str(query.before), "--after-context", str(query.after)]
    for glob in ALWAYS_EXCLUDED:
        args += ["--glob", glob]
    if query.include:
        args += ["--glob", query.include]
    if query.file_type:
        args += ["--type", query.file_type]
    if query.literal:
        args.append("--fixed-strings")
    if query.case_insensitive:
        args.append("--ignore-case")
    if query.multiline:
        args += ["--multiline", "--multiline-dotall"]
    if query.files:  # a page's few files: rg's thread pool would cost more than it saves
        args.append("--threads=1")
    return [*args, "-e", query.pattern, "--", *(query.files or [str(query.root)])]


def _parser_mode(query: SearchQuery) -> str:
    return {"files_with_matches": "files", "count": "count"}.get(query.mode, "search")


async def list_files(query: FileQuery, *, rg: str | None, limit: int, cancel: CancelToken) -> SearchResult:
    """The files, and with ``query.with_directories`` the directories shown within its depth
    (found by a walk made on rg's thread while rg runs, confined as rg is). A one-level listing
    is answered without rg when its rules are known exactly (shallow.py)."""
    if query.with_directories and query.max_depth == 1:
        shallow = await _list_shallow(query, rg, limit, cancel)
        if shallow is not None:
            return shallow
    store = query.witnesses() if query.with_directories and query.witnesses is not None else None
    walk = functools.partial(_walk, query, store, cancel) if query.with_directories else None
    if rg is None:
        from . import fallback

        result = fallback.list_files(query, limit=limit, cancel=cancel)
        result.directories = walk() if walk is not None else []
        return result
    return await run_rg(
        rg, _file_args(query), cwd=query.root, mode="files", limit=limit, cancel=cancel,
        with_mtimes=query.with_mtimes, confine=_confinement(rg, query.readable, query.root), alongside=walk,
    )  # fmt: skip


async def _list_shallow(query: FileQuery, rg: str | None, limit: int, cancel: CancelToken) -> SearchResult | None:
    """shallow.py's listing: on this thread when every subdirectory has its proof, else on a
    thread confined as rg would be (where the looks it makes read only the readable roots);
    None when rg must answer."""
    rules = shallow_rules(query)
    if rules is None:
        return None
    try:
        return list_shallow(query, rules, cancel, limit=limit, look=False)
    except NeedsLook:
        pass
    except (InexactRules, OSError):
        return None
    confine = _confinement(rg, query.readable, query.root) if rg is not None else None
    executor = confined_executor(confine, rg) if confine is not None and rg is not None else None

    store = query.witnesses() if query.witnesses is not None else None  # made here: a confined thread may not

    def look() -> SearchResult:
        root = str(query.root)
        if store is not None:
            load_witnesses(store, root)
        result = list_shallow(query, rules, cancel, limit=limit, look=True)
        if store is not None:
            save_witnesses(store, root)
        return result

    try:
        result = await race_cancel(asyncio.get_running_loop().run_in_executor(executor, look), cancel)
    except (InexactRules, OSError):  # PermissionError too: the thread could not be confined
        return None
    result.confined = executor is not None  # unconfined looks: the caller checks what they found
    return result


def _walk(query: FileQuery, store: Path | None, cancel: CancelToken) -> list[str]:
    """The directories a depth-limited listing shows, with the witnesses kept across processes
    in ``store``."""
    root = str(query.root)
    if store is not None:
        load_witnesses(store, root)
    shown = shown_directories(query, cancel)
    if store is not None:
        save_witnesses(store, root)
    return shown


def _confinement(rg: str, readable: tuple[Path, ...] | ReadableRoots, searched: Path) -> ReadConfinement | None:
    roots = all_readable(readable)
    return confinement_for(rg, roots, searched) if roots else None


async def search(
    query: SearchQuery,
    *,
    rg: str | None,
    limit: int,
    cancel: CancelToken,
    on_path: Callable[[str], None] | None = None,
) -> SearchResult:
    """Run the search. ``on_path`` is called with each matching file's path as rg reports it (in
    content mode, through rg), so the caller can start on the files while rg still searches."""
    if rg is None:
        from . import fallback

        return fallback.search(query, limit=limit, cancel=cancel)
    cwd = query.root if query.root.is_dir() else query.root.parent
    try:
        mode = _parser_mode(query)
        args = _search_args(query)
        return await run_rg(
            rg, args, cwd=cwd, mode=mode, limit=limit, cancel=cancel, with_mtimes=True, on_path=on_path,
            confine=_confinement(rg, query.readable, query.root),
        )  # fmt: skip
    except ToolError as exc:
        if query.file_type and "unrecognized file type" in exc.message:
            raise await unknown_type_error(rg, query.file_type) from None
        raise


#: How long ``rg --type-list`` may take (it prints a built-in table at once).
TYPE_LIST_TIMEOUT_S = 10.0


async def file_types(rg: str) -> list[str]:
    """The file type names this rg knows (``rg --type-list``)."""

    def list_types() -> str:
        done = subprocess.run([rg, "--type-list"], capture_output=True, timeout=TYPE_LIST_TIMEOUT_S, check=False)
        return done.stdout.decode("utf-8", "replace")

    listing = await asyncio.to_thread(list_types)
    return [line.split(":", 1)[0] for line in listing.splitlines() if ":" in line]


async def unknown_type_error(rg: str, name: str) -> ToolError:
    """The error for a file type rg does not know, naming the close ones."""
    try:
        known = await file_types(rg)
    except (OSError, subprocess.SubprocessError):
        known = []
    close = difflib.get_close_matches(name.lower(), known, n=5, cutoff=0.5)
    close += [t for t in known if t.startswith(name.lower()[:2]) and t not in close][: max(0, 5 - len(close))]
    hint = f" Close ones: {', '.join(close)}." if close else ""
    return ToolError(
        f"Unknown file type {quote_input(name)!r}.{hint} Types are ripgrep's names (e.g. py, ts, rust, md); "
        'use include with a glob (e.g. "*.ext") for anything else.',
        {"close_types": close}, code="unknown_type",
    )


StatCache = dict[str, float]


def newest_first(paths: list[str], known: StatCache | None = None) -> list[str]:
    """Sort by modification time, newest first, ties by path; one stat per path not in ``known``."""
    mtimes: StatCache = known if known is not None else {}
    missing = [path for path in paths if path not in mtimes]
    if missing:  # ``known`` is the caller's: added to a copy
        mtimes = {**mtimes, **{path: mtime(path) for path in missing}}
    ordered = sorted(paths)
    ordered.sort(key=mtimes.__getitem__, reverse=True)  # stable: equal times stay in path order
    return ordered
