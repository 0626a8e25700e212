"""The LSP layer tools see: servers per (language, root), diagnostics after view and edits, and
the lsp tool's queries (the NavigationSource of api.py).

Every matching server runs for a file (see servers.py), started on the first file of its type
within the caller's budget — the edit's diagnostics budget, not a cold-start worst case (starting,
liveness and back-off: supervisor.py). After a change the touched files are synced and each
server's fresh diagnostics waited for (push or pull); the results are merged and deduplicated.
The report is errors only, capped per file, plus other open files that *gained* errors during the
change (stale ones never flood the output).

Busy is not hung. A wait that runs out is reported "unconfirmed (still analysing after N s)" and
the diagnostics that arrive later are delivered with the next result for that file. Every result
that lacks a server's diagnostics says so in one line naming it.

Bounds (docs/lsp.md): an edit's diagnostics take at most WAIT_CAP_S for the changed files
(starting servers included: the budget is shared, not added), plus at most OTHER_FILES_WAIT_S for
other files a cross-file server rechecks, plus at most IMPORTERS_BUDGET_S the first time a file is
changed (finding and opening the files that import it); a view at most VIEW_WAIT_CAP_S
(VIEW_COLD_CAP_S when it has to start a server).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import Config
from ..fsutil.paths import display_path
from ..fsutil.uris import uri_to_path
from ..logs import logger
from ..state import StateDir
from .api import LspError
from .client import LspClient
from .diagnostics import ERROR, Diag, Outcome, format_report, merge, truth_notes, with_late_label, with_notes
from .importers import importer_pattern
from .servers import ServerConfig, language_id
from .supervisor import ServerSupervisor, instance_key

if TYPE_CHECKING:
    from .api import NavigationSource

log = logger("toolsmith.lsp")

#: A diagnostics set counts as settled after this long without another publish.
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
#: Other files whose new errors a change reports besides the changed ones (seed 3.5). A server
#: checks dependent files after the changed one: their reports are waited for until the server
#: has been quiet for SETTLE_QUIET_S, at most OTHER_FILES_WAIT_S after the changed files' own.
OTHER_FILES_REPORTED = 5
SETTLE_QUIET_S = 1.0
OTHER_FILES_WAIT_S = 3.0
#: Files that import a changed module (Python, TS/JS, Go), opened so the server reports what the
#: change broke in them: at most this many per module, found and given their first (baseline)
#: diagnostics within IMPORTERS_BUDGET_S, once per changed file per session.
MAX_IMPORTERS = 3
#: For the lsp tool's searches (references, rename, callers, implementations): a missed importer
#: is a missed use (a rename left half done), so more are opened, within the same time budget.
MAX_IMPORTERS_SEARCHED = 50
IMPORTERS_BUDGET_S = 2.0

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

    async def _sync_and_wait(
        self, client: LspClient, config: ServerConfig, path: Path, text: str, cap_s: float, probe: bool
    ) -> tuple[list[Diag], str]:
        """Sync ``text`` and wait for the server's diagnostics of it: (diagnostics, status), the
        status one of "confirmed", "late" (confirmed, arrived after an earlier call gave up),
        "quiet" or "none" (see LspClient.wait_for_diagnostics)."""
        uri = path.as_uri()
        awaiting = (instance_key(config.name, client.root), uri)
        if client.texts.get(uri) != text:
            self._awaiting.discard(awaiting)
        client.sync(path, text, language_id(config, path))
        current = client.fresh(uri)
        if current is not None:
            late = awaiting in self._awaiting
            self._awaiting.discard(awaiting)
            return current.diagnostics, "late" if late else "confirmed"
        if probe:
            client.probe()
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
        deadline = time.monotonic() + cap_s
        clients, notes = await self.clients_for(path, budget=cap_s, start=start)
        if not clients:
            return Outcome(None, notes, [], [])
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return Outcome(None, notes, [], [])
        remaining = max(deadline - time.monotonic(), 0.0)
        results = await asyncio.gather(
            *(self._sync_and_wait(c, cfg, path, text, remaining, probe) for c, cfg in clients)
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
        report = format_report({name: outcome.diags or []}, errors_only=True, context="view")
        return with_notes(with_late_label(report, outcome), truth_notes(name, outcome, view=True))

    async def after_change(self, paths: list[Path], *, other_files: int = OTHER_FILES_REPORTED) -> str:
        started = time.monotonic()
        for path in paths:
            await self._open_importers(path, started + IMPORTERS_BUDGET_S)
        before = self._error_keys()
        if len(paths) > 1:
            await self._sync_running(paths)
        reports: dict[str, list[Diag]] = {}
        notes: list[str] = []
        results = await asyncio.gather(*(self._diagnose(p, WAIT_CAP_S, start=True) for p in paths))
        late = False
        for path, outcome in zip(paths, results, strict=True):
            if outcome.diags is None:
                notes += [n for n in outcome.notes if n not in notes]
                continue
            name = self._display(path)
            reports[name] = outcome.diags
            late = late or outcome.late
            notes += [n for n in truth_notes(name, outcome) if n not in notes]
        touched = {p.as_uri() for p in paths}
        watched = [c for c in self.clients.values() if c.may_report_elsewhere(touched)] if other_files > 0 else []
        if watched:
            until = time.monotonic() + OTHER_FILES_WAIT_S
            await asyncio.gather(*(client.settle(SETTLE_QUIET_S, until) for client in watched))
        others = self._gained_errors(before, touched, other_files)
        report = format_report(reports, others, errors_only=True, context="change")
        return with_notes(report, notes)

    async def _sync_running(self, paths: list[Path]) -> None:
        """A change to several files (a rename, a patch): the running servers get every new text
        before any file is judged — one file's errors depend on the others (an importer checked
        before its renamed module is synced would look broken). A server that is not running
        yet reads them all from disk when it starts."""
        for path in paths:
            clients, _notes = await self.clients_for(path, budget=0.0, start=False)
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            uri = path.as_uri()
            for client, config in clients:
                if client.texts.get(uri) != text:
                    self._awaiting.discard((instance_key(config.name, client.root), uri))
                client.sync(path, text, language_id(config, path))

    def _error_keys(self) -> dict[str, Counter[tuple[str, str | None]]]:
        """Every published error by file, as a multiset of (message, code): positions left out
        so that lines moving in a file never make an old error look new."""
        return {
            uri: Counter((" ".join(d.message.split()), d.code) for d in diags if d.severity == ERROR)
            for uri, diags in self._published_by_uri().items()
        }

    def _published_by_uri(self) -> dict[str, list[Diag]]:
        merged: dict[str, list[list[Diag]]] = {}
        for client in self.clients.values():
            for uri, published in client.published.items():
                merged.setdefault(uri, []).append(published.diagnostics)
        return {uri: merge(lists) for uri, lists in merged.items()}

    def _gained_errors(
        self, before: dict[str, Counter[tuple[str, str | None]]], touched: set[str], limit: int
    ) -> dict[str, list[Diag]]:
        """Errors in other files present now and not before the change. A file with no report
        from before is not judged: its errors may be old, and a fix must not be blamed for them."""
        if limit <= 0:
            return {}
        out: dict[str, list[Diag]] = {}
        for uri, diags in self._published_by_uri().items():
            if uri in touched or uri not in before:
                continue
            budget = Counter(before[uri])
            gained = []
            for diag in diags:
                if diag.severity != ERROR:
                    continue
                key = (" ".join(diag.message.split()), diag.code)
                if budget[key] > 0:
                    budget[key] -= 1
                else:
                    gained.append(diag)
            if gained:
                out[self._display(uri_to_path(uri))] = gained
            if len(out) >= limit:
                break
        return out

    async def _open_importers(self, path: Path, deadline: float, limit: int = MAX_IMPORTERS) -> None:
        """Open (once per session) a few files that import ``path`` (Python, TS/JS, Go), so that
        servers reporting only open files say what a change breaks in them, and wait (until
        ``deadline``) for their first diagnostics: the baseline "gained" is measured against."""
        key = f"{limit}:{path}"
        if key in self._importers_opened:
            return
        self._importers_opened.add(key)
        found_pattern = importer_pattern(path, self.workspace)
        if found_pattern is None:
            return
        pattern, include = found_pattern
        clients, _ = await self.clients_for(path, budget=0, start=False)
        if not clients:
            return
        from ..cancel import CancelToken
        from ..ripgrep import SearchQuery, find_rg, search

        query = SearchQuery(self.workspace, pattern, include=include)
        try:
            found = await asyncio.wait_for(
                search(query, rg=find_rg(self.config.rg_path), limit=max(50, limit), cancel=CancelToken()),
                max(deadline - time.monotonic(), 0.01),
            )
        except Exception as exc:  # best effort: an importer we miss is only unreported
            log.info("looking for importers of %s failed: %s", path, exc)
            return
        importers = list(dict.fromkeys(Path(m.path) for m in found.matches if Path(m.path) != path))
        opened: list[tuple[LspClient, str]] = []
        for importer in importers[:limit]:
            try:
                text = importer.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            for client, config in clients:
                if importer.suffix.lower() in config.extensions and importer.as_uri() not in client.texts:
                    client.sync(importer, text, language_id(config, importer))
                    opened.append((client, importer.as_uri()))
        if opened:
            await asyncio.gather(*(client.first_publish(uri, deadline) for client, uri in opened))

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
        client.sync(path, text, language_id(config, path))
        if operation in SEARCHES_IMPORTERS:
            await self._open_importers(path, time.monotonic() + IMPORTERS_BUDGET_S, MAX_IMPORTERS_SEARCHED)
        return client, notes

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


if TYPE_CHECKING:  # the lsp tool's seam, checked by mypy: LspManager offers what the tool asks
    _NAVIGATION: type[NavigationSource[LspClient]] = LspManager
