"""read_many: several files (by path or glob) in one call, each shown as view shows it, bounded in total."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ...errors import Denied, ToolCancelled, ToolError
from ...fsutil.paths import real_path, within_any
from ...fsutil.printable import printable
from ...permission import Decision, PermissionRequest, PermissionService
from ...ripgrep import AUTO_IGNORED, FileQuery, find_rg, list_files
from ...ripgrep.fallback import glob_to_regex
from ...vocabulary import tool_name
from ..pages import DEFAULT_LIMIT, IMAGE_TYPES, show_file
from .context import PathServices
from .contract import ImageAttachment, Tool, ToolResponse
from .params import param

#: Entries in `paths` per call.
MAX_PATHS = 100
#: Files shown per call; more matches are named as left out.
MAX_FILES = 200
#: Files enumerated under a glob's base directory before enumeration stops (then filtered).
MAX_GLOB_ENUMERATED = 50_000
#: A file is not started with less than this much of the output budget left.
MIN_FILE_BYTES = 1024
#: Room kept out of the output cap for the summary and the skipped/left-out notes.
FRAME_BYTES = 2048
#: Shown only when named explicitly, never through a glob (large, and rarely what a glob meant).
NAMED_ONLY_SUFFIXES = frozenset({*IMAGE_TYPES, ".pdf"})
GLOB_CHARS = frozenset("*?[{")
#: Names listed per note (skipped, left out); the rest are counted.
MAX_NAMED = 20

DESCRIPTION = f"""Reads several files in one call: each under a header with its path and line count, numbered
like view (`     1|text`).

- `paths`: files (absolute, or relative to the workspace root), directories (all their files), or
  globs such as `src/**/*.py`, `docs/*.md`, `/abs/dir/*.{{ts,tsx}}`. A glob without `**` matches
  only in its own directory. At most {MAX_PATHS} entries and {MAX_FILES} files per call.
- Files come in the order of `paths`; a glob's files in path order; each file once.
- Globs and directories respect .gitignore and skip noise (.git, node_modules, __pycache__,
  build, dist, .venv, ...); binary files are skipped and named; images and PDFs are shown only
  when named explicitly. Name an ignored file explicitly to read it.
- `limit_per_file`: lines per file (default {DEFAULT_LIMIT}). The whole output is capped like view's
  (50 KiB by default) and shared fairly between files; a file that is cut says which offset to
  pass to view for the rest, and files left out for space are named — read them with view.
- Every file shown counts as read, so edit, multiedit, write or patch may follow directly.
- Use it instead of several view calls when you need a handful of related files (a module and its
  tests, all configs of a kind); use view for one file or to page through a long one, and grep to
  find where something is before reading.
"""


@dataclass(frozen=True)
class ReadManyParams:
    paths: list[str] = param(
        'Files, directories or globs (e.g. "src/**/*.py"), absolute or relative to the workspace root', minItems=1
    )
    limit_per_file: int | None = param(f"Lines shown per file at most (default {DEFAULT_LIMIT})", None, minimum=1)


class _ApprovedReads(PermissionService):
    """view's own read check, already answered by read_many for these roots: one question per
    glob or path outside the workspace, not one per file."""

    def __init__(self, inner: PermissionService, roots: list[Path]) -> None:
        super().__init__()
        self._inner = inner
        self._roots = roots

    async def ask(self, request: PermissionRequest) -> Decision:
        if request.action == "read" and within_any(Path(request.target), self._roots):
            return Decision.ALLOW_ONCE
        return await self._inner.ask(request)


@dataclass
class _Plan:
    files: list[Path] = dataclasses.field(default_factory=list)
    seen: set[Path] = dataclasses.field(default_factory=set)
    approved: list[Path] = dataclasses.field(default_factory=list)
    #: (what, why) for entries and files not read.
    skipped: list[tuple[str, str]] = dataclasses.field(default_factory=list)

    def add(self, path: Path) -> None:
        if path not in self.seen:
            self.seen.add(path)
            self.files.append(path)


class ReadManyTool(Tool):
    name = "read_many"
    title = "Read several files"
    description = DESCRIPTION
    Params = ReadManyParams
    read_only = True

    async def run(self, params: ReadManyParams, ctx: PathServices) -> ToolResponse:
        if len(params.paths) > MAX_PATHS:
            raise ToolError(
                f"Too many paths ({len(params.paths)}): at most {MAX_PATHS} per call. Use globs, or several calls.",
                code="too_many_paths",
            )
        plan = _Plan()
        for entry in params.paths:
            ctx.cancel.raise_if_cancelled()
            await self._plan_entry(entry, plan, ctx)
        left_over = plan.files[MAX_FILES:]
        files = plan.files[:MAX_FILES]
        view_ctx = ctx.variant(lsp=False, permissions=_ApprovedReads(ctx.permissions, plan.approved))
        limit = params.limit_per_file or DEFAULT_LIMIT
        budget = ctx.config.max_output_bytes - FRAME_BYTES
        sections: list[str] = []
        images: list[ImageAttachment] = []
        shown: list[dict[str, Any]] = []
        not_shown: list[Path] = []
        for index, path in enumerate(files):
            ctx.cancel.raise_if_cancelled()
            if budget < MIN_FILE_BYTES:
                not_shown = files[index:]
                break
            share = max(budget // (len(files) - index), MIN_FILE_BYTES)
            section = await _read_one(path, limit, share, view_ctx, plan)
            if section is None:
                continue
            text, response = section
            sections.append(text)
            images += response.images
            budget -= len(text.encode("utf-8", "surrogatepass")) + 2
            shown.append(_file_metadata(path, response))
        metadata: dict[str, Any] = {
            "files": shown,
            "skipped": [{"path": what, "reason": why} for what, why in plan.skipped],
            "not_shown": [str(p) for p in not_shown + left_over],
            "truncated": bool(not_shown or left_over or any(f["truncated"] for f in shown)),
        }
        notes = _notes(plan.skipped, not_shown, left_over)
        if not shown:
            message = "No file was read." + ("\n\n" + notes if notes else "")
            raise ToolError(message, metadata, code="nothing_read")
        summary = f"Read {len(shown)} {'file' if len(shown) == 1 else 'files'}"
        extras = [f"{len(plan.skipped)} skipped"] if plan.skipped else []
        extras += [f"{len(not_shown) + len(left_over)} left out for space"] if not_shown or left_over else []
        summary += f" ({', '.join(extras)})." if extras else "."
        content = "\n\n".join([summary, *sections] + ([notes] if notes else []))
        return ToolResponse(content, metadata=metadata, images=images)

    async def _plan_entry(self, entry: str, plan: _Plan, ctx: PathServices) -> None:
        if not entry.strip():
            plan.skipped.append((repr(entry), "an empty path"))
            return
        literal = ctx.resolve(entry)
        glob = None if literal.exists() else _split_glob(entry)
        if glob is None and not literal.is_dir():
            if await self._approve(literal, entry, plan, ctx):
                plan.add(literal)  # missing or unreadable files are reported by view itself
            return
        base, pattern = (literal, "**/*") if glob is None else (ctx.resolve(glob[0]), glob[1])
        if not base.is_dir():
            plan.skipped.append((entry, f"{base} is not a directory, so the glob matches nothing"))
            return
        if not await self._approve(base, entry, plan, ctx):
            return
        found = await _expand(base, pattern, ctx)
        if not found:
            plan.skipped.append((entry, "no files match (globs leave out .gitignored files and noise such as build/)"))
        for path in found:
            if path.suffix.lower() in NAMED_ONLY_SUFFIXES:
                plan.skipped.append((printable(str(path)), "an image or PDF: name it explicitly to read it"))
            else:
                plan.add(path)

    async def _approve(self, path: Path, entry: str, plan: _Plan, ctx: PathServices) -> bool:
        try:
            await ctx.require_read_permission(self.name, path)
        except Denied as exc:
            plan.skipped.append((entry, exc.message))
            return False
        plan.approved.append(real_path(path))
        return True


def _split_glob(entry: str) -> tuple[str, str] | None:
    """(base directory, pattern from it) when ``entry`` has glob characters, else None."""
    parts = PurePosixPath(entry).parts
    for i, part in enumerate(parts):
        if GLOB_CHARS & set(part):
            base = str(PurePosixPath(*parts[:i])) if i else "."
            pattern = "/".join(parts[i:])
            # rg globs without "/" match at any depth; anchor so "*.py" means this directory only.
            return base, pattern if "/" in pattern else "/" + pattern
    return None


async def _expand(base: Path, pattern: str, ctx: PathServices) -> list[Path]:
    """Files under ``base`` matching ``pattern``, .gitignore and AUTO_IGNORED respected.

    The pattern is applied here, not as an rg ``--glob``: rg lets a positive glob override
    .gitignore, and read_many's globs must not pull in ignored files.
    """
    query = FileQuery(base, globs=tuple(f"!{g}" for g in AUTO_IGNORED))
    result = await list_files(query, rg=find_rg(ctx.config.rg_path), limit=MAX_GLOB_ENUMERATED, cancel=ctx.cancel)
    regex = glob_to_regex(pattern)
    prefix = len(str(base).rstrip("/")) + 1
    return [Path(p) for p in sorted(result.files) if regex.match(p[prefix:])]


async def _read_one(
    path: Path, limit: int, share: int, ctx: PathServices, plan: _Plan
) -> tuple[str, ToolResponse] | None:
    """One file as view shows it (its rendering, read record and refusals), under its header."""
    config = dataclasses.replace(ctx.config, max_output_bytes=share)
    try:
        response = await show_file(ctx.variant(config=config), str(path), 0, limit)
    except ToolCancelled:
        raise
    except ToolError as exc:
        plan.skipped.append((printable(str(path)), exc.message.split("\n", 1)[0]))
        return None
    return f"==> {printable(str(path))} ({_describe(response)}) <==\n{response.content}", response


def _describe(response: ToolResponse) -> str:
    meta = response.metadata
    if meta.get("image"):
        return f"image, {meta['size']} bytes"
    total = meta.get("total_lines")
    if total is None:
        return "shown whole"
    about = "" if meta.get("total_lines_exact", True) else "about "
    text = f"{about}{total} {'line' if total == 1 else 'lines'}"
    if meta.get("truncated"):
        end = meta["offset"] + meta["lines_shown"]
        text += f"; showing 1-{end}, view with offset={end} for the rest"
    return text


def _file_metadata(path: Path, response: ToolResponse) -> dict[str, Any]:
    meta = response.metadata
    return {
        "path": str(path),
        "total_lines": meta.get("total_lines"),
        "lines_shown": meta.get("lines_shown"),
        "truncated": bool(meta.get("truncated")),
    }


def _notes(skipped: list[tuple[str, str]], not_shown: list[Path], left_over: list[Path]) -> str:
    out = []
    if skipped:
        out.append("Skipped:\n" + _bulleted([f"{what}: {why}" for what, why in skipped]))
    if not_shown:
        names = _bulleted([printable(str(p)) for p in not_shown])
        again = f"read them with {tool_name('view')}, or call {tool_name('read_many')} again"
        out.append(f"Left out, the output cap was reached ({again}):\n{names}")
    if left_over:
        first = printable(str(left_over[0]))
        out.append(
            f"{len(left_over)} more files matched past the {MAX_FILES}-file limit (first: {first}); "
            "narrow the globs or call again with the rest."
        )
    return "\n\n".join(out)


def _bulleted(items: list[str]) -> str:
    lines = [f"- {item}" for item in items[:MAX_NAMED]]
    if len(items) > MAX_NAMED:
        lines.append(f"- ... and {len(items) - MAX_NAMED} more")
    return "\n".join(lines)


TOOL = ReadManyTool()
