"""glob: find files by name pattern, most recently modified first."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from ...fsutil.anchored import names_inside
from ...fsutil.paths import require_directory
from ...fsutil.printable import printable
from ...ripgrep import FileQuery, find_rg, list_files, newest_first
from ...vocabulary import tool_name
from .context import PathServices
from .contract import Tool, ToolResponse
from .params import param

#: Files listed to the model.
MAX_FILES_SHOWN = 100
#: Files collected (each stat-ed, ~1.5 µs) for sorting by age before enumeration is stopped. A
#: pattern matching more is too broad to rank usefully; the note says the listing is partial.
MAX_FILES_COLLECTED = 10_000

DESCRIPTION = f"""Finds files whose path matches a glob pattern, most recently modified first.

- `pattern`: e.g. `**/*.py`, `*.md` (a pattern without `/` matches file names at any depth),
  `src/**/*.{{ts,tsx}}` (a pattern with `/` matches from the search directory).
- `path`: the directory to search (default: the workspace root); it must be a directory.
- Respects .gitignore; includes hidden files; never lists .git.
- Returns absolute paths, newest first (ties by path), at most {MAX_FILES_SHOWN}.
- Use grep to search file contents. When you are doing an open-ended search that may need several
  rounds of globbing and grepping, batch speculative searches in a single response.
"""


@dataclass(frozen=True)
class GlobParams:
    pattern: str = param("The glob pattern to match files against", minLength=1)
    path: str | None = param("The directory to search (default: the workspace root)", None)


class GlobTool(Tool):
    name = "glob"
    title = "Find files by name"
    description = DESCRIPTION
    Params = GlobParams
    read_only = True

    async def run(self, params: GlobParams, ctx: PathServices) -> ToolResponse:
        root = require_directory(ctx.resolve(params.path or "."), f"Give {tool_name('glob')} a directory to search in.")
        approved = await ctx.require_read_permission(self.name, root)
        rg = find_rg(ctx.config.rg_path)
        roots = ctx.read_roots(approved)
        query = FileQuery(root, globs=(params.pattern,), with_mtimes=True, readable=tuple(roots))
        result = await list_files(query, rg=rg, limit=MAX_FILES_COLLECTED, cancel=ctx.cancel)
        if not result.confined:  # a listing made by name may have wandered outside: check it
            result.files = await asyncio.to_thread(names_inside, result.files, roots, root, approved)
        files = newest_first(result.files, result.mtimes)
        shown = files[:MAX_FILES_SHOWN]
        truncated = len(files) > len(shown) or result.stopped_early
        metadata = {
            "count": len(files),
            "count_is_lower_bound": result.stopped_early,
            "truncated": truncated,
            "backend": "rg" if rg else "python",
        }
        if not files:
            return ToolResponse("No files found", metadata=metadata)
        text = "\n".join(printable(p) for p in shown)
        if truncated:
            text += (
                f"\n\n(Results are truncated: showing the {len(shown)} most recently modified of "
                f"{'at least ' if result.stopped_early else ''}{len(files)} files. "
                "Consider using a more specific path or pattern.)"
            )
        return ToolResponse(text, metadata=metadata)


TOOL = GlobTool()
