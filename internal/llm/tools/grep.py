"""grep: regex search over file contents with ripgrep: matching lines (with context), matching
files, or per-file counts, newest files first, paged with head_limit/offset."""

from __future__ import annotations

import asyncio
import dataclasses
from collections import defaultdict
from dataclasses import dataclass
from itertools import chain, groupby
from operator import itemgetter
from pathlib import Path
from queue import SimpleQueue
from typing import Any, Literal

from ...errors import ToolError
from ...fsutil.paths import require_file_or_directory
from ...fsutil.printable import printable
from ...ripgrep import Match, SearchQuery, SearchResult, confinable, find_rg, newest_first, search
from ...ripgrep.checked import AnchoredReader, Content, verify_result
from ...truncate import shorten_line
from .context import PathServices
from .contract import Tool, ToolResponse
from .params import param

#: Entries (matching lines, files or counts) shown per call unless head_limit says otherwise.
DEFAULT_HEAD_LIMIT = 100
#: The most entries one call may ask for; the output byte cap may show fewer.
MAX_HEAD_LIMIT = 1000
#: Matching lines (or files, in the other modes) collected — to sort by file age, count honestly
#: and page — before rg is stopped. Past it the count is a lower bound.
MAX_MATCHES_COLLECTED = 10_000
#: Context lines before/after a match are capped here.
MAX_CONTEXT_LINES = 20
#: Matched and context lines are cut here.
MAX_LINE_CHARS = 500
#: Room kept out of the output cap for the summary line and the paging note.
FRAME_BYTES = 400

DESCRIPTION = f"""Searches file contents with a regular expression (ripgrep syntax).

- `pattern`: a regex such as `log.*Error` or `def \\w+\\(`; set `literal_text` to true to search for
  the exact text instead (no need to escape `(`, `.`, `*`...).
- `path`: a directory (default: the workspace root) or a single file.
- `include`: a glob to restrict the files searched, e.g. `*.py` or `*.{{ts,tsx}}`; `type`: a ripgrep
  file type instead, e.g. `py`, `ts`, `rust`, `md` (an unknown type gets an error naming close ones).
- `case_insensitive`: match regardless of case. `multiline`: let a pattern span lines (`.` matches a
  newline too), e.g. `struct Foo \\{{.*?\\}}`; every line of such a match is shown as a match.
- `output_mode`:
  - `content` (default): matching lines grouped by file, as `  Line 12: text`. With `context` (or
    `before`/`after`, at most {MAX_CONTEXT_LINES}) lines around each match are shown as `  Line 11- text`
    (a dash, not a colon); overlapping ranges are merged and a gap between ranges is a `  --` line.
  - `files_with_matches`: only the paths of files that match.
  - `count`: matching lines per file (as `rg -c`), `path: N`.
- Respects .gitignore; searches hidden files; never searches .git. Paths are absolute; line numbers
  are 1-based. Files are listed most recently modified first (ties by path), lines in file order.
- Paging: `head_limit` entries (matching lines, files or counts; default {DEFAULT_HEAD_LIMIT}, at most
  {MAX_HEAD_LIMIT}) starting at `offset` (default 0). The same call gives the same order, so pages never
  overlap; when more remain the output ends with "showing N–M of K; use offset=M to continue".
  At most {MAX_MATCHES_COLLECTED} matches are collected: past that the count is a lower bound and
  you should narrow the search. Lines are cut at {MAX_LINE_CHARS} characters.
- To count matches use output_mode `count` (not `rg -c` through bash); to list matching files use
  `files_with_matches` (not `rg -l`). Use glob to find files by name and view (or read_many for
  several files) to read what you found. When a search may take several rounds, batch speculative
  grep and glob calls in one response.
"""

OutputMode = Literal["content", "files_with_matches", "count"]


@dataclass(frozen=True)
class GrepParams:
    pattern: str = param("The regex pattern (or literal text) to search for", minLength=1)
    path: str | None = param("The directory or file to search (default: the workspace root)", None)
    include: str | None = param('Glob of files to search, e.g. "*.py" or "*.{ts,tsx}"', None)
    literal_text: bool = param("Treat pattern as literal text rather than a regex", False)
    output_mode: OutputMode = param(
        "content: matching lines; files_with_matches: paths only; count: matching lines per file", "content"
    )
    context: int | None = param(
        "Lines of context before and after each match (content mode)", None, minimum=0, maximum=MAX_CONTEXT_LINES
    )
    before: int | None = param(
        "Lines of context before each match (overrides context)", None, minimum=0, maximum=MAX_CONTEXT_LINES
    )
    after: int | None = param(
        "Lines of context after each match (overrides context)", None, minimum=0, maximum=MAX_CONTEXT_LINES
    )
    case_insensitive: bool = param("Match regardless of case", False)
    type: str | None = param('A ripgrep file type to search, e.g. "py", "ts", "rust"', None, minLength=1)
    multiline: bool = param("Let the pattern span lines; '.' also matches a newline", False)
    head_limit: int | None = param(
        f"How many entries to show (default {DEFAULT_HEAD_LIMIT})", None, minimum=1, maximum=MAX_HEAD_LIMIT
    )
    offset: int = param("How many entries to skip, to page through results", 0, minimum=0)


class GrepTool(Tool):
    name = "grep"
    title = "Search file contents"
    description = DESCRIPTION
    Params = GrepParams
    read_only = True

    async def run(self, params: GrepParams, ctx: PathServices) -> ToolResponse:
        root = ctx.resolve(params.path or ".")
        approved = await ctx.require_read_permission(self.name, root)
        require_file_or_directory(root, "grep searches regular files and directories only.")
        rg = find_rg(ctx.config.rg_path)
        context = params.context or 0
        query = SearchQuery(
            root,
            params.pattern,
            params.literal_text,
            params.include,
            mode=params.output_mode,
            case_insensitive=params.case_insensitive,
            file_type=params.type,
            multiline=params.multiline,
            before=context if params.before is None else params.before,
            after=context if params.after is None else params.after,
            readable=tuple(roots := ctx.read_roots(approved)),
        )
        # With context, rg first finds the matches alone, then the context of the page's files only:
        # the context of every match is mostly lines no page shows (rg -C2 prints ~5 lines a match).
        context_later = rg is not None and params.output_mode == "content" and bool(query.before or query.after)
        first = dataclasses.replace(query, before=0, after=0) if context_later else query
        result = await _search_checked(first, rg, ctx, root, approved, roots)
        page = _Page(params.offset, params.head_limit or DEFAULT_HEAD_LIMIT, ctx.config.max_output_bytes - FRAME_BYTES)
        ordered = _ordered_matches(result) if params.output_mode == "content" else []
        if context_later and rg is not None:
            await _add_page_context(result, ordered, query, page, rg, ctx, root, approved, roots)
        if params.output_mode == "content":
            body, total = _render_content(result, ordered, query, page)
        elif params.output_mode == "files_with_matches":
            body, total = _render_files(result, page)
        else:
            body, total = _render_counts(result, page)
        metadata: dict[str, Any] = {
            "mode": params.output_mode,
            "matches" if params.output_mode == "content" else "files": total,
            "count_is_lower_bound": result.stopped_early,
            "partial": result.partial,
            "backend": "rg" if rg else "python",
            "offset": params.offset,
            "shown": page.shown,
            "truncated": params.offset + page.shown < total or result.stopped_early,
        }
        if total == 0:
            return ToolResponse(_with_partial_note("No matches found", result), metadata=metadata)
        if params.offset >= total:
            raise ToolError(
                f"offset {params.offset} is past the end of the results ({total} entries). "
                f"Use an offset below {total}.",
                metadata, code="offset_out_of_range",
            )
        text = body + _paging_note(page, total, result.stopped_early)
        return ToolResponse(_with_partial_note(text, result), metadata=metadata)


async def _search_checked(
    query: SearchQuery, rg: str | None, ctx: PathServices, root: Path, real_root: Path, roots: list[Path]
) -> SearchResult:
    """The search, with what it found checked where rg could not be confined."""
    if query.mode == "content" and not (rg and confinable(rg)):
        result, contents = await _search_and_read(query, rg, ctx, root, real_root, roots)
    else:
        result, contents = await search(query, rg=rg, limit=MAX_MATCHES_COLLECTED, cancel=ctx.cancel), {}
    if not result.confined:  # rg could have read through a symlink swapped in: check
        await asyncio.to_thread(verify_result, result, root, real_root, roots, contents)
    return result


async def _add_page_context(
    result: SearchResult,
    ordered: list[Match],
    query: SearchQuery,
    page: _Page,
    rg: str,
    ctx: PathServices,
    root: Path,
    real_root: Path,
    roots: list[Path],
) -> None:
    """The context lines around the page's matches, added to ``result`` as context (the matches
    themselves stay those of the first search): read from the page's files themselves, through
    the no-follow walk; where a file is one rg reads otherwise (a byte-order mark, a NUL), from
    rg run again on those files alone."""
    selected = ordered[page.offset : page.offset + page.limit]
    if not selected:
        return
    read = await asyncio.to_thread(_context_read, selected, query, root, real_root, roots)
    if read is not None:
        result.matches.extend(read)
        return
    files = tuple(dict.fromkeys(m.path for m in selected))
    # Paths as rg printed them go back as arguments unchanged (undecodable bytes round-trip).
    around = await _search_checked(dataclasses.replace(query, files=files), rg, ctx, root, real_root, roots)
    result.matches.extend(m._replace(context=True) for m in around.matches)


#: Files that open with one of these are transcoded by rg (BOM sniffing): their lines come from rg.
_BYTE_ORDER_MARKS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")


def _context_read(
    selected: list[Match], query: SearchQuery, root: Path, real_root: Path, roots: list[Path]
) -> list[Match] | None:
    """The lines within the context window of each of ``selected``, as rg would print them (split
    at LF, a CR before it dropped, decoded as the parser decodes); None when a file cannot be
    read that way or is one rg reads otherwise."""
    out: list[Match] = []
    with AnchoredReader(roots, root, real_root) as reader:
        for path, group in groupby(selected, key=lambda m: m.path):
            data = reader.raw(path)
            if data is None or data.startswith(_BYTE_ORDER_MARKS) or b"\0" in data:
                return None
            matches = list(group)
            last = max(m.line for m in matches) + query.after  # no line past it is needed
            lines = data.split(b"\n", last)
            if len(lines) > last:
                lines.pop()  # the rest of the file, unsplit
            elif data.endswith(b"\n"):
                lines.pop()  # the empty piece after the last LF is no line
            wanted: set[int] = set()
            for match in matches:
                wanted.update(range(max(1, match.line - query.before), min(len(lines), match.line + query.after) + 1))
            for number in sorted(wanted):
                text = lines[number - 1]
                text = text[:-1] if text.endswith(b"\r") else text
                out.append(Match(path, number, text.decode("utf-8", "replace"), True))
    return out


async def _search_and_read(
    query: SearchQuery, rg: str | None, ctx: PathServices, root: Path, real_root: Path, roots: list[Path]
) -> tuple[SearchResult, dict[str, Content]]:
    """The search, and the verifying read of each matched file made in a worker thread as rg
    reports the file (rg has read it by then), so the reads overlap the search."""
    paths: SimpleQueue[str | None] = SimpleQueue()
    reading = asyncio.ensure_future(asyncio.to_thread(_read_matched, paths, root, real_root, roots))
    try:
        result = await search(query, rg=rg, limit=MAX_MATCHES_COLLECTED, cancel=ctx.cancel, on_path=paths.put)
    finally:
        paths.put(None)  # the reader stops at this, whatever happened to the search
        contents = await asyncio.shield(reading)
    return result, contents


def _read_matched(
    paths: SimpleQueue[str | None], root: Path, real_root: Path, roots: list[Path]
) -> dict[str, Content]:
    contents: dict[str, Content] = {}
    with AnchoredReader(roots, root, real_root) as reader:
        while (path := paths.get()) is not None:
            if path not in contents:
                contents[path] = reader.content(path)
    return contents


@dataclass
class _Page:
    """Which entries to show, and the bytes left to show them in."""

    offset: int
    limit: int
    budget: int
    shown: int = 0

    def fits(self, text: str) -> bool:
        size = len(text.encode("utf-8", "surrogatepass")) + 1
        if size > self.budget:
            return False
        self.budget -= size
        return True


def _paging_note(page: _Page, total: int, lower_bound: bool) -> str:
    end = page.offset + page.shown
    of = f"at least {total}" if lower_bound else str(total)
    if end < total:
        return f"\n\n(Showing {page.offset + 1}–{end} of {of}; use offset={end} to continue.)"
    if page.offset > 0:
        return f"\n\n(Showing {page.offset + 1}–{end} of {of}; this is the last page.)"
    if lower_bound:
        return f"\n\n(Showing {page.offset + 1}–{end} of {of}: the search stopped early; narrow the path or pattern.)"
    return ""


def _with_partial_note(text: str, result: SearchResult) -> str:
    return text + "\n\n(Some paths were inaccessible and skipped)" if result.partial else text


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _render_content(result: SearchResult, ordered: list[Match], query: SearchQuery, page: _Page) -> tuple[str, int]:
    """Matching lines of the page (``ordered``: every match in page order, :func:`_ordered_matches`),
    grouped by file, with their context merged around them.

    A line that matches but falls outside this page's matches is shown as context here (it is a
    match on its own page), so pages never show the same match twice.
    """
    total = len(ordered)
    plus = "+" if result.stopped_early else ""
    out = [f"Found {total}{plus} {'match' if total == 1 else 'matches'}"]
    selected = ordered[page.offset : page.offset + page.limit]
    shown_files = {m.path for m in selected}
    lines_of: dict[str, dict[int, str]] = defaultdict(dict)
    for record in result.matches:
        if record.path in shown_files:
            lines_of[record.path][record.line] = record.text
    for path, group in groupby(selected, key=lambda m: m.path):
        header = f"\n{printable(path)}:"
        if not page.fits(header):
            break
        out.append(header)
        if not _render_file_lines(out, list(group), lines_of[path], query, page):
            break
    return "\n".join(out), total


def _ordered_matches(result: SearchResult) -> list[Match]:
    """The matches (not context) in page order: files newest first, lines in order."""
    by_file: dict[str, list[Match]] = {}
    for path, records in groupby(result.matches, key=_path_of):  # rg prints a file's lines together
        lines = [m for m in records if not m.context]
        if lines:
            known = by_file.setdefault(path, lines)
            if known is not lines:  # the file came back (a fallback's order): one list per file
                known += lines
    for lines in by_file.values():
        if len(lines) > 1:
            lines.sort(key=_line_number)  # in order already from rg: one pass
    return list(chain.from_iterable(map(by_file.__getitem__, newest_first(list(by_file), result.mtimes))))


_path_of = itemgetter(0)
_line_number = itemgetter(1)


def _render_file_lines(
    out: list[str], group: list[Match], lines: dict[int, str], query: SearchQuery, page: _Page
) -> bool:
    """Append one file's page matches and their context; False once the byte budget is spent."""
    wanted = {m.line for m in group}
    shown: set[int] = set(wanted)
    for number in wanted:
        shown.update(n for n in range(number - query.before, number + query.after + 1) if n in lines)
    previous = None
    for number in sorted(shown):
        text = shorten_line(lines[number], MAX_LINE_CHARS)
        rendered = f"  Line {number}: {text}" if number in wanted else f"  Line {number}- {text}"
        if (query.before or query.after) and previous is not None and number != previous + 1:
            rendered = "  --\n" + rendered
        if not page.fits(rendered):
            return False
        out.append(rendered)
        page.shown += number in wanted
        previous = number
    return True


def _render_files(result: SearchResult, page: _Page) -> tuple[str, int]:
    files = newest_first(result.files, result.mtimes)
    out = [f"Found {_plural(len(files), 'file', 'files')}{'+' if result.stopped_early else ''}", ""]
    for path in files[page.offset : page.offset + page.limit]:
        if not page.fits(printable(path)):
            break
        out.append(printable(path))
        page.shown += 1
    return "\n".join(out), len(files)


def _render_counts(result: SearchResult, page: _Page) -> tuple[str, int]:
    files = newest_first(list(result.counts), result.mtimes)
    lines = sum(result.counts.values())
    plus = "+" if result.stopped_early else ""
    found = f"{_plural(lines, 'matching line', 'matching lines')} in {_plural(len(files), 'file', 'files')}{plus}"
    out = [f"Found {found}", ""]
    for path in files[page.offset : page.offset + page.limit]:
        rendered = f"{printable(path)}: {result.counts[path]}"
        if not page.fits(rendered):
            break
        out.append(rendered)
        page.shown += 1
    return "\n".join(out), len(files)


TOOL = GrepTool()
