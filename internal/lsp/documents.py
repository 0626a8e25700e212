"""The documents a server has open and the diagnostics it reports for them.

Every document is sent whole (open, then full-text changes and a save); each diagnostics wait is
for the text last sent: a pull answer, tsserver's own answer, a versioned publish, or a
version-less publish followed by quiet. Columns arrive in the server's negotiated encoding and are
kept as the character columns view shows.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..fsutil.uris import uri_to_path
from ..logs import logger
from .api import LspError
from .connection import ServerConnection
from .diagnostics import Diag
from .positions import to_char
from .servers import ServerConfig

log = logger("toolsmith.lsp")

#: tsserver's own diagnostics, asked through typescript-language-server's documented
#: ``typescript.tsserverRequest`` command: tsserver answers in order after the change, so the
#: answer is for the version just sent (its publishes carry no version and it says nothing when a
#: clean file stays clean).
TSSERVER_COMMAND = "typescript.tsserverRequest"
TSSERVER_DIAGNOSTICS = ("syntacticDiagnosticsSync", "semanticDiagnosticsSync")
TSSERVER_SEVERITY = {"error": 1, "warning": 2, "suggestion": 4, "message": 3}
#: A server known to stay silent when a clean file stays clean, with no way to confirm: after this
#: much quiet the wait ends early, reported as "no errors reported, unconfirmed" (never "clean").
CLEAN_QUIET_S = 1.0


@dataclass
class Published:
    version: int | None
    diagnostics: list[Diag]
    received: float  # time.monotonic()


class ServerDocuments(ServerConnection):
    """What one server has been sent (texts, versions) and what it published for them."""

    def __init__(self, config: ServerConfig, root: Path, log_dir: Path) -> None:
        super().__init__(config, root, log_dir)
        self.published: dict[str, Published] = {}
        self.versions: dict[str, int] = {}
        self.texts: dict[str, str] = {}
        #: Negotiated at initialize (LspClient.start): what the server offers, how it counts columns.
        self.capabilities: Any = None
        self.encoding = "utf-16"
        #: Observed (or known) to stay silent when a file's empty diagnostics do not change.
        self.silent_when_clean = not config.republishes_unchanged
        #: When each document was last sent (a publish older than that is for an older text).
        self.synced_at: dict[str, float] = {}
        #: When the last publishDiagnostics (for any document) arrived.
        self.last_publish = 0.0

    @property
    def supports_pull(self) -> bool:
        return getattr(self.capabilities, "diagnostic_provider", None) is not None

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
