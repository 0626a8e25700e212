"""One language server process and the pygls client that talks to it.

Things pygls leaves to us, each learned the hard way (README, SPEC §4 lsp):
- the server is started here, not by ``start_io``: in its own session (wrapper servers spawn
  node/tsserver children; the whole group is killed), with stderr going straight to a log file
  (a piped stderr nobody reads blocks a chatty server);
- lsprotocol 2025.0.0 cannot decode ``notebookDocumentSync`` in some initialize replies, and an
  undecodable reply never resolves: the converter drops that field, and every request has a timeout;
- server→client requests (configuration, registerCapability, workDoneProgress/create) are answered;
- ``stop()`` hangs unless shutdown and exit were sent: :meth:`shutdown` does both, with timeouts,
  then kills the group.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ..state import open_private
from .diagnostics import Diag
from .servers import ServerConfig, find_executable

log = logging.getLogger("toolsmith.lsp")
T = TypeVar("T")

#: initialize may take a while on a cold server (basedpyright starts node).
INIT_TIMEOUT_S = 30.0
#: Any other request.
REQUEST_TIMEOUT_S = 10.0
#: shutdown request, then exit, then the process must be gone within this.
SHUTDOWN_TIMEOUT_S = 3.0


class LspError(Exception):
    pass


def _converter() -> Any:
    """pygls's converter, tolerant of the capability lsprotocol 2025.0.0 cannot structure."""
    from lsprotocol import types
    from pygls.protocol import default_converter

    factory: Any = default_converter  # untyped in pygls
    converter = factory()
    base = converter.get_structure_hook(types.ServerCapabilities)

    def structure(obj: Any, cls: Any) -> Any:
        if isinstance(obj, dict):
            obj = {k: v for k, v in obj.items() if k != "notebookDocumentSync"}
        return base(obj, cls)

    converter.register_structure_hook(types.ServerCapabilities, structure)
    return converter


@dataclass
class Published:
    version: int | None
    diagnostics: list[Diag]
    received: float  # time.monotonic()


def to_diag(d: Any) -> Diag:
    code = d.code
    return Diag(
        line=d.range.start.line,
        character=d.range.start.character,
        severity=int(d.severity) if d.severity is not None else 1,
        message=d.message,
        source=d.source,
        code=str(code) if code is not None else None,
    )


class LspClient:
    """A started server for one (config, root). Use :meth:`start`, then documents and requests."""

    def __init__(self, config: ServerConfig, root: Path, log_dir: Path) -> None:
        self.config = config
        self.root = root
        self.log_dir = log_dir
        self.published: dict[str, Published] = {}
        self.versions: dict[str, int] = {}
        self.texts: dict[str, str] = {}
        self.capabilities: Any = None
        self._changed = asyncio.Condition()
        self._process: asyncio.subprocess.Process | None = None
        self._client: Any = None
        self._log_file: Any = None
        self._exited = asyncio.Event()
        #: When the last publishDiagnostics (for any document) arrived.
        self.last_publish = 0.0

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.returncode is None

    @property
    def supports_pull(self) -> bool:
        return getattr(self.capabilities, "diagnostic_provider", None) is not None

    async def start(self) -> None:
        from lsprotocol import types
        from pygls.io_ import run_async
        from pygls.lsp.client import LanguageClient

        executable = find_executable(self.config.command[0])
        if executable is None:
            raise LspError(f"{self.config.command[0]} is not installed")
        log_fd = open_private(self.log_dir / f"{self.config.name}.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        self._log_file = os.fdopen(log_fd, "ab")
        self._process = await asyncio.create_subprocess_exec(
            executable, *self.config.command[1:],
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=self._log_file,
            cwd=self.root, start_new_session=True,
        )  # fmt: skip
        client: Any = LanguageClient("toolsmith", "0.1", converter_factory=_converter)
        self._client = client
        self._register_handlers(client, types)
        assert self._process.stdin is not None and self._process.stdout is not None
        client.protocol.set_writer(self._process.stdin)
        client._async_tasks.append(
            asyncio.ensure_future(
                run_async(
                    stop_event=client._stop_event, reader=self._process.stdout, protocol=client.protocol, logger=log
                )
            )
        )
        client._async_tasks.append(asyncio.ensure_future(self._watch_exit(self._process)))
        result = await self._request(client.initialize_async(self._initialize_params(types)), INIT_TIMEOUT_S)
        self.capabilities = result.capabilities
        client.initialized(types.InitializedParams())
        if self.config.settings:
            client.workspace_did_change_configuration(
                types.DidChangeConfigurationParams(settings=self._settings_tree())
            )

    async def _watch_exit(self, process: asyncio.subprocess.Process) -> None:
        """Wake anyone waiting for diagnostics as soon as the server dies."""
        await process.wait()
        log.info("%s exited with code %s", self.config.name, process.returncode)
        if self._client is not None:  # fail pending requests now rather than at their timeout
            for future in list(self._client.protocol._request_futures.values()):
                if not future.done():
                    future.set_exception(RuntimeError(f"server exited with code {process.returncode}"))
        self._exited.set()
        async with self._changed:
            self._changed.notify_all()

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

    def _initialize_params(self, types: Any) -> Any:
        caps = types.ClientCapabilities(
            text_document=types.TextDocumentClientCapabilities(
                synchronization=types.TextDocumentSyncClientCapabilities(did_save=True),
                publish_diagnostics=types.PublishDiagnosticsClientCapabilities(version_support=True),
                diagnostic=types.DiagnosticClientCapabilities(),
                definition=types.DefinitionClientCapabilities(),
                references=types.ReferenceClientCapabilities(),
                hover=types.HoverClientCapabilities(
                    content_format=[types.MarkupKind.PlainText, types.MarkupKind.Markdown]
                ),
                document_symbol=types.DocumentSymbolClientCapabilities(hierarchical_document_symbol_support=True),
            ),
            workspace=types.WorkspaceClientCapabilities(
                configuration=True,
                workspace_folders=True,
                symbol=types.WorkspaceSymbolClientCapabilities(),
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

    def _register_handlers(self, client: Any, types: Any) -> None:
        async def on_publish(params: Any) -> None:  # a plain function: pygls sets attributes on it
            await self._on_publish(params)

        handlers: dict[str, Any] = {
            types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: on_publish,
            types.WORKSPACE_CONFIGURATION: lambda params: [self._section(item.section) for item in params.items],
            # Answered so pygls does not reply "method not found"; we have nothing to register.
            types.CLIENT_REGISTER_CAPABILITY: lambda params: None,
            types.WINDOW_WORK_DONE_PROGRESS_CREATE: lambda params: None,
            types.PROGRESS: lambda params: None,
            types.WINDOW_LOG_MESSAGE: lambda params: log.debug("%s: %s", self.config.name, params.message),
            types.WINDOW_SHOW_MESSAGE: lambda params: log.info("%s: %s", self.config.name, params.message),
        }
        for method, handler in handlers.items():
            client.feature(method)(handler)

    async def _on_publish(self, params: Any) -> None:
        now = time.monotonic()
        self.published[params.uri] = Published(params.version, [to_diag(d) for d in params.diagnostics], now)
        self.last_publish = now
        async with self._changed:
            self._changed.notify_all()

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

    async def _request(self, awaitable: Awaitable[T], timeout: float = REQUEST_TIMEOUT_S) -> T:
        """Await a reply, but never longer than ``timeout`` and never after the server died."""
        work = asyncio.ensure_future(awaitable)
        died = asyncio.ensure_future(self._exited.wait())
        try:
            done, _ = await asyncio.wait({work, died}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            died.cancel()
        if work not in done:
            work.cancel()
            if died in done:
                raise LspError(f"{self.config.name} exited (see its log in the state directory)")
            raise LspError(f"{self.config.name} did not answer within {timeout:.0f} s")
        try:
            return work.result()
        except RuntimeError as exc:  # pygls fails pending requests this way when the server exits
            raise LspError(f"{self.config.name}: {exc}") from exc
        except Exception as exc:  # an error reply from the server (JsonRpcException and kin)
            raise LspError(f"{self.config.name} answered with an error: {exc}") from exc

    # --- documents ----------------------------------------------------------------------------

    def sync(self, path: Path, text: str, language_id: str) -> int:
        """Open ``path`` or send its new full text; returns the document version now current."""
        from lsprotocol import types

        uri = path.as_uri()
        if uri not in self.versions:
            self.versions[uri] = 1
            self._client.text_document_did_open(
                types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, language_id, 1, text))
            )
        elif self.texts.get(uri) != text:
            self.versions[uri] += 1
            self._client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
                    [types.TextDocumentContentChangeWholeDocument(text=text)],
                )
            )
            self._client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri)))
        self.texts[uri] = text
        return self.versions[uri]

    async def wait_for_diagnostics(
        self, uri: str, version: int, since: float, *, quiet_s: float, cap_s: float
    ) -> tuple[list[Diag], bool]:
        """Diagnostics for ``uri`` no older than the change at ``since`` (version ``version``).

        Pull servers are asked; push servers are waited for: a publish for this URI that is newer
        than the change and carries this version is final at once; a version-less one is taken
        after ``quiet_s`` without another publish (servers may publish in several rounds).
        Returns (diagnostics, confirmed); a wait that runs out
        is unconfirmed, never "clean".
        """
        if self.supports_pull:
            pulled = await self._pull(uri)
            if pulled is not None:
                return pulled, True
        deadline = since + cap_s

        def fresh() -> Published | None:
            got = self.published.get(uri)
            if got is None or got.received < since:
                return None
            if got.version is not None and got.version < version:
                return None
            return got

        async with self._changed:
            while True:
                got = fresh()
                now = time.monotonic()
                if got is not None and got.version is not None:
                    return got.diagnostics, True  # versioned: exactly the state we sent
                if got is not None and now - got.received >= quiet_s:
                    return got.diagnostics, True
                if now >= deadline or not self.alive:
                    return (got.diagnostics, True) if got is not None else ([], False)
                wait = deadline - now if got is None else min(deadline - now, quiet_s - (now - got.received))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), max(wait, 0.001))

    async def settle(self, quiet_s: float, until: float) -> None:
        """Wait until no document has been published for ``quiet_s`` (or ``until`` passes).

        Diagnostics for *other* files (what a change broke elsewhere) arrive after the changed
        file's own; this lets them land before they are read.
        """
        async with self._changed:
            while self.alive:
                now = time.monotonic()
                quiet_for = now - self.last_publish
                if quiet_for >= quiet_s or now >= until:
                    return
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), min(quiet_s - quiet_for, until - now))

    async def _pull(self, uri: str) -> list[Diag] | None:
        from lsprotocol import types

        try:
            report = await self._request(
                self._client.text_document_diagnostic_async(
                    types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri))
                )
            )
        except LspError:
            return None
        items = getattr(report, "items", None)
        if items is None:
            return None
        return [to_diag(d) for d in items]

    # --- navigation -----------------------------------------------------------------------------

    async def request(self, name: str, params: Any) -> Any:
        method = getattr(self._client, f"{name}_async")
        return await self._request(method(params))

    # --- lifecycle ------------------------------------------------------------------------------

    async def shutdown(self) -> None:
        process, client = self._process, self._client
        if process is None:
            return
        if process.returncode is None and client is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.shutdown_async(None), SHUTDOWN_TIMEOUT_S)
                client.exit(None)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), SHUTDOWN_TIMEOUT_S)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # wrapper servers leave children (node, tsserver)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), SHUTDOWN_TIMEOUT_S)
        if client is not None:
            client._stop_event.set()
            for task in client._async_tasks:
                task.cancel()
        if self._log_file is not None:
            self._log_file.close()
        self._process = None
