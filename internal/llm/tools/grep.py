"""grep: regex search over file contents with ripgrep, grouped by file, newest files first."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path

from ...fsutil.anchored import read_anchored
from ...fsutil.paths import is_within, not_found_error
from ...ripgrep import SearchQuery, display, find_rg, newest_first, search
from ...ripgrep.query import Match
from ...truncate import shorten_line
from .params import param
from .tools import Tool, ToolContext, ToolResponse

#: Matches shown to the model.
MAX_MATCHES_SHOWN = 100
#: Matches collected (to sort by file age and count honestly) before rg is stopped.
MAX_MATCHES_COLLECTED = 10_000
#: Matched lines are cut here.
MAX_LINE_CHARS = 500

DESCRIPTION = f"""Searches file contents with a regular expression (ripgrep syntax) and lists matching lines.

- `pattern`: a regex such as `log.*Error` or `def \\w+\\(`; set `literal_text` to true to search for
  the exact text instead (no need to escape `(`, `.`, `*`...).
- `path`: a directory (default: the workspace root) or a single file.
- `include`: a glob to restrict the files searched, e.g. `*.py` or `*.{{ts,tsx}}`.
- Respects .gitignore; searches hidden files; never searches .git.
- Results are grouped by file, files with the most recently modified first, lines in file order,
  with absolute paths and 1-based line numbers. At most {MAX_MATCHES_SHOWN} matches are shown; lines are
  cut at {MAX_LINE_CHARS} characters.
- If you need to identify or count the number of matches within files, use the bash tool with `rg`
  directly (e.g. `rg -c pattern`).
- Use glob to find files by name. When a search may take several rounds, batch speculative grep and
  glob calls in one response.
"""


@dataclass(frozen=True)
class GrepParams:
    pattern: str = param("The regex pattern (or literal text) to search for", minLength=1)
    path: str | None = param("The directory or file to search (default: the workspace root)", None)
    include: str | None = param('Glob of files to search, e.g. "*.py" or "*.{ts,tsx}"', None)
    literal_text: bool = param("Treat pattern as literal text rather than a regex", False)


class GrepTool(Tool):
    name = "grep"
    title = "Search file contents"
    description = DESCRIPTION
    Params = GrepParams
    read_only = True

    async def run(self, params: GrepParams, ctx: ToolContext) -> ToolResponse:
        root = ctx.resolve(params.path or ".")
        approved = await ctx.require_read_permission(self.name, root)
        if not root.exists():
            raise not_found_error(root)
        rg = find_rg(ctx.config.rg_path)
        query = SearchQuery(root, params.pattern, params.literal_text, params.include)
        result = await search(query, rg=rg, limit=MAX_MATCHES_COLLECTED, cancel=ctx.cancel)
        result.matches = await asyncio.to_thread(
            verified_matches, result.matches, root, approved, ctx.read_roots(approved)
        )
        metadata = {
            "matches": len(result.matches),
            "count_is_lower_bound": result.stopped_early,
            "partial": result.partial,
            "backend": "rg" if rg else "python",
        }
        if not result.matches:
            text = "No matches found"
            if result.partial:
                text += "\n(Some paths were inaccessible and skipped)"
            return ToolResponse(text, metadata=metadata)
        order = {path: i for i, path in enumerate(newest_first(list({m.path: None for m in result.matches})))}
        ordered = sorted(result.matches, key=lambda m: (order[m.path], m.line))
        shown = ordered[:MAX_MATCHES_SHOWN]
        total = len(result.matches)
        lines = [f"Found {total}{'+' if result.stopped_early else ''} {'match' if total == 1 else 'matches'}"]
        for path, group in groupby(shown, key=lambda m: m.path):
            lines.append(f"\n{display(path)}:")
            lines += [f"  Line {m.line}: {shorten_line(m.text, MAX_LINE_CHARS)}" for m in group]
        if total > len(shown):
            of = f"at least {total}" if result.stopped_early else str(total)
            lines.append(
                f"\n(Results truncated: showing {len(shown)} of {of} matches. "
                "Consider using a more specific path or pattern.)"
            )
        if result.partial:
            lines.append("\n(Some paths were inaccessible and skipped)")
        metadata["truncated"] = total > len(shown)
        return ToolResponse("\n".join(lines), metadata=metadata)


def verified_matches(matches: list[Match], root: Path, real_root: Path, roots: list[Path]) -> list[Match]:
    """Only the matches whose line is in the file reached without following a symlink.

    The search process follows paths by name: a directory swapped for a symlink mid-search
    could make it read a file outside. Each matched file is read again through the anchored,
    no-follow walk from its root; a line not found there (the search read something else) is
    dropped — so nothing of an outside file is ever shown.
    """
    contents: dict[str, tuple[str, str] | None] = {}
    kept = []
    for match in matches:
        if match.path not in contents:
            real = Path(match.path)
            if real_root != root and is_within(real, root):
                real = real_root / real.relative_to(root)
            data = read_anchored(real, roots)
            contents[match.path] = (
                None
                if data is None
                else (data.decode("utf-8", "surrogateescape"), data.decode("utf-8", "replace").replace("\ufffd", ""))
            )
        found = contents[match.path]
        line = match.text.rstrip("\r\n")
        if found is not None and (line in found[0] or line.replace("\ufffd", "") in found[1]):
            kept.append(match)
    return kept


TOOL = GrepTool()
