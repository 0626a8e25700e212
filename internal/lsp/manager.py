"""The LSP layer tools see: servers per (language, root), diagnostics after view and edits.

Every matching server runs for a file (see servers.py), started on the first file of its type
within the caller's budget — the edit's diagnostics budget, not a cold-start worst case. After a
change the touched files are synced and each server's fresh diagnostics waited for (push or pull);
the results are merged and deduplicated. The report is errors only, capped per file, plus other
open files that *gained* errors during the change (stale ones never flood the output).

A server that cannot start, exits, stops (SIGSTOP), or leaves two waits in a row unanswered is
marked unavailable for the session, killed at once, and retried after a back-off (doubling up to
MAX_BACKOFF_S); every result that lacks its diagnostics says so in one line naming it. The
health survives CLI invocations with the session state.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import Config
from ..state import StateDir
from .client import CLEAN_QUIET_S, INIT_TIMEOUT_S, LspClient, LspError
from .diagnostics import ERROR, Diag, format_report, merge
from .servers import ServerConfig, find_root, language_id, servers_for

log = logging.getLogger("toolsmith.lsp")

#: A diagnostics set counts as settled after this long without another publish.
QUIET_S = 0.2
#: Longest wait for fresh diagnostics after an edit — and the budget to start a server then.
WAIT_CAP_S = 4.0
#: view waits less: reading should not stall on a slow server.
VIEW_WAIT_CAP_S = 1.0
#: The lsp tool asks explicitly: a cold server gets longer to start.
QUERY_START_S = 15.0
#: After a server fails, it is not tried again for this long (doubling per failure, capped).
FIRST_BACKOFF_S = 60.0
MAX_BACKOFF_S = 600.0
#: Other files whose new errors a change reports besides the changed ones (seed 3.5).
OTHER_FILES_REPORTED = 5
#: Waits in a row without any answer before a running server counts as hung.
MISSED_WAITS_LIMIT = 2
#: Files that import a changed Python module, opened so the server reports what the change
#: broke in them (at most this many per module, found with rg within this long).
MAX_IMPORTERS = 3
IMPORTERS_TIMEOUT_S = 2.0


@dataclass
class Health:
    """Why a server is unavailable, and when (wall clock) it may be tried again."""

    reason: str
    failures: int
    retry_at: float


class LspManager:
    def __init__(self, workspace: Path, config: Config, state: StateDir) -> None:
        self.workspace = workspace
        self.config = config
        self.state = state
        self.clients: dict[tuple[str, Path], LspClient] = {}
        self.health: dict[str, Health] = {}
        self._starting: dict[tuple[str, Path], asyncio.Lock] = {}
        self._importers_opened: set[str] = set()

    def servers_for(self, path: Path) -> list[ServerConfig]:
        return servers_for(path, self.config.lsp_servers)

    # --- health -------------------------------------------------------------------------------

    def _unavailable(self, name: str) -> str | None:
        health = self.health.get(name)
        if health is None or time.time() >= health.retry_at:
            return None
        wait = max(int(health.retry_at - time.time()), 1)
        return f"{name} {health.reason} (next try in {wait} s)"

    def _mark_failed(self, name: str, reason: str) -> str:
        previous = self.health.get(name)
        failures = previous.failures + 1 if previous else 1
        backoff = min(FIRST_BACKOFF_S * 2 ** (failures - 1), MAX_BACKOFF_S)
        self.health[name] = Health(reason, failures, time.time() + backoff)
        log.warning("%s is unavailable: %s", name, reason)
        return f"{name} {reason}"

    def to_json(self) -> dict[str, Any]:
        return {n: {"reason": h.reason, "failures": h.failures, "retry_at": h.retry_at} for n, h in self.health.items()}

    def load_json(self, data: Any) -> None:
        if not isinstance(data, dict):
            return
        for name, entry in data.items():
            try:
                self.health[str(name)] = Health(str(entry["reason"]), int(entry["failures"]), float(entry["retry_at"]))
            except (KeyError, TypeError, ValueError):
                continue

    # --- clients ------------------------------------------------------------------------------

    async def clients_for(
        self, path: Path, *, budget: float, start: bool = True
    ) -> tuple[list[tuple[LspClient, ServerConfig]], list[str]]:
        """The running clients for ``path`` (started within ``budget`` when ``start``), and a
        note for each server that is unavailable."""
        found: list[tuple[LspClient, ServerConfig]] = []
        notes: list[str] = []
        for config in self.servers_for(path):
            unavailable = self._unavailable(config.name)
            if unavailable is not None:
                notes.append(unavailable)
                continue
            client, note = await self._client(config, path, budget, start)
            if client is not None:
                found.append((client, config))
            if note:
                notes.append(note)
        return found, notes

    async def _client(
        self, config: ServerConfig, path: Path, budget: float, start: bool
    ) -> tuple[LspClient | None, str | None]:
        root = find_root(path, self.workspace, config.root_markers)
        key = (config.name, root)
        lock = self._starting.setdefault(key, asyncio.Lock())
        async with lock:
            client = self.clients.get(key)
            if client is not None and client.stopped:
                del self.clients[key]
                await client.kill()
                return None, self._mark_failed(config.name, "is stopped (not running) and was killed")
            if client is not None and not client.alive:
                log.info("%s exited; restarting", config.name)
                del self.clients[key]
                await client.kill()
                client = None
            if client is None:
                if not start:
                    return None, None
                client = LspClient(config, root, self.state.directory("lsp"))
                try:
                    await client.start(min(budget, INIT_TIMEOUT_S))
                except (LspError, OSError) as exc:
                    await client.kill()
                    return None, self._mark_failed(config.name, f"did not start: {exc}")
                self.health.pop(config.name, None)
                self.clients[key] = client
        return client, None

    async def _sync_and_wait(
        self, client: LspClient, config: ServerConfig, path: Path, text: str, cap_s: float
    ) -> tuple[list[Diag], bool]:
        uri = path.as_uri()
        current = client.published.get(uri)
        if client.texts.get(uri) == text and current is not None:
            return current.diagnostics, True  # nothing changed since the server last reported
        was_clean = uri in client.texts and (current is None or not current.diagnostics)
        since = time.monotonic()
        version = client.sync(path, text, language_id(config, path))
        result = await client.wait_for_diagnostics(
            uri, version, since, quiet_s=QUIET_S, cap_s=cap_s, was_clean=was_clean
        )
        client.missed_waits = 0 if result[1] else client.missed_waits + 1
        return result

    async def _diagnose(self, path: Path, cap_s: float, start: bool) -> tuple[list[Diag] | None, list[str], bool]:
        """Merged diagnostics of every server for ``path`` (None: no server ran), notes, and
        whether every server confirmed its result."""
        clients, notes = await self.clients_for(path, budget=WAIT_CAP_S, start=start)
        if not clients:
            return None, notes, True
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None, notes, True
        results = await asyncio.gather(*(self._sync_and_wait(c, cfg, path, text, cap_s) for c, cfg in clients))
        confirmed = True
        for (client, config), (_diags, ok) in zip(clients, results, strict=True):
            if ok:
                continue
            confirmed = False
            if client.stopped or client.missed_waits >= MISSED_WAITS_LIMIT:
                await self._drop(client, config, "stopped answering (no diagnostics within the wait, twice in a row)"
                                 if not client.stopped else "is stopped (not running) and was killed")  # fmt: skip
                notes.append(f"{config.name} {self.health[config.name].reason}")
        return merge(d for d, _ in results), notes, confirmed

    async def _drop(self, client: LspClient, config: ServerConfig, reason: str) -> None:
        for key, running in list(self.clients.items()):
            if running is client:
                del self.clients[key]
        await client.kill()
        self._mark_failed(config.name, reason)

    def _display(self, path: Path) -> str:
        try:
            return path.relative_to(self.workspace).as_posix()
        except ValueError:
            return str(path)

    # --- DiagnosticsSource --------------------------------------------------------------------

    async def after_view(self, path: Path) -> str:
        """Errors of the viewed file. A one-shot front door (lsp_on_view off) only asks servers
        that already run, rather than start one to throw it away."""
        diags, notes, _ = await self._diagnose(path, VIEW_WAIT_CAP_S, start=self.config.lsp_on_view)
        report = format_report({self._display(path): diags or []}, errors_only=True, context="view")
        return _with_notes(report, notes)

    async def after_change(self, paths: list[Path], *, other_files: int = OTHER_FILES_REPORTED) -> str:
        before = self._error_counts()
        for path in paths:
            await self._open_importers(path)
        reports: dict[str, list[Diag]] = {}
        unconfirmed: list[str] = []
        notes: list[str] = []
        results = await asyncio.gather(*(self._diagnose(p, WAIT_CAP_S, start=True) for p in paths))
        for path, (diags, path_notes, confirmed) in zip(paths, results, strict=True):
            notes += [n for n in path_notes if n not in notes]
            if diags is None:
                continue
            reports[self._display(path)] = diags
            if not confirmed:
                unconfirmed.append(self._display(path))
        touched = {p.as_uri() for p in paths}
        watched = [c for c in self.clients.values() if c.may_report_elsewhere(touched)] if other_files > 0 else []
        if watched:
            until = time.monotonic() + WAIT_CAP_S
            await asyncio.gather(*(client.settle(QUIET_S, until) for client in watched))
        others = self._gained_errors(before, touched, other_files)
        if unconfirmed:
            files = ", ".join(unconfirmed)
            notes.append(f"the language server sent none within {WAIT_CAP_S:.0f} s for {files} (unconfirmed)")
        report = format_report(reports, others, errors_only=True, context="change")
        return _with_notes(report, notes)

    def _error_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for uri, diags in self._published_by_uri().items():
            counts[uri] = sum(1 for d in diags if d.severity == ERROR)
        return counts

    def _published_by_uri(self) -> dict[str, list[Diag]]:
        merged: dict[str, list[list[Diag]]] = {}
        for client in self.clients.values():
            for uri, published in client.published.items():
                merged.setdefault(uri, []).append(published.diagnostics)
        return {uri: merge(lists) for uri, lists in merged.items()}

    def _gained_errors(self, before: dict[str, int], touched: set[str], limit: int) -> dict[str, list[Diag]]:
        if limit <= 0:
            return {}
        out: dict[str, list[Diag]] = {}
        for uri, diags in self._published_by_uri().items():
            errors = [d for d in diags if d.severity == ERROR]
            if uri in touched or len(errors) <= before.get(uri, 0):
                continue
            out[self._display(Path(_uri_path(uri)))] = errors
            if len(out) >= limit:
                break
        return out

    async def _open_importers(self, path: Path) -> None:
        """Open (once per session) a few Python files that import ``path``'s module, so servers
        that report only open files can say what a change breaks in them."""
        if path.suffix != ".py" or str(path) in self._importers_opened:
            return
        self._importers_opened.add(str(path))
        clients, _ = await self.clients_for(path, budget=WAIT_CAP_S, start=False)
        if not clients:
            return
        from ..cancel import CancelToken
        from ..ripgrep import SearchQuery, find_rg, search

        module = path.stem if path.stem != "__init__" else path.parent.name
        pattern = (
            rf"^\s*(from\s+[\w.]*\b{module}\b[\w.]*\s+import|import\s+[\w.]*\b{module}\b"
            rf"|from\s+[\w.]+\s+import\s+.*\b{module}\b)"
        )
        query = SearchQuery(self.workspace, pattern, include="*.py")
        try:
            found = await asyncio.wait_for(
                search(query, rg=find_rg(self.config.rg_path), limit=50, cancel=CancelToken()), IMPORTERS_TIMEOUT_S
            )
        except (TimeoutError, Exception) as exc:  # best effort: an importer we miss is only unreported
            log.info("looking for importers of %s failed: %s", path, exc)
            return
        importers = list(dict.fromkeys(Path(m.path) for m in found.matches if Path(m.path) != path))
        for importer in importers[:MAX_IMPORTERS]:
            try:
                text = importer.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            for client, config in clients:
                if importer.as_uri() not in client.texts:
                    client.sync(importer, text, language_id(config, importer))
        if importers:  # let the servers report the baseline the change is compared against
            until = time.monotonic() + CLEAN_QUIET_S
            await asyncio.gather(*(client.settle(QUIET_S, until) for client, _ in clients))

    # --- the lsp tool -------------------------------------------------------------------------

    async def diagnostics(self, path: Path) -> tuple[list[Diag] | None, list[str], bool]:
        return await self._diagnose(path, WAIT_CAP_S, start=True)

    async def navigate(self, path: Path, operation: str) -> tuple[LspClient, list[str]]:
        """A running client for ``path`` that supports ``operation``, synced with the file."""
        clients, notes = await self.clients_for(path, budget=QUERY_START_S)
        able = [(c, cfg) for c, cfg in clients if c.supports(operation)]
        if not able:
            names = ", ".join(cfg.name for _, cfg in clients) or "none running"
            detail = f" ({'; '.join(notes)})" if notes else ""
            raise LspError(f"no language server for this file supports {operation} (servers: {names}){detail}")
        client, config = able[0]
        text = path.read_text(encoding="utf-8", errors="replace")
        client.sync(path, text, language_id(config, path))
        return client, notes

    async def request(self, client: LspClient, name: str, params: Any) -> Any:
        try:
            return await client.request(name, params)
        except LspError as exc:
            if "did not answer" in str(exc) or not client.alive:
                await self._drop(client, client.config, f"stopped answering ({exc})")
            raise LspError(f"{client.config.name} {exc}") from exc

    async def close(self) -> None:
        await asyncio.gather(*(client.shutdown() for client in self.clients.values()))
        self.clients.clear()


def _with_notes(report: str, notes: list[str]) -> str:
    lines = [f"(Diagnostics unavailable: {note}.)" if "unconfirmed" not in note else f"(Diagnostics: {note}.)"
             for note in notes]  # fmt: skip
    return "\n".join(part for part in (report, *lines) if part)


def _uri_path(uri: str) -> str:
    from urllib.parse import unquote, urlsplit

    return unquote(urlsplit(uri).path)
