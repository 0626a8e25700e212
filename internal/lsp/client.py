"""One language server process and the pygls client that talks to it.

Things pygls leaves to us, each learned the hard way (README, SPEC §4 lsp):
- the server is started here, not by ``start_io``: in its own session (wrapper servers spawn
  node/tsserver children; the whole group is killed), with stderr going straight to a log file
  (a piped stderr nobody reads blocks a chatty server);
- lsprotocol 2025.0.0 cannot decode ``notebookDocumentSync`` in some initialize replies, and an
  undecodable reply never resolves: the converter drops that field, and every request has a timeout;
- server→client requests (configuration, registerCapability, workDoneProgress/create) are answered;
- ``stop()`` hangs unless shutdown and exit were sent: :meth:`shutdown` does both, with short
  timeouts, and only for a server that ever answered; a broken one is killed at once (:meth:`kill`).

Positions: the server's negotiated encoding (UTF-32 when offered, else UTF-16, the default) is
converted to the character columns view shows, both ways.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
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
from .positions import to_char
from .servers import ServerConfig, find_executable
from .uris import uri_to_path

log = logging.getLogger("toolsmith.lsp")
T = TypeVar("T")

#: initialize may take a while on a cold server (basedpyright starts node). Callers on a tool's
#: path pass their own, smaller budget.
INIT_TIMEOUT_S = 30.0
#: Any other request. A navigation request that runs out is cancelled ($/cancelRequest), never a
#: reason to kill the server: a cold server indexing a large project answers later.
REQUEST_TIMEOUT_S = 10.0
#: The liveness probe: a request no server implements, so any server that reads its input
#: answers at once ("method not found"). A reply, or any other message, means alive.
PROBE_METHOD = "toolsmith/ping"
#: tsserver's own diagnostics, asked through typescript-language-server's documented
#: ``typescript.tsserverRequest`` command: tsserver answers in order after the change, so the
#: answer is for the version just sent (its publishes carry no version and it says nothing when a
#: clean file stays clean).
TSSERVER_COMMAND = "typescript.tsserverRequest"
TSSERVER_DIAGNOSTICS = ("syntacticDiagnosticsSync", "semanticDiagnosticsSync")
TSSERVER_SEVERITY = {"error": 1, "warning": 2, "suggestion": 4, "message": 3}
#: A server that answered before gets this long for shutdown, then this long to exit.
SHUTDOWN_TIMEOUT_S = 1.0
#: A server known to stay silent when a clean file stays clean, with no way to confirm: after this
#: much quiet the wait ends early, reported as "no errors reported, unconfirmed" (never "clean").
CLEAN_QUIET_S = 1.0

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


class LspError(Exception):
    pass


_IDS = itertools.count(1)
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


def _route_pygls_logging() -> None:
    """pygls logs ("Ignoring notification for unknown method …") under its own logger, which
    without handlers falls through to Python's last-resort stderr printer. Send it to ours."""
    pygls_log = logging.getLogger("pygls")
    if not pygls_log.handlers:
        pygls_log.addHandler(_Forward())
        pygls_log.propagate = False


class _Forward(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        log.handle(record)


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


class _StampedReader:
    """The server's stdout, noting when anything at all last arrived (liveness, not content)."""

    def __init__(self, reader: asyncio.StreamReader, client: LspClient) -> None:
        self._reader = reader
        self._client = client

    async def readline(self) -> bytes:
        data = await self._reader.readline()
        if data:
            self._client.last_message = time.monotonic()
        return data

    async def readexactly(self, n: int) -> bytes:
        data = await self._reader.readexactly(n)
        self._client.last_message = time.monotonic()
        return data


@dataclass
class Published:
    version: int | None
    diagnostics: list[Diag]
    received: float  # time.monotonic()


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
        self.encoding = "utf-16"
        #: Observed (or known) to stay silent when a file's empty diagnostics do not change.
        self.silent_when_clean = not config.republishes_unchanged
        #: When anything (a reply, a notification, even garbage) last came from the server.
        self.last_message = 0.0
        #: When the outstanding liveness probe was sent (None: none outstanding).
        self.probe_sent: float | None = None
        #: When each document was last sent (a publish older than that is for an older text).
        self.synced_at: dict[str, float] = {}
        self.started_at = time.monotonic()
        self._changed = asyncio.Condition()
        self._process: asyncio.subprocess.Process | None = None
        self._client: Any = None
        self._log_file: Any = None
        self._exited = asyncio.Event()
        self._answered = False
        #: When the last publishDiagnostics (for any document) arrived.
        self.last_publish = 0.0

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.returncode is None

    @property
    def stopped(self) -> bool:
        """The process exists but is stopped (SIGSTOP, a debugger): it cannot answer."""
        if self._process is None:
            return False
        try:
            with open(f"/proc/{self._process.pid}/stat", "rb") as handle:
                return handle.read().rsplit(b")", 1)[1].split()[0] in (b"T", b"t")
        except (OSError, IndexError):
            return False

    @property
    def supports_pull(self) -> bool:
        return getattr(self.capabilities, "diagnostic_provider", None) is not None

    def supports(self, operation: str) -> bool:
        """Does the server offer ``operation`` (a navigation request of the lsp tool)?"""
        value = getattr(self.capabilities, _FEATURES[operation], None)
        return value is not None and value is not False

    async def start(self, timeout: float = INIT_TIMEOUT_S) -> None:
        """Start the server and initialize it within ``timeout``; raises :class:`LspError`."""
        from lsprotocol import types
        from pygls.io_ import run_async
        from pygls.lsp.client import LanguageClient

        _route_pygls_logging()
        executable = find_executable(self.config.command[0])
        if executable is None:
            raise LspError(f"{self.config.command[0]} is not installed")
        log_fd = open_private(self.log_dir / f"{self.config.name}.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        self._log_file = os.fdopen(log_fd, "ab")
        try:
            self._process = await asyncio.create_subprocess_exec(
                executable, *self.config.command[1:],
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=self._log_file,
                cwd=self.root, start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            raise LspError(f"could not be started ({exc.strerror or exc})") from exc
        client: Any = LanguageClient("toolsmith", "0.1", converter_factory=_converter)
        self._client = client
        self._register_handlers(client, types)
        assert self._process.stdin is not None and self._process.stdout is not None
        client.protocol.set_writer(self._process.stdin)
        client._async_tasks.append(
            asyncio.ensure_future(
                run_async(
                    stop_event=client._stop_event,
                    reader=_StampedReader(self._process.stdout, self),
                    protocol=client.protocol,
                    logger=log,
                )
            )
        )
        client._async_tasks.append(asyncio.ensure_future(self._watch_exit(self._process)))
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

    async def _watch_exit(self, process: asyncio.subprocess.Process) -> None:
        """Wake anyone waiting for diagnostics as soon as the server dies."""
        await process.wait()
        log.info("%s exited with code %s", self.config.name, process.returncode)
        if self._client is not None:  # fail pending requests now rather than at their timeout
            reason = f"exited with code {process.returncode} (its log is in the state directory)"
            for future in list(self._client.protocol._request_futures.values()):
                if not future.done():
                    future.set_exception(RuntimeError(reason))
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
            general=types.GeneralClientCapabilities(
                position_encodings=[types.PositionEncodingKind.Utf32, types.PositionEncodingKind.Utf16]
            ),
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
        text = self.texts.get(params.uri)
        lines = text.split("\n") if text is not None else None
        diags = [self._to_diag(d, lines) for d in params.diagnostics]
        self.published[params.uri] = Published(params.version, diags, now)
        if params.version is None:
            # Without versions a server cannot tell us "this is your state, still clean"; those
            # seen here (typescript-language-server) then say nothing at all: expect that.
            self.silent_when_clean = True
        self.last_publish = now
        self._answered = True
        async with self._changed:
            self._changed.notify_all()

    def _to_diag(self, d: Any, lines: list[str] | None) -> Diag:
        line, column = d.range.start.line, d.range.start.character
        if lines is not None and 0 <= line < len(lines):
            column = to_char(lines[line], column, self.encoding)
        code = d.code
        return Diag(
            line=line,
            character=column,
            severity=int(d.severity) if d.severity is not None else 1,
            message=d.message,
            source=d.source,
            code=str(code) if code is not None else None,
        )

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

    async def _request(self, awaitable: Awaitable[T], timeout: float = REQUEST_TIMEOUT_S, what: str = "") -> T:
        """Await a reply, but never longer than ``timeout`` and never after the server died."""
        work = asyncio.ensure_future(awaitable)
        work.add_done_callback(lambda f: f.cancelled() or f.exception())  # a late failure is not news
        died = asyncio.ensure_future(self._exited.wait())
        try:
            done, _ = await asyncio.wait({work, died}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            died.cancel()
        if work not in done:
            work.cancel()
            if died in done:
                code = self._process.returncode if self._process else None
                raise LspError(f"exited with code {code} (its log is in the state directory)")
            raise LspError(f"did not answer {what or 'a request'} within {timeout:.0f} s")
        try:
            return work.result()
        except RuntimeError as exc:  # pygls fails pending requests this way when the server exits
            raise LspError(str(exc)) from exc
        except Exception as exc:  # an error reply from the server (JsonRpcException and kin)
            raise LspError(f"answered with an error: {exc}") from exc

    # --- documents ----------------------------------------------------------------------------

    def sync(self, path: Path, text: str, language_id: str) -> int:
        """Open ``path`` or send its new full text; returns the document version now current."""
        from lsprotocol import types

        uri = path.as_uri()
        if uri not in self.versions:
            self.versions[uri] = 1
            self.synced_at[uri] = time.monotonic()
            self._client.text_document_did_open(
                types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, language_id, 1, text))
            )
        elif self.texts.get(uri) != text:
            self.versions[uri] += 1
            self.synced_at[uri] = time.monotonic()
            self._client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
                    [types.TextDocumentContentChangeWholeDocument(text=text)],
                )
            )
            self._client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri)))
        self.texts[uri] = text
        return self.versions[uri]

    def fresh(self, uri: str) -> Published | None:
        """The last publish for ``uri`` if it is for the text last sent (else None)."""
        got = self.published.get(uri)
        if got is None or got.received < self.synced_at.get(uri, 0.0):
            return None
        if got.version is not None and got.version < self.versions.get(uri, 0):
            return None
        return got

    async def wait_for_diagnostics(self, uri: str, *, quiet_s: float, cap_s: float) -> tuple[list[Diag], str]:
        """Diagnostics for the text of ``uri`` last sent, within ``cap_s``.

        Returns (diagnostics, status): "confirmed" when the server answered for this version (a
        pull answer, tsserver's own answer, a versioned publish, or a version-less publish after
        the change followed by ``quiet_s`` of quiet); "quiet" when a server that says nothing for
        a file that stays clean said nothing for CLEAN_QUIET_S after the file's last publish was
        empty (likely clean, not confirmed); "none" when nothing came within the cap.
        """
        since = self.synced_at.get(uri, time.monotonic())
        deadline = time.monotonic() + cap_s
        if self.supports_pull:
            pulled = await self._pull(uri, cap_s)
            if pulled is not None:
                return pulled, "confirmed"
        if self.tsserver_confirms:
            asked = await self._tsserver_diagnostics(uri, cap_s)
            if asked is not None:
                return asked, "confirmed"
        previous = self.published.get(uri)
        was_clean = previous is not None and previous.received < since and not previous.diagnostics

        async with self._changed:
            while True:
                got = self.fresh(uri)
                now = time.monotonic()
                if got is not None and (got.version is not None or now - got.received >= quiet_s):
                    return got.diagnostics, "confirmed"
                if got is None and was_clean and self.silent_when_clean and now - since >= CLEAN_QUIET_S:
                    return [], "quiet"
                if now >= deadline or not self.alive:
                    return (got.diagnostics, "confirmed") if got is not None else ([], "none")
                wait = deadline - now if got is None else min(deadline - now, quiet_s - (now - got.received))
                if got is None and was_clean and self.silent_when_clean:
                    wait = min(wait, since + CLEAN_QUIET_S - now)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), max(wait, 0.001))

    @property
    def tsserver_confirms(self) -> bool:
        commands = getattr(getattr(self.capabilities, "execute_command_provider", None), "commands", None) or ()
        return TSSERVER_COMMAND in commands

    async def _tsserver_diagnostics(self, uri: str, timeout: float) -> list[Diag] | None:
        """tsserver's syntactic and semantic diagnostics for ``uri`` now (None: no answer in time)."""
        from lsprotocol import types

        path = str(uri_to_path(uri))
        deadline = time.monotonic() + timeout
        out: list[Diag] = []
        for command in TSSERVER_DIAGNOSTICS:
            params = types.ExecuteCommandParams(command=TSSERVER_COMMAND, arguments=[command, {"file": path}])
            try:
                answer = await self.call("workspace/executeCommand", params, max(deadline - time.monotonic(), 0.01))
            except LspError as exc:
                log.info("%s: %s for %s: %s", self.config.name, command, path, exc)
                return None
            body = answer.get("body") if isinstance(answer, dict) else None
            if not isinstance(body, list):
                return None
            out += [self._tsserver_diag(item, uri) for item in body if isinstance(item, dict)]
        return out

    def _tsserver_diag(self, item: dict[str, Any], uri: str) -> Diag:
        start = item.get("start") or {}
        line, offset = int(start.get("line", 1)) - 1, int(start.get("offset", 1)) - 1
        lines = (self.texts.get(uri) or "").split("\n")
        if 0 <= line < len(lines):
            offset = to_char(lines[line], offset, "utf-16")  # tsserver counts UTF-16 units
        code = item.get("code")
        return Diag(
            line=line,
            character=offset,
            severity=TSSERVER_SEVERITY.get(str(item.get("category")), 1),
            message=str(item.get("text", "")),
            source="typescript",
            code=str(code) if code is not None else None,
        )

    # --- liveness -----------------------------------------------------------------------------

    def probe(self) -> None:
        """Send a liveness probe unless one is outstanding; its reply (or any message) is the
        sign of life :meth:`hung` looks for."""
        if self._client is None or self.probe_sent is not None or not self.alive:
            return
        sent = time.monotonic()
        self.probe_sent = sent
        future = self._client.protocol.send_request_async(PROBE_METHOD, None)

        def answered(reply: Any) -> None:
            if not reply.cancelled():
                reply.exception()  # "method not found" is the expected answer: retrieved, not logged
            if self.probe_sent == sent:
                self.probe_sent = None

        future.add_done_callback(answered)

    def hung(self, after_s: float) -> bool:
        """Nothing at all from the server for ``after_s`` since a probe was sent: it reads no input
        and writes no output. A busy server (progress, publishes, the probe's reply) never is."""
        sent = self.probe_sent
        return sent is not None and self.last_message < sent and time.monotonic() - sent >= after_s

    def may_report_elsewhere(self, touched: set[str]) -> bool:
        """Whether a change to ``touched`` can move diagnostics this server shows for other files:
        it checks across files and has another file open or published."""
        if self.config.per_file:
            return False
        return any(uri not in touched for uri in (*self.texts, *self.published))

    async def first_publish(self, uri: str, until: float) -> None:
        """Wait until the server published for ``uri`` at all (or ``until`` passes)."""
        async with self._changed:
            while self.alive and uri not in self.published:
                left = until - time.monotonic()
                if left <= 0:
                    return
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), left)

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

    async def _pull(self, uri: str, timeout: float) -> list[Diag] | None:
        from lsprotocol import types

        try:
            report = await self.call(
                types.TEXT_DOCUMENT_DIAGNOSTIC,
                types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri)),
                timeout,
            )
        except LspError:
            return None
        items = getattr(report, "items", None)
        if items is None:
            return None
        text = self.texts.get(uri)
        lines = text.split("\n") if text is not None else None
        return [self._to_diag(d, lines) for d in items]

    # --- navigation -----------------------------------------------------------------------------

    async def request(self, name: str, params: Any) -> Any:
        """A navigation request (``text_document_definition`` …) within REQUEST_TIMEOUT_S."""
        return await self.call(_METHODS[name], params, REQUEST_TIMEOUT_S)

    async def call(self, method: str, params: Any, timeout: float) -> Any:
        """Any request, cancelled with ``$/cancelRequest`` when it runs out: a slow answer is
        not a dead server, and the server should stop working on a question nobody waits for."""
        msg_id = f"toolsmith-{next(_IDS)}"
        try:
            return await self._request(
                self._client.protocol.send_request_async(method, params, msg_id=msg_id), timeout, method
            )
        except LspError:
            if self.alive and msg_id in self._client.protocol._request_futures:
                self._client.protocol._request_futures.pop(msg_id, None)
                with contextlib.suppress(Exception):
                    from lsprotocol import types  # pygls serialises by the method's declared type

                    self._client.protocol.notify("$/cancelRequest", types.CancelParams(id=msg_id))
            raise

    # --- lifecycle ------------------------------------------------------------------------------

    async def shutdown(self) -> None:
        """A polite shutdown for a server that answers; an immediate kill for any other."""
        process, client = self._process, self._client
        if process is None:
            return
        if process.returncode is None and client is not None and self._answered and not self.stopped:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.shutdown_async(None), SHUTDOWN_TIMEOUT_S)
                client.exit(None)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), SHUTDOWN_TIMEOUT_S)
        await self.kill()

    async def kill(self) -> None:
        """Kill the whole process group now (wrapper servers leave node/tsserver children)."""
        process, client = self._process, self._client
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), SHUTDOWN_TIMEOUT_S)
        if client is not None:
            client._stop_event.set()
            for task in client._async_tasks:
                task.cancel()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        self._process = None
