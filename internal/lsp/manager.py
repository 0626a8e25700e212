"""The LSP layer tools see: servers per (language, root), diagnostics after view and edits, and
the lsp tool's queries (the NavigationSource of api.py).

Every matching server runs for a file (see servers.py), started on the first file of its type
within the caller's budget — the edit's diagnostics budget, not a cold-start worst case (starting,
liveness and back-off: supervisor.py). After a change the touched files are synced and each
server's diagnostics for the new text are asked for (pull, tsserver) or waited for (versioned
push); the results are merged and deduplicated. The report is errors only, capped per file with
the errors on or near the changed lines first, plus the other files that *gained* errors with the
change (crossfile.py: the files that use what changed, pictured before the change from the old
text and after it).

Busy is not hung. A wait that runs out is reported "unconfirmed (still analysing after N s)" and
the diagnostics that arrive later are delivered with the next result for that file. Every result
that lacks a server's diagnostics says so in one line naming it.

Bounds (docs/lsp.md): an edit's diagnostics take at most WAIT_CAP_S for the changed files
(starting servers included: the budget is shared, not added), plus at most IMPORTERS_BUDGET_S to
find the other files that use what changed and picture them before the change, plus at most
OTHER_FILES_WAIT_S for their pictures after it; a view at most VIEW_WAIT_CAP_S (VIEW_COLD_CAP_S
when it has to start a server). Each bound keeps FINISH_MARGIN_S for the work after its waits.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import Config
from ..fsutil.paths import display_path
from ..fsutil.uris import uri_to_path
from ..logs import logger
from ..state import StateDir
from .api import LspError
from .changes import Region, changed_regions
from .client import LspClient
from .crossfile import Changed, OtherFiles, unconfirmed_note
from .diagnostics import (
    OTHER_FILES_SHOWN,
    Diag,
    Outcome,
    format_report,
    merge,
    truth_notes,
    with_late_label,
    with_notes,
)
from .importers import importers_of
from .servers import ServerConfig, language_id
from .supervisor import ServerSupervisor, instance_key

if TYPE_CHECKING:
    from .api import KeepsOldTexts, NavigationSource

log = logger("toolsmith.lsp")

#: A version-less publish counts as settled after this long without another publish.
QUIET_S = 0.2
#: Longest wait for fresh diagnostics after an edit — and the budget to start a server then.
WAIT_CAP_S = 4.0
#: view waits less: reading should not stall on a slow server. A view that has to start a
#: server first gets VIEW_COLD_CAP_S in all (start and wait share it); a server that needs longer
#: keeps starting for the next call, without counting against it.
VIEW_WAIT_CAP_S = 1.0
VIEW_COLD_CAP_S = WAIT_CAP_S
#: The lsp tool asks explicitly: a cold server gets longer to start (navigation), and its
#: diagnostics operation waits at most QUERY_WAIT_S in all.
QUERY_START_S = 15.0
QUERY_WAIT_S = 10.0
#: Other files whose new errors a change shows besides the changed ones.
OTHER_FILES_REPORTED = OTHER_FILES_SHOWN
#: After the changed files' own diagnostics, the other files' are waited for at most this long.
OTHER_FILES_WAIT_S = 3.0
#: Finding the files that use what changed, and their diagnostics before the change.
IMPORTERS_BUDGET_S = 2.0
#: For the lsp tool's searches (references, rename, callers, implementations): some servers
#: (tsserver) search only the projects of open files, so this many importers are opened first.
MAX_IMPORTERS_SEARCHED = 50
#: Every bound keeps this much for the work after its waits (merging, formatting, the tool's own
#: result), so that the whole call stays within the bound.
FINISH_MARGIN_S = 0.1
#: Old texts kept from commits until their change is diagnosed, at most (the oldest go first).
MAX_KEPT_OLD_TEXTS = 64
#: Files whose text before the session's first change to them is kept (the untouched project
#: that other files' errors are measured against); later ones are not kept.
MAX_KEPT_ORIGINALS = 500

#: lsp tool operations whose answers lie in other files.
SEARCHES_IMPORTERS = frozenset({"references", "rename", "incoming_calls", "implementation"})


class LspManager(ServerSupervisor):
    """A session's LSP layer: its DiagnosticsSource (after views and changes) and the lsp tool's
    NavigationSource, over the servers the supervisor runs."""

    def __init__(self, workspace: Path, config: Config, state: StateDir) -> None:
        super().__init__(workspace, config, state)
        self._importers_opened: set[str] = set()
        #: (server instance, uri) whose last wait ran out: what comes later is "late".
        self._awaiting: set[tuple[str, str]] = set()
        #: Each file's text before and after the session's last commit to it (the commit hook).
        self._old_texts: dict[Path, tuple[str, str]] = {}
        #: Each file the session changed, as it was before the first change (None: created).
        self._originals: dict[Path, str | None] = {}
        self.others = OtherFiles(workspace, lambda: self.config.rg_path, self._originals)
        #: The text the session's last change left in a file, and the lines it touched.
        self._last_change: dict[Path, tuple[str, list[Region]]] = {}

    def remember_old_texts(self, changes: Mapping[Path, tuple[bytes | None, bytes]]) -> None:
        """Each written file's content before a commit (None: the file is new) and after: the old
        text is what other files are pictured with before the change, as long as the file still
        holds the new one when the change is diagnosed. May be called from the committing thread."""
        for path, (old, new) in changes.items():
            self._old_texts.pop(path, None)  # re-inserted last: the newest is kept longest
            if not self.servers_for(path):
                continue
            if path not in self._originals and len(self._originals) < MAX_KEPT_ORIGINALS:
                self._originals[path] = _as_read(old) if old is not None else None
            if old is None:
                continue
            self._old_texts[path] = (_as_read(old), _as_read(new))
            while len(self._old_texts) > MAX_KEPT_OLD_TEXTS:
                self._old_texts.pop(next(iter(self._old_texts)), None)

    def _send(self, client: LspClient, config: ServerConfig, path: Path, text: str) -> None:
        awaiting = (instance_key(config.name, client.root), path.as_uri())
        if client.texts.get(path.as_uri()) != text:
            self._awaiting.discard(awaiting)
        client.sync(path, text, language_id(config, path))

    async def _sync_and_wait(
        self, client: LspClient, config: ServerConfig, path: Path, text: str, deadline: float, probe: bool
    ) -> tuple[list[Diag], str]:
        """Sync ``text`` and wait (until ``deadline``) for the server's diagnostics of it:
        (diagnostics, status), the status one of "confirmed", "late" (confirmed, arrived after an
        earlier call gave up), "quiet" or "none" (see LspClient.wait_for_diagnostics)."""
        uri = path.as_uri()
        awaiting = (instance_key(config.name, client.root), uri)
        self._send(client, config, path, text)
        current = client.fresh(uri)
        if current is not None:
            late = awaiting in self._awaiting
            self._awaiting.discard(awaiting)
            return current, "late" if late else "confirmed"
        if probe:
            client.probe()
        cap_s = max(deadline - time.monotonic(), 0.0)
        diags, status = await client.wait_for_diagnostics(uri, quiet_s=QUIET_S, cap_s=cap_s)
        if status == "none":
            self._awaiting.add(awaiting)
            return diags, status
        if status == "confirmed":
            self._mark_healthy(instance_key(config.name, client.root))
            if awaiting in self._awaiting:  # the answer an earlier call gave up on
                self._awaiting.discard(awaiting)
                return diags, "late"
        return diags, status

    async def _diagnose(
        self, path: Path, cap_s: float, start: bool, *, probe: bool = True, cold_cap_s: float | None = None
    ) -> Outcome:
        """Merged diagnostics of every server for ``path`` within ``cap_s`` in all (starting the
        servers included), with notes and what is unconfirmed."""
        if cold_cap_s is not None and start and not self._all_running(path):
            cap_s = cold_cap_s
        deadline = time.monotonic() + cap_s - FINISH_MARGIN_S
        clients, notes = await self.clients_for(path, budget=deadline - time.monotonic(), start=start)
        if not clients:
            return Outcome(None, notes, [], [])
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return Outcome(None, notes, [], [])
        outcome = await self._judge(path, text, clients, notes, deadline, probe, cap_s)
        last = self._last_change.get(path)
        if last is not None and last[0] == text:
            outcome.focus = last[1]
        return outcome

    async def _judge(
        self,
        path: Path,
        text: str,
        clients: list[tuple[LspClient, ServerConfig]],
        notes: list[str],
        deadline: float,
        probe: bool,
        cap_s: float,
    ) -> Outcome:
        """Every server's diagnostics of ``text`` as one Outcome (``cap_s``: the bound named in
        an "unconfirmed" note)."""
        results = await asyncio.gather(
            *(self._sync_and_wait(c, cfg, path, text, deadline, probe) for c, cfg in clients)
        )
        outcome = Outcome(merge(d for d, _ in results), notes, [], [])
        for (client, config), (_diags, status) in zip(clients, results, strict=True):
            if status == "none":
                if client.stopped:
                    await self._drop(client, "is stopped (not running) and was killed")
                    notes.append(f"{config.name} is stopped (not running) and was killed")
                elif not client.alive:
                    notes.append(f"{config.name} exited (it is restarted on the next call)")
                else:
                    outcome.unconfirmed.append((config.name, cap_s))
            elif status == "quiet":
                outcome.quiet.append(config.name)
            elif status == "late":
                outcome.late = True
        return outcome

    def _display(self, path: Path) -> str:
        return display_path(path, self.workspace)

    # --- DiagnosticsSource --------------------------------------------------------------------

    async def after_view(self, path: Path) -> str:
        """Errors of the viewed file. A one-shot front door (lsp_on_view off) only asks servers
        that already run, rather than start one to throw it away. A view's short wait never
        counts against a server (no probe, no failure)."""
        outcome = await self._diagnose(
            path, VIEW_WAIT_CAP_S, start=self.config.lsp_on_view, probe=False, cold_cap_s=VIEW_COLD_CAP_S
        )
        name = self._display(path)
        report = format_report({name: outcome.diags or []}, errors_only=True, context="view",
                               focus={name: outcome.focus})  # fmt: skip
        return with_notes(with_late_label(report, outcome), truth_notes(name, outcome, view=True))

    async def after_change(self, paths: list[Path], *, other_files: int = OTHER_FILES_REPORTED) -> str:
        """Errors of the changed files (those near the change first) and the errors other files
        gained with the change (see crossfile.py), with a note for whatever is unconfirmed."""
        began = time.monotonic()
        changes = [c for c in (self._changed(p) for p in dict.fromkeys(paths)) if c is not None]
        if not changes:
            return ""
        start_by = began + WAIT_CAP_S - FINISH_MARGIN_S
        found = await asyncio.gather(*(self.clients_for(c.path, budget=start_by - time.monotonic()) for c in changes))
        starting = time.monotonic() - began
        for change in changes:
            self._last_change[change.path] = (change.new, change.regions)
        running = [client for clients, _ in found for client, _config in clients]
        watch = None
        if other_files > 0 and running:
            watch = await self.others.before(changes, running, time.monotonic() + IMPORTERS_BUDGET_S)
        # Every server gets every new text before any file is judged: one file's errors depend on
        # the others (an importer checked before its renamed module is synced would look broken).
        for change, (clients, _notes) in zip(changes, found, strict=True):
            for client, config in clients:
                self._send(client, config, change.path, change.new)
        if watch is not None:
            watch.since = time.monotonic()
        own_by = time.monotonic() + max(WAIT_CAP_S - starting, 0.0) - FINISH_MARGIN_S
        outcomes = await asyncio.gather(
            *(self._judge(c.path, c.new, clients, notes, own_by, True, WAIT_CAP_S)
              for c, (clients, notes) in zip(changes, found, strict=True) if clients)
        )  # fmt: skip
        reports, focus, notes = self._own_reports(changes, found, iter(outcomes))
        others: dict[str, list[Diag]] = {}
        if watch is not None:
            others_by = time.monotonic() + OTHER_FILES_WAIT_S - FINISH_MARGIN_S
            gained, unconfirmed = await self.others.after(watch, others_by)
            others = {self._display(uri_to_path(uri)): diags for uri, diags in gained.items()}
            note = unconfirmed_note(watch, unconfirmed, self._display, time.monotonic() - began)
            if note is not None:
                notes.append(note)
        report = format_report(reports, others, errors_only=True, context="change", focus=focus,
                               other_files=other_files)  # fmt: skip
        return with_notes(report, notes)

    def _own_reports(
        self,
        changes: list[Changed],
        found: list[tuple[list[tuple[LspClient, ServerConfig]], list[str]]],
        outcomes: Iterator[Outcome],
    ) -> tuple[dict[str, list[Diag]], dict[str, list[Region]], list[str]]:
        """The changed files' errors and changed lines by display name, and the notes (each once)."""
        reports: dict[str, list[Diag]] = {}
        focus: dict[str, list[Region]] = {}
        notes: list[str] = []
        for change, (clients, start_notes) in zip(changes, found, strict=True):
            if not clients:
                notes += [n for n in start_notes if n not in notes]
                continue
            outcome = next(outcomes)
            name = self._display(change.path)
            reports[name] = outcome.diags or []
            focus[name] = change.regions
            notes += [n for n in truth_notes(name, outcome) if n not in notes]
        return reports, focus, notes

    def _changed(self, path: Path) -> Changed | None:
        """The change to ``path``: its text now, and before (the commit's record, else the text
        the servers were last sent)."""
        try:
            new = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        committed = self._old_texts.pop(path, None)
        old = committed[0] if committed is not None and committed[1] == new else None
        if old is None:
            sent = [c.texts[path.as_uri()] for c in self.clients.values() if path.as_uri() in c.texts]
            old = sent[0] if sent else None
        return Changed(path, old, new, changed_regions(old, new) if old is not None else [])

    # --- the lsp tool (NavigationSource) ------------------------------------------------------

    async def diagnostics(self, path: Path) -> Outcome:
        return await self._diagnose(path, QUERY_WAIT_S, start=True)

    async def navigate(self, path: Path, operation: str) -> tuple[LspClient, list[str]]:
        """A running client for ``path`` that supports ``operation``, synced with the file; for
        operations that search other files (references, rename, callers, implementations), the
        files importing it are opened first: some servers (tsserver) search only the projects of
        open files."""
        clients, notes = await self.clients_for(path, budget=QUERY_START_S)
        able = [(c, cfg) for c, cfg in clients if c.supports(operation)]
        if not able:
            names = ", ".join(cfg.name for _, cfg in clients) or "none running"
            detail = f" ({'; '.join(notes)})" if notes else ""
            raise LspError(f"no language server for this file supports {operation} (servers: {names}){detail}")
        client, config = able[0]
        text = path.read_text(encoding="utf-8", errors="replace")
        self._send(client, config, path, text)
        if operation in SEARCHES_IMPORTERS:
            await self._open_importers(client, config, path, time.monotonic() + IMPORTERS_BUDGET_S)
        return client, notes

    async def _open_importers(self, client: LspClient, config: ServerConfig, path: Path, deadline: float) -> None:
        """Open (once per file and server) up to MAX_IMPORTERS_SEARCHED files that import ``path``
        and wait (until ``deadline``) for the server to have read them."""
        key = f"{instance_key(config.name, client.root)}:{path}"
        if key in self._importers_opened:
            return
        self._importers_opened.add(key)
        found = await importers_of(path, self.workspace, self.config.rg_path, None, deadline - time.monotonic())
        importers = found or []  # best effort: a use the server then misses is listed by no one
        opened = []
        for importer in importers[:MAX_IMPORTERS_SEARCHED]:
            if importer.suffix.lower() not in config.extensions or importer.as_uri() in client.texts:
                continue
            try:
                text = importer.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            client.sync(importer, text, language_id(config, importer))
            opened.append(importer.as_uri())
        if opened and not client.can_ask:
            await asyncio.gather(*(client.first_publish(uri, deadline) for uri in opened))

    async def request(self, client: LspClient, name: str, params: Any) -> Any:
        """A navigation request; one that runs out is cancelled and reported, the server kept."""
        try:
            return await client.request(name, params)
        except LspError as exc:
            if not client.alive:
                await self._drop(client, f"exited ({exc})")
                raise LspError(f"{client.config.name} {exc}") from exc
            if "did not answer" in str(exc):
                raise LspError(
                    f"{client.config.name} {exc} (the request was cancelled; the server is still "
                    "running — it may be indexing the project: try again shortly)"
                ) from exc
            raise LspError(f"{client.config.name} {exc}") from exc

    async def close(self) -> None:
        await super().close()
        # Servers started again later (a session's idle stop, then a call) know nothing of these.
        self._importers_opened.clear()
        self._awaiting.clear()


def _as_read(data: bytes) -> str:
    """``data`` as ``Path.read_text(encoding="utf-8", errors="replace")`` reads it (line ends
    translated), which is how the servers are sent a file."""
    return data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


if TYPE_CHECKING:  # the seams, checked by mypy: LspManager offers what the lsp tool and the session ask
    _NAVIGATION: type[NavigationSource[LspClient]] = LspManager
    _OLD_TEXTS: type[KeepsOldTexts] = LspManager
