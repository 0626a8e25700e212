"""A tiny deterministic language server for tests (pygls, stdio).

Diagnostics come from markers in the document text, one per matching line:
  ERROR: msg / WARN: msg / INFO: msg / HINT: msg   -> a diagnostic of that severity at the marker
  MANY_ERRORS n                                    -> n errors on that line
  DELAY_MS n                                       -> publish n ms after the change
  CRASH                                            -> the server exits at once
  TOUCH name                                       -> also publish one error for sibling file "name"
  TOUCH_DELAY_MS n                                 -> ... n ms after the document's own publish
Diagnostics are published with the document version on open, change and save. Navigation:
definition/references/hover for a word find "def <word>" lines and occurrences of the word;
documentSymbol lists "def <name>" lines; workspace/symbol searches open documents.
Started with PULL=1 in the environment it also offers pull diagnostics.
"""

from __future__ import annotations

import asyncio
import os
import re

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


def diagnostics_for(text: str) -> tuple[list[types.Diagnostic], int]:
    out: list[types.Diagnostic] = []
    delay = 0
    for number, line in enumerate(text.split("\n")):
        if line.strip() == "CRASH":
            os._exit(3)  # pygls would catch SystemExit raised inside a handler
        if m := re.search(r"DELAY_MS (\d+)", line):
            delay = int(m.group(1))
        if m := re.search(r"MANY_ERRORS (\d+)", line):
            for i in range(int(m.group(1))):
                out.append(_diag(number, 0, f"error number {i + 1}", types.DiagnosticSeverity.Error, f"E{i + 1}"))
        if m := MARKER.search(line):
            out.append(_diag(number, m.start(), m.group(2), SEVERITY[m.group(1)], "M1"))
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
    if delay:
        await asyncio.sleep(delay / 1000)
    server.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=uri, diagnostics=diags, version=document.version)
    )
    if m := re.search(r"TOUCH_DELAY_MS (\d+)", document.source):
        await asyncio.sleep(int(m.group(1)) / 1000)
    for name in re.findall(r"TOUCH (\S+)", document.source):
        sibling = uri.rsplit("/", 1)[0] + "/" + name
        error = _diag(0, 0, f"broken by {uri.rsplit('/', 1)[1]}", types.DiagnosticSeverity.Error, "X1")
        server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=sibling, diagnostics=[error]))


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
async def did_open(params: types.DidOpenTextDocumentParams) -> None:
    await publish(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
async def did_change(params: types.DidChangeTextDocumentParams) -> None:
    await publish(params.text_document.uri)


if PULL:

    @server.feature(types.TEXT_DOCUMENT_DIAGNOSTIC, types.DiagnosticOptions(False, False))
    def pull(params: types.DocumentDiagnosticParams) -> types.FullDocumentDiagnosticReport:
        document = server.workspace.get_text_document(params.text_document.uri)
        return types.FullDocumentDiagnosticReport(items=diagnostics_for(document.source)[0])


def _word_at(uri: str, position: types.Position) -> str:
    line = server.workspace.get_text_document(uri).lines[position.line]
    for m in re.finditer(r"\w+", line):
        if m.start() <= position.character <= m.end():
            return m.group(0)
    return ""


def _occurrences(word: str, pattern: str) -> list[types.Location]:
    out = []
    for uri, document in server.workspace.text_documents.items():
        for number, line in enumerate(document.lines):
            for m in re.finditer(pattern.format(re.escape(word)), line):
                start = m.start(1) if m.groups() else m.start()
                out.append(types.Location(uri, types.Range(types.Position(number, start), types.Position(number, start + len(word)))))
    return out


@server.feature(types.TEXT_DOCUMENT_DEFINITION)
def definition(params: types.DefinitionParams) -> list[types.Location]:
    return _occurrences(_word_at(params.text_document.uri, params.position), r"def ({})\b")


@server.feature(types.TEXT_DOCUMENT_REFERENCES)
def references(params: types.ReferenceParams) -> list[types.Location]:
    return _occurrences(_word_at(params.text_document.uri, params.position), r"\b({})\b")


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(params: types.HoverParams) -> types.Hover:
    word = _word_at(params.text_document.uri, params.position)
    return types.Hover(types.MarkupContent(types.MarkupKind.PlainText, f"word: {word}"))


@server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
def symbols(params: types.DocumentSymbolParams) -> list[types.DocumentSymbol]:
    document = server.workspace.get_text_document(params.text_document.uri)
    out = []
    for number, line in enumerate(document.lines):
        if m := re.match(r"\s*def (\w+)", line):
            rng = types.Range(types.Position(number, 0), types.Position(number, len(line.rstrip())))
            out.append(types.DocumentSymbol(m.group(1), types.SymbolKind.Function, rng, rng))
    return out


@server.feature(types.WORKSPACE_SYMBOL)
def workspace_symbols(params: types.WorkspaceSymbolParams) -> list[types.SymbolInformation]:
    return [
        types.SymbolInformation(name=params.query, kind=types.SymbolKind.Function, location=loc)
        for loc in _occurrences(params.query, r"def ({})\b")
    ]


if __name__ == "__main__":
    server.start_io()
