"""A tiny deterministic language server for tests (pygls, stdio).

Diagnostics come from markers in the document text, one per matching line:
  ERROR: msg / WARN: msg / INFO: msg / HINT: msg   -> a diagnostic of that severity at the marker
  MANY_ERRORS n                                    -> n errors on that line
  DELAY_MS n                                       -> publish (or answer a pull) n ms after the change
  CRASH                                            -> the server exits at once
  HANG                                             -> the server stops reading and writing (hung)
  TOUCH name                                       -> also publish one error for sibling file "name"
  TOUCH_DELAY_MS n                                 -> ... n ms after the document's own publish
  ERROR: first\\nsecond                         -> a literal \\n in a message becomes a line break
Diagnostics are published with the document version on open, change and save. Navigation:
definition/references/hover for a word find "def <word>" lines and occurrences of the word;
documentSymbol lists "def <name>" lines; workspace/symbol searches open documents.
Environment switches, to play the real servers' quirks:
  PULL=1                 also offer pull diagnostics
  PULL_DYNAMIC=1         like basedpyright: answer pull diagnostics, but offer them only by
                         registering them (client/registerCapability) after initialized,
                         when the client declares dynamic registration; ask the client to pull again
                         (workspace/diagnostic/refresh) after each change, and exit when it
                         answers that with an error
  STALE_PUSH=1           like basedpyright's push: a change's first publish repeats the previous
                         diagnostics under the new version; the real ones follow 300 ms later
  NO_EMPTY_REPUBLISH=1   like typescript-language-server: no versions, and nothing published when
                         a file that had no diagnostics still has none
  NO_NAV=1               like ruff: diagnostics only, no navigation
  NO_SYMBOLS=1           navigation, but no document symbols (a name cannot be looked up)
  ENCODING=utf-16        columns in UTF-16 code units (pygls otherwise takes the client's UTF-32)
  HOVER_DELAY_MS=n       hover answers after n ms (a cancelled hover never answers)
"""

from __future__ import annotations

import asyncio
import os
import re
import time

from lsprotocol import types
from pygls.lsp.server import LanguageServer

server = LanguageServer("marker-server", "1.0")
MARKER = re.compile(r"\b(ERROR|WARN|INFO|HINT): ?(.*)")
SEVERITY = {
    "ERROR": types.DiagnosticSeverity.Error,
    "WARN": types.DiagnosticSeverity.Warning,
    "INFO": types.DiagnosticSeverity.Information,
    "HINT": types.DiagnosticSeverity.Hint,
}
PULL = os.environ.get("PULL") == "1"
PULL_DYNAMIC = os.environ.get("PULL_DYNAMIC") == "1"
STALE_PUSH = os.environ.get("STALE_PUSH") == "1"
_last_published: dict[str, list[types.Diagnostic]] = {}
_refreshes: set[asyncio.Future[None]] = set()
NO_EMPTY_REPUBLISH = os.environ.get("NO_EMPTY_REPUBLISH") == "1"
NO_NAV = os.environ.get("NO_NAV") == "1"
NO_SYMBOLS = NO_NAV or os.environ.get("NO_SYMBOLS") == "1"
UTF16 = os.environ.get("ENCODING") == "utf-16"
_last_empty: dict[str, bool] = {}

if PULL_DYNAMIC:  # answered from the start, never offered in the initialize result
    from pygls.capabilities import ServerCapabilitiesBuilder

    ServerCapabilitiesBuilder._with_diagnostic_provider = lambda self: self  # type: ignore[method-assign]

if UTF16:
    from pygls.capabilities import ServerCapabilitiesBuilder

    ServerCapabilitiesBuilder.choose_position_encoding = classmethod(  # type: ignore[method-assign]
        lambda cls, caps: types.PositionEncodingKind.Utf16
    )


def column(line: str, index: int) -> int:
    return len(line[:index].encode("utf-16-le")) // 2 if UTF16 else index


def diagnostics_for(text: str) -> tuple[list[types.Diagnostic], int]:
    out: list[types.Diagnostic] = []
    delay = 0
    for number, line in enumerate(text.split("\n")):
        if line.strip() == "CRASH":
            os._exit(3)  # pygls would catch SystemExit raised inside a handler
        if line.strip() == "HANG":
            time.sleep(10**6)  # blocks the event loop: no replies, no notifications
        if m := re.search(r"DELAY_MS (\d+)", line):
            delay = int(m.group(1))
        if m := re.search(r"MANY_ERRORS (\d+)", line):
            for i in range(int(m.group(1))):
                out.append(_diag(number, 0, f"error number {i + 1}", types.DiagnosticSeverity.Error, f"E{i + 1}"))
        if m := MARKER.search(line):
            message = m.group(2).replace("\\n", "\n")
            out.append(_diag(number, column(line, m.start()), message, SEVERITY[m.group(1)], "M1"))
    return out, delay


def _diag(line: int, col: int, message: str, severity: types.DiagnosticSeverity, code: str) -> types.Diagnostic:
    return types.Diagnostic(
        range=types.Range(types.Position(line, col), types.Position(line, col + 1)),
        message=message,
        severity=severity,
        source="marker",
        code=code,
    )


async def publish(uri: str) -> None:
    document = server.workspace.get_text_document(uri)
    diags, delay = diagnostics_for(document.source)
    analysed = document.version  # a publish names the version it was computed from
    if STALE_PUSH and uri in _last_published:
        stale = types.PublishDiagnosticsParams(uri=uri, diagnostics=_last_published[uri], version=analysed)
        server.text_document_publish_diagnostics(stale)
        delay = max(delay, 300)
    _last_published[uri] = diags
    if delay:
        await asyncio.sleep(delay / 1000)
    if NO_EMPTY_REPUBLISH and not diags and _last_empty.get(uri):
        pass  # unchanged and clean: say nothing, like typescript-language-server
    else:
        version = None if NO_EMPTY_REPUBLISH else analysed
        server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diags, version=version)
        )
    _last_empty[uri] = not diags
    if m := re.search(r"TOUCH_DELAY_MS (\d+)", document.source):
        await asyncio.sleep(int(m.group(1)) / 1000)
    for name in re.findall(r"TOUCH (\S+)", document.source):
        sibling = uri.rsplit("/", 1)[0] + "/" + name
        error = _diag(0, 0, f"broken by {uri.rsplit('/', 1)[1]}", types.DiagnosticSeverity.Error, "X1")
        server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=sibling, diagnostics=[error]))


@server.feature(types.INITIALIZED)
async def initialized(params: types.InitializedParams) -> None:
    # Like typescript-language-server's $/typescriptVersion: a notification the client does not know.
    server.protocol.notify("$/markerVersion", {"version": "1.0"})
    diagnostic = server.protocol.client_capabilities.text_document
    if PULL_DYNAMIC and diagnostic and diagnostic.diagnostic and diagnostic.diagnostic.dynamic_registration:
        options = types.DiagnosticRegistrationOptions(inter_file_dependencies=True, workspace_diagnostics=False)
        registration = types.Registration(id="marker-pull", method=types.TEXT_DOCUMENT_DIAGNOSTIC,
                                          register_options=options)  # fmt: skip
        await server.client_register_capability_async(types.RegistrationParams([registration]))


async def refresh() -> None:
    """Ask the client to pull again; an error answer ends the server (basedpyright does so)."""
    try:
        await server.protocol.send_request_async(types.WORKSPACE_DIAGNOSTIC_REFRESH, None)
    except Exception:
        os._exit(4)
    finally:
        _refreshes.discard(asyncio.current_task())  # type: ignore[arg-type]


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
async def did_open(params: types.DidOpenTextDocumentParams) -> None:
    await publish(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
async def did_change(params: types.DidChangeTextDocumentParams) -> None:
    if PULL_DYNAMIC:
        _refreshes.add(asyncio.ensure_future(refresh()))
    await publish(params.text_document.uri)


async def pull_answer(params: types.DocumentDiagnosticParams) -> types.FullDocumentDiagnosticReport:
    document = server.workspace.get_text_document(params.text_document.uri)
    diags, delay = diagnostics_for(document.source)
    await asyncio.sleep(delay / 1000)  # DELAY_MS delays the answer too
    return types.FullDocumentDiagnosticReport(items=diags)


if PULL or PULL_DYNAMIC:
    server.feature(types.TEXT_DOCUMENT_DIAGNOSTIC, types.DiagnosticOptions(False, False))(pull_answer)


def _word_at(uri: str, position: types.Position) -> str:
    line = server.workspace.get_text_document(uri).lines[position.line]
    for m in re.finditer(r"\w+", line):
        if column(line, m.start()) <= position.character <= column(line, m.end()):
            return m.group(0)
    return ""


def _occurrences(word: str, pattern: str) -> list[types.Location]:
    out = []
    for uri, document in server.workspace.text_documents.items():
        for number, line in enumerate(document.lines):
            for m in re.finditer(pattern.format(re.escape(word)), line):
                start = m.start(1) if m.groups() else m.start()
                first, last = column(line, start), column(line, start + len(word))
                out.append(types.Location(uri, types.Range(types.Position(number, first), types.Position(number, last))))
    return out


@(lambda f: f) if NO_NAV else server.feature(types.TEXT_DOCUMENT_DEFINITION)
def definition(params: types.DefinitionParams) -> list[types.Location]:
    return _occurrences(_word_at(params.text_document.uri, params.position), r"def ({})\b")


@(lambda f: f) if NO_NAV else server.feature(types.TEXT_DOCUMENT_REFERENCES)
def references(params: types.ReferenceParams) -> list[types.Location]:
    return _occurrences(_word_at(params.text_document.uri, params.position), r"\b({})\b")


@(lambda f: f) if NO_NAV else server.feature(types.TEXT_DOCUMENT_HOVER)
async def hover(params: types.HoverParams) -> types.Hover:
    await asyncio.sleep(int(os.environ.get("HOVER_DELAY_MS", "0")) / 1000)
    word = _word_at(params.text_document.uri, params.position)
    return types.Hover(types.MarkupContent(types.MarkupKind.PlainText, f"word: {word}"))


@(lambda f: f) if NO_SYMBOLS else server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
def symbols(params: types.DocumentSymbolParams) -> list[types.DocumentSymbol]:
    document = server.workspace.get_text_document(params.text_document.uri)
    out = []
    for number, line in enumerate(document.lines):
        if m := re.match(r"\s*def (\w+)", line):
            rng = types.Range(types.Position(number, 0), types.Position(number, len(line.rstrip())))
            out.append(types.DocumentSymbol(m.group(1), types.SymbolKind.Function, rng, rng))
    return out


@(lambda f: f) if NO_NAV else server.feature(types.WORKSPACE_SYMBOL)
def workspace_symbols(params: types.WorkspaceSymbolParams) -> list[types.SymbolInformation]:
    return [
        types.SymbolInformation(name=params.query, kind=types.SymbolKind.Function, location=loc)
        for loc in _occurrences(params.query, r"def ({})\b")
    ]


if __name__ == "__main__":
    server.start_io()
