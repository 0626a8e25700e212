"""Other files a change can break: which are checked, their picture before the change (taken from
the old text), after it, and the errors they gained.

- **Which**: the files that use what changed — references of the changed definitions (the
  server's ``textDocument/references`` on the old text, when it answers within
  REFERENCES_BUDGET_S), then the module's importers that name a changed name (rg) — or every
  importer when the change touched top-level code that defines no name. At most
  MAX_OTHER_FILES_CHECKED, whoever started the servers.
- **Before**: each server that can be asked (pull, tsserver) first gets the changed files' old
  texts, then is asked about every checked file; a server that can only push is listened to.
- **After**: the same questions once the new texts are sent (answers, or publishes that follow
  the change: a report from before it never ends the wait).
- **Gained**: errors present after and not before — nor in the file's first picture of the
  session (its untouched state), so a revert is never blamed for an old error that a breakage
  had hidden. A file without a picture from before is not judged: it is named as unconfirmed.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..fsutil.uris import uri_to_path
from ..logs import logger
from ..vocabulary import has_tool, tool_name
from .api import LspError
from .changes import ChangedNames, NamePlace, Region, changed_names
from .client import LspClient
from .diagnostics import ERROR, Diag, merge, shown_path
from .importers import importers_of
from .positions import from_char
from .servers import language_id

log = logger("toolsmith.lsp")

#: Other files checked after a change (the report shows OTHER_FILES_SHOWN of those that broke).
MAX_OTHER_FILES_CHECKED = 10
#: How long the server's references of the changed names are waited for, before the import
#: graph alone decides (a cold server indexing a large project answers later).
REFERENCES_BUDGET_S = 0.8
#: Push-only servers: other files' reports are waited for until the server has been quiet this
#: long since the change (or its last report after the change).
SETTLE_QUIET_S = 1.0
#: Files named in an "unconfirmed" note about other files, at most.
MAX_NAMED_UNCONFIRMED = 5

ErrorKeys = Counter[tuple[str, str | None]]


def error_keys(diags: Iterable[Diag]) -> ErrorKeys:
    """A file's errors as a multiset of (message, code): positions left out, so that lines moving
    in a file never make an old error look new."""
    return Counter((" ".join(d.message.split()), d.code) for d in diags if d.severity == ERROR)


def gained_errors(after: Iterable[Diag], before: ErrorKeys, pristine: ErrorKeys | None) -> list[Diag]:
    """The errors of ``after`` beyond those of ``before`` and of the file's untouched state."""
    budget = before | pristine if pristine is not None else Counter(before)
    gained = []
    for diag in after:
        if diag.severity != ERROR:
            continue
        key = (" ".join(diag.message.split()), diag.code)
        if budget[key] > 0:
            budget[key] -= 1
        else:
            gained.append(diag)
    return gained


@dataclass
class Changed:
    """One changed file: its text before (None: unknown, or the file is new) and after."""

    path: Path
    old: str | None
    new: str
    regions: list[Region]


@dataclass
class Watch:
    """One change's other files: what each server was asked before, or what it had published."""

    targets: list[str] = field(default_factory=list)
    touched: set[str] = field(default_factory=set)
    asked: dict[tuple[LspClient, str], ErrorKeys] = field(default_factory=dict)
    #: The servers that check across files; those that cannot be asked are listened to.
    cross: list[LspClient] = field(default_factory=list)
    #: Before the change, by server: what it had published for each file.
    published_before: dict[LspClient, dict[str, ErrorKeys]] = field(default_factory=dict)
    unjudged: list[str] = field(default_factory=list)
    #: Candidates beyond MAX_OTHER_FILES_CHECKED, never checked.
    beyond: int = 0
    #: Whether the search for the files that use what changed ended in time.
    searched: bool = True
    #: When the new texts were sent.
    since: float = 0.0


class OtherFiles:
    """The other-files side of a session's changes, and each file's picture in the untouched
    project: every file the session changed at its text before the session's first change to it
    (``originals``; None for a file the session created)."""

    def __init__(self, workspace: Path, rg_path: Callable[[], str | None], originals: dict[Path, str | None]) -> None:
        self.workspace = workspace
        self._rg_path = rg_path
        self.originals = originals
        #: By (server name — "NAME published" for what a server that cannot be asked published —, URI).
        self.pristine: dict[tuple[str, str], ErrorKeys] = {}
        self._references: dict[tuple[str, str], list[Path]] = {}

    def _untouched(self, client: LspClient) -> bool:
        """Whether ``client`` sees the project as it was before the session changed anything (the
        files it created aside: nothing old can have depended on them)."""
        return all(
            client.texts.get(path.as_uri()) == text
            for path, text in list(self.originals.items())  # a snapshot: commits add to it from their thread
            if text is not None and _handles(client, path)
        )

    def _reverted(self, client: LspClient) -> bool:
        """Whether the session's changes are all undone for ``client``: every changed file back
        at its original text, every created one gone. Then nothing another file shows is new."""
        created = [path for path, text in list(self.originals.items()) if text is None]
        return self._untouched(client) and not any(path.exists() for path in created)

    def _seen_untouched(self, key: tuple[str, str], keys: ErrorKeys) -> ErrorKeys:
        """A picture taken while the server saw the untouched project. Every such picture is
        kept (the most of each error any of them had): a server may answer the same texts
        differently depending on what it checked before (basedpyright's inferred types in
        Django's circular imports), and an error the untouched project showed once is old."""
        self.pristine[key] = self.pristine.get(key, Counter()) | keys
        return self.pristine[key]

    def _at_original(self, client: LspClient, uri: str) -> bool:
        """Whether ``client`` has the file as it was in the untouched project (one the session
        changed counts only while its text is back to what it was): only then does the file's
        untouched picture measure its errors."""
        path = uri_to_path(uri)
        return path not in self.originals or client.texts.get(uri) == self.originals[path]

    def clear(self) -> None:
        self.pristine.clear()
        self._references.clear()

    async def before(self, changed: list[Changed], clients: list[LspClient], deadline: float) -> Watch:
        cross = [c for c in dict.fromkeys(clients) if not c.config.per_file and c.alive]
        watch = Watch(touched={c.path.as_uri() for c in changed}, cross=cross)
        if not cross:
            return watch
        for client in cross:
            if client.can_ask:  # the picture before is of the old text, whatever the disk says now
                for change in changed:
                    if change.old is not None and _handles(client, change.path):
                        _send(client, change.path, change.old)
        touched = {c.path for c in changed}
        found, watch.searched = await self._targets(changed, cross, deadline)
        candidates = [t for t in found if t not in touched]
        # Files a server has open first (the session looked at them, or checked them before).
        candidates.sort(key=lambda t: not any(t.as_uri() in c.texts for c in cross))
        targets = candidates[:MAX_OTHER_FILES_CHECKED]
        watch.targets = [t.as_uri() for t in targets]
        watch.beyond = len(candidates) - len(targets)
        opened: list[tuple[LspClient, str]] = []
        for client in cross:
            for target in (t for t in targets if _handles(client, t)):
                if target.as_uri() not in client.texts:
                    try:
                        text = target.read_text(encoding="utf-8", errors="replace")
                    except OSError:
                        continue
                    client.sync(target, text, language_id(client.config, target))
                    opened.append((client, target.as_uri()))
        await self._picture_asked(watch, cross, targets, deadline)
        pushing = [c for c in cross if not c.can_ask]
        pending = [(c, uri) for c, uri in opened if c in pushing]
        await asyncio.gather(*(client.first_publish(uri, deadline) for client, uri in pending))
        # Kept for every server: one not asked yet may turn out to answer "method not found".
        for client in cross:
            before = {uri: error_keys(p.diagnostics) for uri, p in client.published.items()}
            watch.published_before[client] = before
            if self._untouched(client):
                for uri, keys in before.items():
                    self._seen_untouched((f"{client.config.name} published", uri), keys)
        return watch

    async def _picture_asked(self, watch: Watch, cross: list[LspClient], targets: list[Path], deadline: float) -> None:
        askable = [c for c in cross if c.can_ask]
        pictures = await asyncio.gather(
            *(_ask_in_turn(c, [t.as_uri() for t in targets if _handles(c, t)], deadline) for c in askable)
        )
        for client, answers in zip(askable, pictures, strict=True):
            untouched = self._untouched(client)
            for uri, got in answers.items():
                if got is not None:
                    keys = error_keys(got)
                    watch.asked[(client, uri)] = keys
                    if untouched:
                        self._seen_untouched((client.config.name, uri), keys)
                elif client.can_ask and uri not in watch.unjudged:
                    watch.unjudged.append(uri)

    async def after(self, watch: Watch, until: float) -> tuple[dict[str, list[Diag]], list[str]]:
        """The errors each checked file gained (by URI, in the order checked) and the URIs that
        could not be judged (no answer before the change, or none by ``until`` after it)."""
        by_client: dict[LspClient, list[str]] = {}
        for client, uri in watch.asked:
            by_client.setdefault(client, []).append(uri)
        clients = list(by_client)
        answers = await asyncio.gather(*(_ask_in_turn(c, by_client[c], until) for c in clients))
        found: dict[str, list[list[Diag]]] = {}
        unconfirmed = list(watch.unjudged)
        unsure: dict[LspClient, dict[str, list[Diag]]] = {}  # gained, but the untouched state is unknown
        for client, answered in zip(clients, answers, strict=True):
            reverted = self._reverted(client)  # a full revert: nothing can be new
            for uri, got in answered.items():
                if got is None:
                    unconfirmed.append(uri)
                    continue
                if reverted:
                    self._seen_untouched((client.config.name, uri), error_keys(got))
                    continue
                at_original = self._at_original(client, uri)
                pristine = self.pristine.get((client.config.name, uri)) if at_original else None
                gained = gained_errors(got, watch.asked[(client, uri)], pristine)
                if gained and pristine is None and at_original:
                    unsure.setdefault(client, {})[uri] = got
                elif gained:
                    found.setdefault(uri, []).append(gained)
        for client, pending in unsure.items():
            for uri, judged in (await self._judge_unsure(client, watch, pending, until)).items():
                if judged is None:
                    unconfirmed.append(uri)
                elif judged:
                    found.setdefault(uri, []).append(judged)
        pushing = [c for c in watch.cross if not c.can_ask and c.alive]
        moving = [c for c in pushing if c.may_report_elsewhere(watch.touched)]
        await asyncio.gather(*(c.settle(SETTLE_QUIET_S, watch.since, until) for c in moving))
        for client in (c for c in pushing if not self._reverted(c)):  # after a full revert, nothing is new
            before = watch.published_before.get(client, {})
            for uri, published in client.published.items():
                if uri in before and uri not in watch.touched:
                    untouched = self._at_original(client, uri)
                    pristine = self.pristine.get((f"{client.config.name} published", uri)) if untouched else None
                    gained = gained_errors(published.diagnostics, before[uri], pristine)
                    if gained:
                        found.setdefault(uri, []).append(gained)
        order = {uri: i for i, uri in enumerate(watch.targets)}
        ordered = sorted(found, key=lambda uri: order.get(uri, len(order)))
        return {uri: merge(found[uri]) for uri in ordered}, list(dict.fromkeys(unconfirmed))

    async def _judge_unsure(
        self, client: LspClient, watch: Watch, pending: dict[str, list[Diag]], until: float
    ) -> dict[str, list[Diag] | None]:
        """Errors gained by files whose picture in the untouched project is unknown (the first
        chance to take it was missed): the server is shown the untouched project (the session's
        changed files at their original texts), asked about them, then given the texts back. An
        error there before the session changed anything is not gained; None: not known in time."""
        restorable = {p: t for p, t in list(self.originals.items()) if t is not None and _handles(client, p)}
        now = {p: client.texts.get(p.as_uri()) for p in restorable}
        for path, original in restorable.items():
            _send(client, path, original)
        try:
            pictures = await _ask_in_turn(client, list(pending), until)
        finally:
            for path, current in now.items():
                _send(client, path, current if current is not None else _disk_text(path))
        out: dict[str, list[Diag] | None] = {}
        for uri, got in pictures.items():
            if got is None:
                out[uri] = None
                continue
            pristine = self._seen_untouched((client.config.name, uri), error_keys(got))
            out[uri] = gained_errors(pending[uri], watch.asked[(client, uri)], pristine)
        return out

    async def _targets(
        self, changed: list[Changed], cross: list[LspClient], deadline: float
    ) -> tuple[list[Path], bool]:
        """The files that may use what changed (users of the changed names, best first), and
        whether every search for them ended in time."""
        found: list[Path] = []
        complete = True
        for change in changed:
            if change.old is not None and not change.regions:
                continue  # nothing changed in it
            names = (
                changed_names(change.path, change.old, change.new, change.regions)
                if change.old is not None
                else ChangedNames(anything=True)
            )
            wanted = None if names.anything else names.names
            left = max(deadline - time.monotonic(), 0.01)
            users, importers = await asyncio.gather(
                self._users(change.path, names.old if wanted else [], cross, deadline),
                importers_of(change.path, self.workspace, self._rg_path(), wanted, left),
            )
            found += users + (importers or [])
            complete = complete and importers is not None
        return [p for p in dict.fromkeys(found) if p.is_file()], complete

    async def _users(self, path: Path, places: list[NamePlace], cross: list[LspClient], deadline: float) -> list[Path]:
        """Files holding references to the changed definitions (the server's answer, on the old
        text; remembered per name for the session)."""
        from lsprotocol import types

        if not places:
            return []
        able = [
            c
            for c in cross
            if c.supports("references") and _handles(c, path) and path.as_uri() in c.texts and c.answers
        ]  # a server that has answered nothing yet is still loading: its references would come late
        if not able:
            return []
        client = able[0]
        lines = client.texts[path.as_uri()].split("\n")
        budget = min(REFERENCES_BUDGET_S, max(deadline - time.monotonic(), 0.0))

        async def one(place: NamePlace) -> list[Path]:
            key = (path.as_uri(), place.name)
            if key in self._references:
                return self._references[key]
            text = lines[place.line] if place.line < len(lines) else ""
            position = types.Position(place.line, from_char(text, place.character, client.encoding))
            params = types.ReferenceParams(
                context=types.ReferenceContext(include_declaration=False),
                text_document=types.TextDocumentIdentifier(path.as_uri()),
                position=position,
            )
            try:
                answer = await client.call("textDocument/references", params, budget)
            except LspError as exc:
                log.info("references of %s in %s: %s", place.name, path, exc)
                return []
            files = [uri_to_path(loc.uri) for loc in answer or [] if getattr(loc, "uri", None)]
            users = [f for f in dict.fromkeys(files) if f != path and _inside(f, self.workspace)]
            self._references[key] = users
            return users

        found = await asyncio.gather(*(one(place) for place in places))
        return [p for users in found for p in users]


async def _ask_in_turn(client: LspClient, uris: list[str], deadline: float) -> dict[str, list[Diag] | None]:
    """``client``'s answer for each of ``uris``, asked one after the other until ``deadline`` (a
    server checks one file at a time: questions sent together would only queue, and one still
    being worked on delays the answers that matter more — the changed file's own, the next
    call's). Answers already known for this state are free; a question is not asked when
    the server's recent answers took longer than the time left, nor after one that ran out."""
    out: dict[str, list[Diag] | None] = {}
    out_of_time = False
    for uri in uris:
        known = client.fresh(uri) if client.can_ask else None
        left = deadline - time.monotonic()
        too_slow = client.ask_seconds is not None and client.ask_seconds > left
        if known is not None or out_of_time or too_slow or left <= 0 or not client.can_ask:
            out[uri] = known
            continue
        out[uri] = await client.ask(uri, left)
        out_of_time = out[uri] is None
    return out


def unconfirmed_note(watch: Watch, uris: list[str], display: Callable[[Path], str], waited: float) -> str | None:
    """The note for other files that use what changed and were not judged: no picture in time
    (``uris``), beyond the number checked, or not found in time. None when all were judged."""
    if not uris and not watch.beyond and watch.searched:
        return None
    named = [shown_path(display(uri_to_path(uri))) for uri in uris[:MAX_NAMED_UNCONFIRMED]]
    unnamed = len(uris) - len(named) + watch.beyond
    listing = ", ".join(named)
    if unnamed:
        listing += f" and {unnamed} more" if named else f"{unnamed} files"
    if not watch.searched:
        listing += ("; " if listing else "") + "the search for them did not end in time"
    how = f"{tool_name('view')} them"
    if has_tool("lsp"):
        how += f" or use the {tool_name('lsp')} tool"
    return (
        f"unconfirmed: files that use what changed were not all checked ({listing}; waited {waited:.0f} s): "
        f"new errors there may be missing — {how}"
    )


def _send(client: LspClient, path: Path, text: str) -> None:
    """Give ``client`` this text of ``path``. A file it does not have open is opened with what
    the disk holds first: the server may have read that already, and the change from it to
    ``text`` must count as a change (see ServerDocuments.state)."""
    if path.as_uri() not in client.texts:
        client.sync(path, _disk_text(path), language_id(client.config, path))
    client.sync(path, text, language_id(client.config, path))


def _disk_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _handles(client: LspClient, path: Path) -> bool:
    return path.suffix.lower() in client.config.extensions


def _inside(path: Path, workspace: Path) -> bool:
    return path == workspace or workspace in path.parents
