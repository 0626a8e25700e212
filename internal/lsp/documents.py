"""The documents a server has open and the diagnostics it reports for them.

Every document is sent whole (open, then full-text changes and a save). Diagnostics for the text
last sent come one of two ways:

- **asked** (an answer that means this version): pull diagnostics (``textDocument/diagnostic``,
  offered statically, registered dynamically — basedpyright's way — or simply answered), else
  tsserver's own answer (tsserver.py). Every server is asked once; one that answers "method not
  found" is never asked again and is listened to instead. An answer holds for the *state* it
  was asked in: the texts sent that differ from what each document was first opened with (the
  disk's). Any other text sent since (this file's or another's) makes it old; opening a file
  does not, nor a change that is undone.
- **pushed** (``publishDiagnostics``), for servers that cannot be asked: a publish that names the
  version last sent, or — from a server that omits versions — one that arrived after the change
  was sent and was followed by quiet.

Columns arrive in the server's negotiated encoding and are kept as the character columns view shows.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..logs import logger
from .api import LspError
from .connection import ServerConnection
from .diagnostics import Diag
from .positions import to_char
from .servers import ServerConfig
from .tsserver import offers_tsserver_requests, tsserver_diagnostics

log = logger("toolsmith.lsp")

#: The pull diagnostics request, offered statically (diagnosticProvider) or registered later.
PULL_METHOD = "textDocument/diagnostic"
#: The JSON-RPC error code of "method not found": a server that cannot be asked.
METHOD_NOT_FOUND = -32601
#: One ask (a pull, or tsserver's two requests) runs at most this long. A caller that waits less
#: leaves it running: its answer serves the next call in the same state.
ASK_TIMEOUT_S = 30.0
#: A server known to stay silent when a clean file stays clean, with no way to confirm: after this
#: much quiet the wait ends early, reported as "no errors reported, unconfirmed" (never "clean").
CLEAN_QUIET_S = 1.0


@dataclass
class Published:
    version: int | None
    diagnostics: list[Diag]
    received: float  # time.monotonic()


@dataclass(frozen=True)
class Answer:
    """A server's answer when asked for a document's diagnostics, and the state asked in."""

    diagnostics: list[Diag]
    state: int


class ServerDocuments(ServerConnection):
    """What one server has been sent (texts, versions) and what it reported for them."""

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
        #: Ids of the server's dynamic registrations of pull diagnostics (basedpyright's way).
        self.pull_registrations: set[str] = set()
        #: The server answered a pull with "method not found": it is listened to instead.
        self.pull_refused = False
        #: What the server's documents say, as one number: the XOR over documents of their text's
        #: hash against their first text's (0 while every document is as first opened).
        self.state = 0
        self._first_hash: dict[str, int] = {}
        self._contribution: dict[str, int] = {}
        self.answers: dict[str, Answer] = {}
        #: How long an ask has been taking lately (None: none answered yet).
        self.ask_seconds: float | None = None
        self._asking: dict[str, tuple[int, asyncio.Future[list[Diag] | None]]] = {}

    @property
    def tsserver_confirms(self) -> bool:
        return offers_tsserver_requests(self.capabilities)

    @property
    def can_ask(self) -> bool:
        """Whether diagnostics are asked for (pull, tsserver) rather than waited for (push)."""
        return not self.pull_refused or self.tsserver_confirms

    def sync(self, path: Path, text: str, language_id: str) -> int:
        """Open ``path`` or send its new full text; returns the document version now current."""
        from lsprotocol import types

        uri = path.as_uri()
        if uri not in self.versions:
            self.versions[uri] = 1
            self._sent(uri, text, opened=True)
            self._client.text_document_did_open(
                types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, language_id, 1, text))
            )
        elif self.texts.get(uri) != text:
            self.versions[uri] += 1
            self._sent(uri, text, opened=False)
            self._client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
                    [types.TextDocumentContentChangeWholeDocument(text=text)],
                )
            )
            self._client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri)))
        self.texts[uri] = text
        return self.versions[uri]

    def _sent(self, uri: str, text: str, *, opened: bool) -> None:
        self.synced_at[uri] = time.monotonic()
        digest = hash((uri, text))
        if opened:  # what the server would read from disk anyway: the state stays
            self._first_hash[uri] = digest
            self._contribution[uri] = 0
            return
        contribution = digest ^ self._first_hash[uri]
        state = self.state ^ self._contribution[uri] ^ contribution
        self._contribution[uri] = contribution
        if state != self.state:
            self.state = state
            for _state, task in self._asking.values():  # questions about a state that is gone
                task.cancel()

    def fresh(self, uri: str) -> list[Diag] | None:
        """Diagnostics known to be for the text last sent (None: none yet): the answer asked in
        this state, or — from a server that cannot be asked — a publish for this version."""
        if self.can_ask:
            answer = self.answers.get(uri)
            return answer.diagnostics if answer is not None and answer.state == self.state else None
        got = self._published_since_sync(uri)
        return got.diagnostics if got is not None else None

    def _published_since_sync(self, uri: str) -> Published | None:
        got = self.published.get(uri)
        if got is None or got.received < self.synced_at.get(uri, 0.0):
            return None
        if got.version is not None and got.version < self.versions.get(uri, 0):
            return None
        return got

    # --- asked --------------------------------------------------------------------------------

    async def ask(self, uri: str, timeout: float) -> list[Diag] | None:
        """The server's answer for ``uri`` in this state, waiting at most ``timeout``: None when
        it has not come yet (the ask goes on for the next call) or the server cannot be asked
        (then :attr:`can_ask` is False). One ask per document and state; an ask about a state
        that is gone is cancelled."""
        if not self.can_ask:
            return None
        state = self.state
        answer = self.answers.get(uri)
        if answer is not None and answer.state == state:
            return answer.diagnostics
        running = self._asking.get(uri)
        if running is not None and running[0] == state and not running[1].done():
            task = running[1]
        else:
            if running is not None:
                running[1].cancel()
            task = asyncio.ensure_future(self._fetch(uri, state))
            task.add_done_callback(lambda t: t.cancelled() or t.exception())  # retrieved: a late failure is not news
            self._asking[uri] = (state, task)
        done, _ = await asyncio.wait({task}, timeout=max(timeout, 0.001))
        if not done or task.cancelled():
            return None
        if task.exception() is not None:  # the connection broke under it: no answer, never a crash
            log.info("%s: asking about %s failed: %r", self.config.name, uri, task.exception())
            return None
        return task.result()

    async def _fetch(self, uri: str, state: int) -> list[Diag] | None:
        text = self.texts.get(uri, "")
        began = time.monotonic()
        try:
            found = await self._pull(uri, text) if not self.pull_refused else None
            if found is None and self.pull_refused and self.tsserver_confirms:
                found = await tsserver_diagnostics(self, uri, text, ASK_TIMEOUT_S)
        finally:
            if self._asking.get(uri, (None,))[0] == state:
                del self._asking[uri]
        if found is not None:
            self.answers[uri] = Answer(found, state)
            self._answered = True
            took = time.monotonic() - began
            self.ask_seconds = took if self.ask_seconds is None else (self.ask_seconds + took) / 2
        return found

    async def _pull(self, uri: str, text: str) -> list[Diag] | None:
        from lsprotocol import types

        try:
            report = await self.call(
                PULL_METHOD, types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri)),
                ASK_TIMEOUT_S,
            )  # fmt: skip
        except LspError as exc:
            if exc.code == METHOD_NOT_FOUND:
                log.info("%s does not answer pull diagnostics: listening to its publishes", self.config.name)
                self.pull_refused = True
            else:
                log.info("%s: pull diagnostics for %s: %s", self.config.name, uri, exc)
            return None
        items = getattr(report, "items", None)
        if items is None:
            return None
        lines = text.split("\n")
        return [self._to_diag(d, lines) for d in items]

    # --- pushed -------------------------------------------------------------------------------

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

        Returns (diagnostics, status): "confirmed" when the server answered for this version (an
        answer asked in this state, a versioned publish, or a version-less publish after
        the change followed by ``quiet_s`` of quiet); "quiet" when a server that says nothing for
        a file that stays clean said nothing for CLEAN_QUIET_S after the file's last publish was
        empty (likely clean, not confirmed); "none" when nothing came within the cap.
        """
        since = self.synced_at.get(uri, time.monotonic())
        deadline = time.monotonic() + cap_s
        if self.can_ask:
            asked = await self.ask(uri, cap_s)
            if asked is not None:
                return asked, "confirmed"
            if self.can_ask:
                return [], "none"
        previous = self.published.get(uri)
        was_clean = previous is not None and previous.received < since and not previous.diagnostics

        async with self._changed:
            while True:
                got = self._published_since_sync(uri)
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

    async def settle(self, quiet_s: float, since: float, until: float) -> None:
        """Wait until no document has been published for ``quiet_s`` counted from ``since`` (the
        change) or the last publish after it, whichever is later (or ``until`` passes).

        Diagnostics for *other* files (what a change broke elsewhere) arrive after the changed
        file's own; this lets them land before they are read. A report from before the change
        never ends the wait: it says nothing about the change.
        """
        async with self._changed:
            while self.alive:
                now = time.monotonic()
                quiet_for = now - max(self.last_publish, since)
                if quiet_for >= quiet_s or now >= until:
                    return
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), min(quiet_s - quiet_for, until - now))

    async def kill(self) -> None:
        for _state, task in list(self._asking.values()):
            task.cancel()
        self._asking.clear()
        await super().kill()
