"""lsp: ask the file's language server for diagnostics, navigation (definitions, references,
implementations, calls, hover, symbols), or a rename applied to every file it touches."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ...errors import InvalidParams, IsDirectory, LspUnavailable, NoChange, ToolError
from ...fsutil.paths import not_found_error
from ...fsutil.printable import printable
from ...lsp import results
from ...lsp.api import LspError, NavigationServer, NavigationSource
from ...lsp.diagnostics import format_report, truth_notes, with_late_label, with_notes
from ...lsp.positions import from_char, to_char
from ...lsp.results import MAX_RESULTS
from .context import LspServices
from .contract import Tool, ToolResponse
from .params import param

#: LSP positions are unsigned 32-bit integers that must fit a signed one (2**31 - 1).
MAX_POSITION = 2**31 - 1

#: Symbols listed when a `symbol` name matches none or several.
MAX_SYMBOL_CANDIDATES = 20

Operation = Literal[
    "diagnostics", "definition", "references", "implementation", "incoming_calls", "outgoing_calls", "hover",
    "rename", "document_symbol", "workspace_symbol",
]  # fmt: skip
NEEDS_POSITION = ("definition", "references", "implementation", "incoming_calls", "outgoing_calls", "hover", "rename")
#: The client request each position-based operation needs the server to support.
_REQUESTS = {
    "definition": ("text_document_definition", "DefinitionParams"),
    "implementation": ("text_document_implementation", "ImplementationParams"),
}

DESCRIPTION = """Asks the language server for a file: diagnostics (default), definition, references,
implementation, incoming_calls, outgoing_calls, hover, document_symbol or workspace_symbol — or
renames a symbol everywhere (rename).

- `file_path` must exist. LSP servers must be configured for the file type (Python, Go, TypeScript,
  Rust and C/C++ servers are used automatically when installed). When several servers handle the
  file, diagnostics are merged and each question goes to a server that can answer it.
- Position-based operations (definition, references, implementation, incoming_calls,
  outgoing_calls, hover, rename) take `line` and `character` (1-based, as view shows them) or
  `symbol`: a name defined in the file, plain (`greet`) or dotted (`Greeter.greet`).
  `query` is required for workspace_symbol.
- rename needs `new_name`: the server's edit is applied to every file it touches at once (all or
  nothing, one permission ask, a diff per file), files you have not viewed included. A file you
  read that changed since is refused (view it again). Prefer it to editing each use by hand; check
  the diagnostics it reports. Servers that rename files too are refused (use the file tools).
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
    line: int | None = param("1-based line (position-based operations)", None, minimum=1, maximum=MAX_POSITION)
    character: int | None = param("1-based column (position-based operations)", None, minimum=1, maximum=MAX_POSITION)
    symbol: str | None = param(
        "A symbol defined in the file, instead of line and character: `name` or a dotted path like `Class.method`",
        None,
    )
    new_name: str | None = param("The new name (rename)", None)
    query: str | None = param("Symbol name to search for (workspace_symbol)", None)


class LspTool(Tool):
    name = "lsp"
    title = "Ask the language server"
    description = DESCRIPTION
    Params = LspParams
    read_only = False  # rename writes (MCP hosts must not take it for a read-only tool)
    offered_read_only = True  # navigation stays available; read-only sessions refuse the rename

    async def run(self, params: LspParams, ctx: LspServices) -> ToolResponse:
        path = ctx.resolve(params.file_path)
        await ctx.require_read_permission(self.name, path)
        if not path.is_file():  # the file first, then the server
            if path.is_dir():
                raise IsDirectory(f"{printable(str(path))} is a directory; give the lsp tool a file.")
            raise not_found_error(path)
        manager = ctx.lsp
        if manager is None:
            raise LspUnavailable("Language servers are disabled for this session.")
        if not isinstance(manager, NavigationSource):
            # An embedder's own source (Session(lsp=...)) that reports diagnostics after edits only.
            raise LspUnavailable(
                "This session's diagnostics source does not offer navigation: the lsp tool cannot ask it about "
                f"{ctx.display(path)} (edits and views still report its diagnostics)."
            )
        if not manager.servers_for(path):
            missing = manager.missing_for(path)
            if missing:
                raise LspUnavailable(
                    f"No language server can run for {ctx.display(path)}: {'; '.join(missing)}. Install it or "
                    "fix its command under [lsp.servers.NAME] in your own config (docs/config.md)."
                )
            raise LspUnavailable(
                f"No LSP server is configured for *{path.suffix or path.name} files. Install a language server "
                "for it (e.g. basedpyright or pylsp for Python, gopls, typescript-language-server, rust-analyzer, "
                "clangd) or add one under [lsp.servers.NAME] in your own config (command, extensions; docs/config.md)."
            )
        _check_position_params(params)
        if params.operation == "workspace_symbol" and not params.query:
            raise InvalidParams("operation workspace_symbol needs a query.")
        try:
            if params.operation == "rename":
                return await self._rename(params, path, manager, ctx)
            text = await self._dispatch(params, path, manager, ctx)
        except LspError as exc:
            raise ToolError(f"The language server failed: {exc}.", code="lsp_failed") from exc
        return ToolResponse(text, metadata={"operation": params.operation, "file_path": str(path)})

    async def _rename(
        self, params: LspParams, path: Path, manager: NavigationSource[Any], ctx: LspServices
    ) -> ToolResponse:
        from lsprotocol import types

        client, _notes = await manager.navigate(path, "rename")
        doc = types.TextDocumentIdentifier(path.as_uri())
        position, old_name = await _position(params, path, client, manager, ctx)
        assert params.new_name is not None
        edit = await manager.request(
            client,
            "text_document_rename",
            types.RenameParams(text_document=doc, position=position, new_name=params.new_name),
        )
        _refuse_stale(ctx, edit, client)
        return await _apply_rename(ctx, path, edit, old_name, params.new_name, client.encoding)

    async def _dispatch(self, params: LspParams, path: Path, manager: NavigationSource[Any], ctx: LspServices) -> str:
        from lsprotocol import types

        if params.operation == "diagnostics":
            outcome = await manager.diagnostics(path)
            name = ctx.display(path)
            footer = with_notes("", truth_notes(name, outcome, view=True))
            footer = f"\n{footer}" if footer else ""
            if outcome.diags is None:
                return f"No language server could report on {name}.{footer}"
            # Just changed: the diagnostics on or near the changed lines come first (the cap hides the rest).
            found = format_report(
                {name: outcome.diags}, errors_only=False, context="query", focus={name: outcome.focus}
            )
            report = with_late_label(found, outcome)
            if not report:
                sure = not outcome.unconfirmed and not outcome.quiet
                report = f"No diagnostics for {name}." if sure else f"No diagnostics received for {name} yet."
            return report + footer
        client, _notes = await manager.navigate(path, params.operation)
        doc = types.TextDocumentIdentifier(path.as_uri())
        if params.operation in NEEDS_POSITION:
            position, _name = await _position(params, path, client, manager, ctx)
            if params.operation in _REQUESTS:
                # The request's own params class: pygls serialises by the method's declared type.
                request, params_class = _REQUESTS[params.operation]
                request_params = getattr(types, params_class)(text_document=doc, position=position)
                found = await manager.request(client, request, request_params)
                return results.format_locations(found, ctx.display, params.operation, client.encoding)
            if params.operation in ("incoming_calls", "outgoing_calls"):
                return await _calls(params.operation, doc, position, client, manager, ctx)
            if params.operation == "references":
                found = await manager.request(
                    client,
                    "text_document_references",
                    types.ReferenceParams(
                        context=types.ReferenceContext(include_declaration=True), text_document=doc, position=position
                    ),
                )
                return results.format_locations(found, ctx.display, "references", client.encoding)
            hover = await manager.request(
                client, "text_document_hover", types.HoverParams(text_document=doc, position=position)
            )
            return results.hover_text(hover) or "No hover information at that position."
        if params.operation == "document_symbol":
            found = await manager.request(
                client, "text_document_document_symbol", types.DocumentSymbolParams(text_document=doc)
            )
            return results.capped(results.symbol_lines(results.in_source_order(found or []), 0)) or "No symbols found."
        found = await manager.request(client, "workspace_symbol", types.WorkspaceSymbolParams(query=params.query or ""))
        return results.capped(results.workspace_symbols(found or [], ctx.display, ctx.workspace)) or "No symbols found."


def _refuse_stale(ctx: LspServices, edit: Any, client: NavigationServer) -> None:
    """Refuse an edit computed on an older text of a file the server has open (changed on disk
    outside this session since it was opened): its positions would land in the wrong places. The
    server is given the current text, so the same rename asked again is computed on it."""
    from ...lsp.edits import WorkspaceEditError, file_edits
    from ...lsp.servers import language_id

    try:
        paths = file_edits(edit) if edit is not None else {}
    except WorkspaceEditError:
        return  # refused with its reason when applied
    stale = []
    for path in paths:
        if ctx.files.last_read(path) is not None:  # read by the session: its own refusal says "view it again"
            with contextlib.suppress(OSError):
                ctx.files.check_unchanged(path, path.read_bytes())
        known = client.texts.get(path.as_uri())
        try:
            now = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if known is not None and known != now:
            client.sync(path, now, language_id(client.config, path))
            stale.append(ctx.display(path))
    if stale:
        raise ToolError(
            f"Nothing was renamed: the language server computed the rename on an older text of {', '.join(stale)} "
            "(changed outside this session since the server opened it). It has the current text now: ask for the "
            "rename again.",
            code="rename_stale",
        )


async def _apply_rename(
    ctx: LspServices, path: Path, edit: Any, old_name: str, new_name: str, encoding: str
) -> ToolResponse:
    """Apply the server's WorkspaceEdit to every file as one change (one permission ask, one
    commit). A file the session read must be unchanged since; one it never read is read fresh
    (the server's edit was computed on the disk's text)."""
    from ...lsp.edits import WorkspaceEditError, file_edits
    from ..change.pipeline import ChangeRequest, Target, change_files

    try:
        per_file = file_edits(edit) if edit is not None else {}
    except WorkspaceEditError as exc:
        raise ToolError(f"Nothing was renamed: {exc}.", code=exc.code) from exc
    if not per_file:
        raise ToolError(
            f"The language server found nothing to rename at that position in {ctx.display(path)} "
            "(is it on a name? view the line, or use symbol).",
            code="rename_nothing",
        )
    plans = sorted(per_file.items())
    targets = [Target(p, _rename_plan(ctx, p, edits, encoding), read="optional") for p, edits in plans]
    what = f"rename {old_name or 'the symbol'} to {new_name}"

    def describe(planned: list[Any]) -> str:
        return f"{what} in {', '.join(p.display for p in planned)}"

    def report(applied: Any) -> tuple[str, dict[str, Any]]:
        planned = applied.planned
        files = [p.meta for p in planned]
        total = sum(p.value for p in planned)
        count = len(planned)
        text = (
            f"Renamed {old_name or 'the symbol'} to {new_name}: {total} edit{'s' if total != 1 else ''} in {count} "
            f"file{'s' if count != 1 else ''}"
        )
        for p in planned[:MAX_RESULTS]:
            text += f"\n  {p.display} ({p.value} edit{'s' if p.value != 1 else ''})"
        if count > MAX_RESULTS:
            text += f"\n  ... and {count - MAX_RESULTS} more files (all in metadata['files'])"
        return text, {"operation": "rename", "file_path": str(path), "files": files, "edits": total}

    unchanged = NoChange(
        f"Renaming to {new_name!r} changes no file (is it the same name?).", code="rename_nothing"
    )
    request = ChangeRequest("lsp", targets, describe, gate_name="rename", unchanged=unchanged)
    return await change_files(ctx, request, report)


def _rename_plan(ctx: LspServices, path: Path, edits: Any, encoding: str) -> Any:
    """How one file's text edits of a rename are planned on the file as found."""
    from ...fsutil.textio import TextFile
    from ...lsp.edits import WorkspaceEditError, apply_text_edits
    from ..change.pipeline import Planned

    def plan(snapshot: Any, _check: Any) -> Planned | None:
        old = snapshot.text
        try:
            new_raw = apply_text_edits(old.raw, edits, encoding)
        except WorkspaceEditError as exc:
            raise ToolError(f"Nothing was renamed: {exc} ({ctx.display(path)}).", code=exc.code) from exc
        if new_raw == old.raw:
            return None
        return Planned(new=TextFile(new_raw, old.encoding, old.bom, old.eol), value=len(edits))

    return plan


def _check_position_params(params: LspParams) -> None:
    if params.operation not in NEEDS_POSITION:
        return
    if params.symbol is not None and (params.line is not None or params.character is not None):
        raise ToolError("Give either symbol or line and character, not both.", code="position_and_symbol")
    if params.symbol is None and (params.line is None or params.character is None):
        raise InvalidParams(
            f"operation {params.operation} needs line and character (1-based), or symbol (a name defined in the file)."
        )
    if params.symbol is not None and not params.symbol.strip():
        raise InvalidParams("symbol is empty: give a name defined in the file, e.g. `greet` or `Greeter.greet`.")
    if params.operation == "rename" and not (params.new_name or "").strip():
        raise ToolError("operation rename needs new_name.", code="missing_new_name")


async def _position(
    params: LspParams, path: Path, client: NavigationServer, manager: NavigationSource[Any], ctx: LspServices
) -> tuple[Any, str]:
    """The server position the call is about, and the name there."""
    from lsprotocol import types

    if params.symbol is not None:
        line, index, name = await _resolve_symbol(params.symbol, path, client, manager, ctx)
    else:
        assert params.line is not None and params.character is not None
        line, index = params.line - 1, params.character - 1
        name = results.word_at(results.line_of(path, line), index)
    return types.Position(line, from_char(results.line_of(path, line), index, client.encoding)), name


async def _resolve_symbol(
    query: str, path: Path, client: NavigationServer, manager: NavigationSource[Any], ctx: LspServices
) -> tuple[int, int, str]:
    """(0-based line, character index, name) of the symbol ``query`` names in ``path``."""
    from lsprotocol import types

    if not client.supports("document_symbol"):
        raise ToolError(
            f"{client.config.name} cannot list the symbols of {ctx.display(path)}, so symbol cannot be used "
            "here: give line and character.",
            code="symbol_unsupported",
        )
    doc = types.TextDocumentIdentifier(path.as_uri())
    found = await manager.request(
        client, "text_document_document_symbol", types.DocumentSymbolParams(text_document=doc)
    )
    named = list(results.named_symbols(results.in_source_order(found or []), ""))
    query = query.strip()
    matches = [(n, s) for n, s in named if n == query]
    if not matches:
        matches = [(n, s) for n, s in named if n.endswith("." + query) or n.split(".")[-1] == query]
    if len(matches) != 1:
        shown = matches or named
        listing = "\n".join(
            f"  {n} ({results.kind_name(s.kind)}) line {results.symbol_start(s)[0] + 1}"
            for n, s in shown[:MAX_SYMBOL_CANDIDATES]
        )
        if len(shown) > MAX_SYMBOL_CANDIDATES:
            listing += f"\n  ... and {len(shown) - MAX_SYMBOL_CANDIDATES} more"
        if matches:
            raise ToolError(
                f"symbol {query!r} matches {len(matches)} symbols in {ctx.display(path)}; give the dotted path "
                f"(e.g. Class.method) or line and character:\n{listing}",
                code="ambiguous_symbol",
            )
        raise ToolError(
            f"No symbol {query!r} in {ctx.display(path)}. Symbols in the file:\n{listing or '  (none)'}",
            code="symbol_not_found",
        )
    _, symbol = matches[0]
    selection = getattr(symbol, "selection_range", None)
    if selection is not None:
        line, column = selection.start.line, selection.start.character
        text = results.line_of(path, line)
        return line, to_char(text, column, client.encoding), symbol.name
    # A flat SymbolInformation: its range starts at the declaration; the name is on that line.
    line, column = results.symbol_start(symbol)
    text = results.line_of(path, line)
    index = to_char(text, column, client.encoding)
    found_at = text.find(symbol.name, index)
    return line, found_at if found_at >= 0 else index, symbol.name


async def _calls(
    operation: str, doc: Any, position: Any, client: NavigationServer, manager: NavigationSource[Any], ctx: LspServices
) -> str:
    """Callers (the call sites) or callees (their definitions) of the item at ``position``."""
    from lsprotocol import types

    items = await manager.request(
        client,
        "text_document_prepare_call_hierarchy",
        types.CallHierarchyPrepareParams(text_document=doc, position=position),
    )
    if not items:
        return "No function or method at that position."
    item = items[0]
    rows: list[tuple[str, int, int]] = []
    if operation == "incoming_calls":
        calls = await manager.request(
            client, "call_hierarchy_incoming_calls", types.CallHierarchyIncomingCallsParams(item=item)
        )
        for call in calls or []:
            rows += [(call.from_.uri, r.start.line, r.start.character) for r in call.from_ranges]
    else:
        calls = await manager.request(
            client, "call_hierarchy_outgoing_calls", types.CallHierarchyOutgoingCallsParams(item=item)
        )
        for call in calls or []:
            start = call.to.selection_range.start
            rows.append((call.to.uri, start.line, start.character))
    if not rows:
        return f"No {operation.replace('_', ' ')} found for {item.name}."
    lines = [
        results.location_line(uri, line, col, ctx.display, client.encoding) for uri, line, col in rows[:MAX_RESULTS]
    ]
    more = f"\n... and {len(rows) - MAX_RESULTS} more" if len(rows) > MAX_RESULTS else ""
    return "\n".join(lines) + more


TOOL = LspTool()
