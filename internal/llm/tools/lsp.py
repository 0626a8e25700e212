"""lsp: ask the file's language server for diagnostics, definitions, references, hover or symbols."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

from ...errors import ToolError
from ...fsutil.paths import is_within, not_found_error
from ...lsp.diagnostics import format_report
from .params import param
from .tools import Tool, ToolContext, ToolResponse

#: Locations and symbols listed at most.
MAX_RESULTS = 100
#: Hover text is cut here.
MAX_HOVER_CHARS = 4000
#: LSP positions are unsigned 32-bit integers that must fit a signed one (2**31 - 1).
MAX_POSITION = 2**31 - 1

Operation = Literal["diagnostics", "definition", "references", "hover", "document_symbol", "workspace_symbol"]
NEEDS_POSITION = ("definition", "references", "hover")

DESCRIPTION = """Asks the language server for a file: diagnostics (default), definition, references, hover,
document_symbol or workspace_symbol.

- `file_path` must exist. LSP servers must be configured for the file type (Python, Go, TypeScript,
  Rust and C/C++ servers are used automatically when installed). When several servers handle the
  file, diagnostics are merged and each question goes to a server that can answer it.
- `line` and `character` are 1-based (as view shows them) and required for definition, references
  and hover; `query` is required for workspace_symbol.
- diagnostics lists all severities for the file (errors, warnings, info, hints), at most 20 per file.
- Edits made with edit, multiedit, write and patch already report new errors; use this tool to look
  deeper (warnings, navigation).
- "unconfirmed" never means clean: the server is still analysing. Ask again with this tool (it waits
  longer) before relying on the file being error-free.
"""


@dataclass(frozen=True)
class LspParams:
    file_path: str = param("The file to ask about (absolute or relative to the workspace root)", minLength=1)
    operation: Operation = param("What to ask the language server", "diagnostics")
    line: int | None = param("1-based line (definition, references, hover)", None, minimum=1, maximum=MAX_POSITION)
    character: int | None = param(
        "1-based column (definition, references, hover)", None, minimum=1, maximum=MAX_POSITION
    )
    query: str | None = param("Symbol name to search for (workspace_symbol)", None)


class LspTool(Tool):
    name = "lsp"
    title = "Ask the language server"
    description = DESCRIPTION
    Params = LspParams
    read_only = True

    async def run(self, params: LspParams, ctx: ToolContext) -> ToolResponse:
        from ...lsp.client import LspError
        from ...lsp.manager import LspManager

        path = ctx.resolve(params.file_path)
        await ctx.require_read_permission(self.name, path)
        if not path.is_file():  # the file first, then the server (seed 2.12)
            if path.is_dir():
                raise ToolError(f"{path} is a directory; give the lsp tool a file.")
            raise not_found_error(path)
        manager = ctx.lsp
        if not isinstance(manager, LspManager):
            raise ToolError("Language servers are disabled for this session.")
        if not manager.servers_for(path):
            missing = manager.missing_for(path)
            if missing:
                raise ToolError(
                    f"No language server can run for {ctx.display(path)}: {'; '.join(missing)}. Install it or "
                    "fix its command under [lsp.servers.NAME] in .toolsmith/config.toml."
                )
            raise ToolError(
                f"No LSP server is configured for *{path.suffix or path.name} files. Install a language server "
                "for it (e.g. basedpyright or pylsp for Python, gopls, typescript-language-server, rust-analyzer, "
                "clangd) or add one under [lsp.servers.NAME] in .toolsmith/config.toml (command, extensions)."
            )
        if params.operation in NEEDS_POSITION and (params.line is None or params.character is None):
            raise ToolError(f"operation {params.operation} needs line and character (1-based).")
        if params.operation == "workspace_symbol" and not params.query:
            raise ToolError("operation workspace_symbol needs a query.")
        try:
            text = await self._dispatch(params, path, manager, ctx)
        except LspError as exc:
            raise ToolError(f"The language server failed: {exc}.") from exc
        return ToolResponse(text, metadata={"operation": params.operation, "file_path": str(path)})

    async def _dispatch(self, params: LspParams, path: Path, manager: Any, ctx: ToolContext) -> str:
        from lsprotocol import types

        from ...lsp.client import from_char

        if params.operation == "diagnostics":
            from ...lsp.manager import truth_notes, with_late_label, with_notes

            outcome = await manager.diagnostics(path)
            name = ctx.display(path)
            footer = with_notes("", truth_notes(name, outcome, view=True))
            footer = f"\n{footer}" if footer else ""
            if outcome.diags is None:
                return f"No language server could report on {name}.{footer}"
            report = with_late_label(format_report({name: outcome.diags}, errors_only=False, context="query"), outcome)
            if not report:
                sure = not outcome.unconfirmed and not outcome.quiet
                report = f"No diagnostics for {name}." if sure else f"No diagnostics received for {name} yet."
            return report + footer
        client, _notes = await manager.navigate(path, params.operation)
        doc = types.TextDocumentIdentifier(path.as_uri())
        if params.operation in NEEDS_POSITION:
            assert params.line is not None and params.character is not None
            line_text = _line(path, params.line - 1)
            position = types.Position(params.line - 1, from_char(line_text, params.character - 1, client.encoding))
            if params.operation == "definition":
                found = await manager.request(
                    client, "text_document_definition", types.DefinitionParams(text_document=doc, position=position)
                )
                return _locations(found, ctx, "definition", client.encoding)
            if params.operation == "references":
                found = await manager.request(
                    client,
                    "text_document_references",
                    types.ReferenceParams(
                        context=types.ReferenceContext(include_declaration=True), text_document=doc, position=position
                    ),
                )
                return _locations(found, ctx, "references", client.encoding)
            hover = await manager.request(
                client, "text_document_hover", types.HoverParams(text_document=doc, position=position)
            )
            return _hover_text(hover) or "No hover information at that position."
        if params.operation == "document_symbol":
            found = await manager.request(
                client, "text_document_document_symbol", types.DocumentSymbolParams(text_document=doc)
            )
            return _capped(_symbol_lines(_in_source_order(found or []), ctx, 0)) or "No symbols found."
        found = await manager.request(client, "workspace_symbol", types.WorkspaceSymbolParams(query=params.query or ""))
        return _capped(_workspace_symbols(found or [], ctx)) or "No symbols found."


def _line(path: Path, index: int) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    except OSError:
        return ""
    return lines[index] if 0 <= index < len(lines) else ""


def _path_of(uri: str) -> Path:
    return Path(unquote(urlsplit(uri).path))


def _location_line(uri: str, line: int, character: int, ctx: ToolContext, encoding: str) -> str:
    from ...lsp.client import to_char

    path = _path_of(uri)
    text = _line(path, line)
    return f"{ctx.display(path)}:{line + 1}:{to_char(text, character, encoding) + 1}: {text.strip()}"


def _locations(found: Any, ctx: ToolContext, what: str, encoding: str) -> str:
    if not found:
        return f"No {what} found."
    items = found if isinstance(found, list | tuple) else [found]
    lines = []
    for item in items[:MAX_RESULTS]:
        uri = getattr(item, "uri", None) or getattr(item, "target_uri", None)
        rng = getattr(item, "range", None) or getattr(item, "target_selection_range", None)
        if uri and rng:
            lines.append(_location_line(uri, rng.start.line, rng.start.character, ctx, encoding))
    more = f"\n... and {len(items) - MAX_RESULTS} more" if len(items) > MAX_RESULTS else ""
    return "\n".join(lines) + more


def _hover_text(hover: Any) -> str:
    if hover is None:
        return ""
    contents = hover.contents
    parts = contents if isinstance(contents, list | tuple) else [contents]
    texts = [p if isinstance(p, str) else getattr(p, "value", "") for p in parts]
    return "\n".join(t for t in texts if t)[:MAX_HOVER_CHARS]


def _kind(kind: Any) -> str:
    return getattr(kind, "name", str(kind))


def _capped(lines: list[str]) -> str:
    more = [f"... and {len(lines) - MAX_RESULTS} more"] if len(lines) > MAX_RESULTS else []
    return "\n".join(lines[:MAX_RESULTS] + more)


def _start(symbol: Any) -> tuple[int, int]:
    rng = getattr(symbol, "range", None) or symbol.location.range
    return rng.start.line, rng.start.character


def _in_source_order(symbols: Any) -> list[Any]:
    """Servers list symbols in their own order (tsserver: by kind); show them as the file has them."""
    return sorted(symbols, key=_start)


def _symbol_lines(symbols: Any, ctx: ToolContext, depth: int) -> list[str]:
    lines = []
    for symbol in symbols:
        rng = getattr(symbol, "range", None) or symbol.location.range
        lines.append(f"{'  ' * depth}{symbol.name} ({_kind(symbol.kind)}) line {rng.start.line + 1}")
        lines += _symbol_lines(_in_source_order(getattr(symbol, "children", None) or []), ctx, depth + 1)
    return lines


def _workspace_symbols(symbols: Any, ctx: ToolContext) -> list[str]:
    """One line per symbol, the project's own first (then libraries, e.g. the standard library)."""
    rows = []
    for symbol in symbols:
        location = symbol.location
        path = _path_of(location.uri)
        rng = getattr(location, "range", None)
        line = f":{rng.start.line + 1}" if rng else ""
        outside = not is_within(path, ctx.workspace)
        rows.append((outside, f"{symbol.name} ({_kind(symbol.kind)}) {ctx.display(path)}{line}"))
    return [row for _, row in sorted(rows, key=lambda r: r[0])]


TOOL = LspTool()
