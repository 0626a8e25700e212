"""outline: the symbols of a file, or a map of a directory's files and their top-level symbols."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...cancel import in_thread
from ...errors import ToolError
from ...fsutil.paths import not_found_error, open_regular_file, os_error_code, os_error_message
from ...fsutil.printable import printable
from ...fsutil.textio import BinaryFileError, UndecodableFileError, decode_bytes
from ...ripgrep import FileQuery, find_rg, list_files
from ...syntax import MAX_PARSE_BYTES, language_for, parse
from ...syntax.languages import LANGUAGE_BY_EXTENSION, OUTLINED_LANGUAGES
from ...syntax.outline import MAX_SYMBOL_DEPTH, SYMBOL_KINDS, Symbol, flatten, outline
from ...syntax.probe import looks_deep
from .context import PathServices
from .contract import Tool, ToolResponse
from .params import param

#: Files outlined in a directory map; more are listed as a count with a hint.
MAX_MAP_FILES = 200
#: Files enumerated before the directory map stops looking.
MAX_FILES_COLLECTED = 10_000
#: Top-level symbols listed per file in a directory map.
MAX_MAP_SYMBOLS_PER_FILE = 25
#: Symbol lines in a file's outline.
MAX_FILE_SYMBOLS = 500
#: Deeply nested files a directory map parses (each in a child process first, ~0.1-0.3 s; see
#: syntax/probe.py); the rest are listed with a pointer to outline them alone.
MAX_MAP_PROBES = 5


DESCRIPTION = f"""Lists the symbols of a source file, or maps a directory: its source files and their
top-level symbols. Read-only; parses with tree-sitter, no language server needed.

- For a file: each symbol's kind, name path (`Greeter.greet` for a method), line range and
  signature line, members indented under their class. The line range includes the decorators and
  doc comments directly above the definition (what symbol_edit replaces).
- For a directory (default: the workspace root): one line per source file with its top-level
  symbols and their lines; .gitignore is respected; at most {MAX_MAP_FILES} files and
  {MAX_MAP_SYMBOLS_PER_FILE} symbols per file (narrow `path` for the rest).
- Languages: {OUTLINED_LANGUAGES}.
- Use it to find where things are before view (with an offset) or symbol_edit; use grep to find
  where a name is used, and lsp for references and definitions across files.
"""


@dataclass(frozen=True)
class OutlineParams:
    path: str | None = param("A file, or a directory to map (default: the workspace root)", None)


class OutlineTool(Tool):
    name = "outline"
    title = "Outline a file or directory"
    description = DESCRIPTION
    Params = OutlineParams
    read_only = True

    async def run(self, params: OutlineParams, ctx: PathServices) -> ToolResponse:
        path = ctx.resolve(params.path or ".")
        approved = await ctx.require_read_permission(self.name, path)
        if path.is_dir():
            return await self._directory(path, ctx)
        if not path.exists():
            raise not_found_error(path)
        allowed = ctx.read_guard(approved)
        symbols, language = await in_thread(lambda _check: file_symbols(path, allowed), ctx.cancel)
        return _file_response(path, ctx.display(path), symbols, language)

    async def _directory(self, root: Path, ctx: PathServices) -> ToolResponse:
        # No --glob filter: rg's globs override .gitignore, so the extensions are filtered here.
        result = await list_files(
            FileQuery(root), rg=find_rg(ctx.config.rg_path), limit=MAX_FILES_COLLECTED, cancel=ctx.cancel
        )
        files = sorted(f for f in result.files if LANGUAGE_BY_EXTENSION.get(Path(f).suffix.lower()) in SYMBOL_KINDS)
        shown = files[:MAX_MAP_FILES]

        def build(check: Callable[[], None]) -> list[str]:
            lines = []
            probes = [MAX_MAP_PROBES]
            for name in shown:
                check()
                lines.append(_map_line(Path(name), root, probes))
            return lines

        lines = await in_thread(build, ctx.cancel)
        metadata: dict[str, Any] = {"path": str(root), "files": len(files), "truncated": len(files) > len(shown)}
        if not files:
            return ToolResponse(f"No source files to outline under {root} ({OUTLINED_LANGUAGES}).", metadata=metadata)
        text = "\n".join(lines)
        if len(files) > len(shown) or result.stopped_early:
            more = f"{'at least ' if result.stopped_early else ''}{len(files)}"
            text += (
                f"\n\n(Showing {len(shown)} of {more} source files, by path. "
                "Give outline a subdirectory as path to map the rest.)"
            )
        return ToolResponse(text, metadata=metadata)


class _DeepNotParsed(Exception):
    """A deeply nested file, not parsed: the directory map's probes are used up."""


def file_symbols(
    path: Path, allowed: Callable[[Path], bool] | None = None, probes: list[int] | None = None
) -> tuple[list[Symbol], str]:
    """The symbols of ``path`` and its grammar; a ToolError the model can act on otherwise.
    ``allowed``: the file actually opened must pass it (see fsutil.paths.open_regular_file).
    ``probes``: how many more deeply nested files may be parsed (one is used here if this is one);
    none left: :class:`_DeepNotParsed`."""
    language = language_for(path)
    if language is None or language not in SYMBOL_KINDS:
        raise ToolError(
            f"outline does not know the language of {printable(path.name)} (it reads {OUTLINED_LANGUAGES} by "
            "extension). Use view or grep instead.",
            code="unsupported_language",
        )
    text = _read_source(path, allowed)
    if probes is not None and looks_deep(text.encode("utf-8", "surrogatepass")):
        if probes[0] <= 0:
            raise _DeepNotParsed
        probes[0] -= 1
    parsed = parse(text, str(path))
    if parsed is None:
        raise ToolError(
            f"{printable(str(path))} is too large to outline (over {MAX_PARSE_BYTES // (1024 * 1024)} MiB) or took "
            "too long to parse. Use grep to find definitions instead.",
            code="too_large",
        )
    return outline(parsed), language


def _read_source(path: Path, allowed: Callable[[Path], bool] | None = None) -> str:
    try:
        fd, st = open_regular_file(path, allowed=allowed)
    except FileNotFoundError:
        raise not_found_error(path) from None
    except OSError as exc:
        raise ToolError(os_error_message(exc, path), code=os_error_code(exc)) from None
    try:
        if st.st_size > MAX_PARSE_BYTES:
            raise ToolError(
                f"{printable(str(path))} is too large to outline ({st.st_size} bytes; the limit is {MAX_PARSE_BYTES}). "
                "Use grep to find definitions instead.",
                code="too_large",
            )
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(MAX_PARSE_BYTES + 1)
    finally:
        os.close(fd)
    try:
        return decode_bytes(data, path=str(path)).text
    except (BinaryFileError, UndecodableFileError) as exc:
        raise ToolError(
            f"{printable(str(path))} is not a text file; there is nothing to outline.",
            code="binary_file",
        ) from exc


def _file_response(path: Path, display: str, symbols: list[Symbol], language: str) -> ToolResponse:
    listed = flatten(symbols)
    depth = _depths(symbols)
    lines = [
        f"{'  ' * depth[id(s)]}{s.kind} {s.path} [{_lines(s)}]: {s.signature}" for s in listed[:MAX_FILE_SYMBOLS]
    ]
    total = len(listed)
    metadata: dict[str, Any] = {
        "file_path": str(path),
        "language": language,
        "symbols": [_symbol_meta(s) for s in listed[:MAX_FILE_SYMBOLS]],
        "truncated": total > len(lines),
    }
    if not symbols:
        return ToolResponse(f"{display} ({language}): no symbols found.", metadata=metadata)
    text = f"{display} ({language}, {total} symbols)\n" + "\n".join(lines)
    if total > len(lines):
        text += f"\n\n(Showing {len(lines)} of {total} symbols. Use view with an offset for the rest of the file.)"
    if any(s.members_cut for s in listed):
        metadata["depth_cut"] = MAX_SYMBOL_DEPTH
        text += f"\n\n({DEPTH_CUT_NOTE})"
    return ToolResponse(text, metadata=metadata)


#: Said when symbols nest deeper than the outline walks (see MAX_SYMBOL_DEPTH).
DEPTH_CUT_NOTE = (
    f"Symbols nest deeper than {MAX_SYMBOL_DEPTH} levels here; the members of those at level {MAX_SYMBOL_DEPTH} are "
    "not listed. Use view or grep for them."
)


def _depths(symbols: list[Symbol]) -> dict[int, int]:
    """Each symbol's nesting level (0 for top-level), by id."""
    depth: dict[int, int] = {}
    stack = [(s, 0) for s in symbols]
    while stack:
        symbol, level = stack.pop()
        depth[id(symbol)] = level
        stack.extend((child, level + 1) for child in symbol.children)
    return depth


def _lines(symbol: Symbol) -> str:
    if symbol.start_line == symbol.end_line:
        return f"line {symbol.start_line}"
    return f"lines {symbol.start_line}-{symbol.end_line}"


def _symbol_meta(symbol: Symbol) -> dict[str, Any]:
    return {"kind": symbol.kind, "path": symbol.path, "start_line": symbol.start_line, "end_line": symbol.end_line}


def _map_line(path: Path, root: Path, probes: list[int]) -> str:
    shown = printable(os.path.relpath(path, root))
    try:
        symbols, _ = file_symbols(path, probes=probes)
    except ToolError as exc:
        return f"{shown}: ({exc.metadata.get('error', 'unreadable')})"
    except _DeepNotParsed:
        return f"{shown}: (deeply nested: outline it alone)"
    if not symbols:
        return f"{shown}: -"
    listed = [f"{s.kind} {s.path} ({s.start_line})" for s in symbols[:MAX_MAP_SYMBOLS_PER_FILE]]
    if len(symbols) > len(listed):
        listed.append(f"… {len(symbols) - len(listed)} more")
    return f"{shown}: " + ", ".join(listed)


TOOL = OutlineTool()
