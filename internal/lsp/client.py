"""The LSP conversation with one language server: what we offer and what it offers (initialize),
the server's own requests answered (configuration, registerCapability, workDoneProgress/create),
and the requests the lsp tool asks.

An :class:`LspClient` is a :class:`~.documents.ServerDocuments` (what the server has open and
reported) over a :class:`~.connection.ServerConnection` (its process and JSON-RPC transport).
Positions: the server's negotiated encoding (UTF-32 when offered, else UTF-16, the default) is
converted to the character columns view shows, both ways (positions.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ..logs import logger
from .documents import PULL_METHOD, ServerDocuments

log = logger("toolsmith.lsp")

#: initialize may take a while on a cold server (basedpyright starts node). Callers on a tool's
#: path pass their own, smaller budget.
INIT_TIMEOUT_S = 30.0
#: A navigation request. One that runs out is cancelled ($/cancelRequest), never a reason to kill
#: the server: a cold server indexing a large project answers later.
REQUEST_TIMEOUT_S = 10.0

_FEATURES = {
    "definition": "definition_provider",
    "references": "references_provider",
    "hover": "hover_provider",
    "document_symbol": "document_symbol_provider",
    "workspace_symbol": "workspace_symbol_provider",
    "rename": "rename_provider",
    "implementation": "implementation_provider",
    "incoming_calls": "call_hierarchy_provider",
    "outgoing_calls": "call_hierarchy_provider",
}

_METHODS = {
    "text_document_definition": "textDocument/definition",
    "text_document_references": "textDocument/references",
    "text_document_hover": "textDocument/hover",
    "text_document_document_symbol": "textDocument/documentSymbol",
    "workspace_symbol": "workspace/symbol",
    "text_document_rename": "textDocument/rename",
    "text_document_implementation": "textDocument/implementation",
    "text_document_prepare_call_hierarchy": "textDocument/prepareCallHierarchy",
    "call_hierarchy_incoming_calls": "callHierarchy/incomingCalls",
    "call_hierarchy_outgoing_calls": "callHierarchy/outgoingCalls",
}


class LspClient(ServerDocuments):
    """A started server for one (config, root). Use :meth:`start`, then documents and requests."""

    def supports(self, operation: str) -> bool:
        """Does the server offer ``operation`` (a navigation request of the lsp tool)?"""
        value = getattr(self.capabilities, _FEATURES[operation], None)
        return value is not None and value is not False

    async def start(self, timeout: float = INIT_TIMEOUT_S) -> None:
        """Start the server and initialize it within ``timeout``; raises :class:`LspError`."""
        from lsprotocol import types

        client = await self._spawn(self._handlers(types))
        result = await self._request(client.initialize_async(self._initialize_params(types)), timeout, "initialize")
        self._answered = True
        self.capabilities = result.capabilities
        encoding = getattr(self.capabilities, "position_encoding", None)
        self.encoding = str(getattr(encoding, "value", encoding) or "utf-16")
        client.initialized(types.InitializedParams())
        if self.config.settings:
            client.workspace_did_change_configuration(
                types.DidChangeConfigurationParams(settings=self._settings_tree())
            )

    def _handlers(self, types: Any) -> dict[str, Callable[[Any], Any]]:
        async def on_publish(params: Any) -> None:  # a plain function: pygls sets attributes on it
            await self._on_publish(params)

        return {
            types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: on_publish,
            types.WORKSPACE_CONFIGURATION: lambda params: [self._section(item.section) for item in params.items],
            types.CLIENT_REGISTER_CAPABILITY: lambda params: self._on_register(params),
            types.CLIENT_UNREGISTER_CAPABILITY: lambda params: self._on_unregister(params),
            # A pull server's "diagnostics changed, ask again": answered (basedpyright exits on an
            # error reply), nothing else to do — every result asks for what it shows.
            types.WORKSPACE_DIAGNOSTIC_REFRESH: lambda params: None,
            types.WINDOW_WORK_DONE_PROGRESS_CREATE: lambda params: None,
            types.PROGRESS: lambda params: None,
            types.WINDOW_LOG_MESSAGE: lambda params: log.debug("%s: %s", self.config.name, params.message),
            types.WINDOW_SHOW_MESSAGE: lambda params: log.info("%s: %s", self.config.name, params.message),
        }

    def _on_register(self, params: Any) -> None:
        """Dynamic registrations: only pull diagnostics matter here (basedpyright offers them
        this way, some time after ``initialized``); the rest are acknowledged and ignored."""
        for registration in params.registrations:
            if registration.method == PULL_METHOD:
                self.pull_registrations.add(registration.id)
                self.pull_refused = False

    def _on_unregister(self, params: Any) -> None:
        """A server that takes pull diagnostics back (and never offered them statically) is
        listened to from then on."""
        for unregistration in params.unregisterations:
            if unregistration.method == PULL_METHOD:
                self.pull_registrations.discard(unregistration.id)
                static = getattr(self.capabilities, "diagnostic_provider", None) is not None
                self.pull_refused = not self.pull_registrations and not static

    def _initialize_params(self, types: Any) -> Any:
        caps = types.ClientCapabilities(
            general=types.GeneralClientCapabilities(
                position_encodings=[types.PositionEncodingKind.Utf32, types.PositionEncodingKind.Utf16]
            ),
            text_document=types.TextDocumentClientCapabilities(
                synchronization=types.TextDocumentSyncClientCapabilities(did_save=True),
                publish_diagnostics=types.PublishDiagnosticsClientCapabilities(version_support=True),
                diagnostic=types.DiagnosticClientCapabilities(dynamic_registration=True),
                definition=types.DefinitionClientCapabilities(),
                references=types.ReferenceClientCapabilities(),
                hover=types.HoverClientCapabilities(
                    content_format=[types.MarkupKind.PlainText, types.MarkupKind.Markdown]
                ),
                document_symbol=types.DocumentSymbolClientCapabilities(hierarchical_document_symbol_support=True),
                rename=types.RenameClientCapabilities(),
                implementation=types.ImplementationClientCapabilities(),
                call_hierarchy=types.CallHierarchyClientCapabilities(),
            ),
            workspace=types.WorkspaceClientCapabilities(
                configuration=True,
                workspace_folders=True,
                symbol=types.WorkspaceSymbolClientCapabilities(),
                # Text edits only (no file operations: the lsp tool refuses those).
                workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True),
                did_change_configuration=types.DidChangeConfigurationClientCapabilities(),
            ),
            window=types.WindowClientCapabilities(work_done_progress=True),
        )
        uri = self.root.as_uri()
        return types.InitializeParams(
            process_id=os.getpid(),
            root_uri=uri,
            root_path=str(self.root),
            workspace_folders=[types.WorkspaceFolder(uri=uri, name=self.root.name)],
            capabilities=caps,
            initialization_options=self.config.init_options or None,
        )

    def _settings_tree(self) -> dict[str, Any]:
        tree: dict[str, Any] = {}
        for section, value in self.config.settings.items():
            node = tree
            parts = section.split(".") if section else []
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            if parts:
                node[parts[-1]] = value
            elif isinstance(value, dict):
                tree.update(value)
        return tree

    def _section(self, section: str | None) -> Any:
        if not section:
            return self._settings_tree()
        if section in self.config.settings:
            return self.config.settings[section]
        node: Any = self._settings_tree()
        for part in section.split("."):
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    async def request(self, name: str, params: Any) -> Any:
        """A navigation request (``text_document_definition`` …) within REQUEST_TIMEOUT_S."""
        return await self.call(_METHODS[name], params, REQUEST_TIMEOUT_S)
