"""The LSP layer tools see: servers per (language, root), diagnostics after view and edits.

Every matching server runs for a file (see servers.py), started on the first file of its type
within the caller's budget — the edit's diagnostics budget, not a cold-start worst case. After a
change the touched files are synced and each server's fresh diagnostics waited for (push or pull);
the results are merged and deduplicated. The report is errors only, capped per file, plus other
open files that *gained* errors during the change (stale ones never flood the output).

Busy is not hung. A wait that runs out is reported "unconfirmed (still analysing after N s)" and
the diagnostics that arrive later are delivered with the next result for that file. A server is
hung only when it answers nothing: no message of any kind, not even the reply to a liveness
probe, for HUNG_AFTER_S. A server that cannot start, exits, stops (SIGSTOP) or hangs is killed at
once and retried after a back-off that doubles across restarts (up to MAX_BACKOFF_S) and resets
only after HEALTHY_RESET_S of health. Health is per server instance (name and root): one
project's trouble never disables another. Every result that lacks a server's diagnostics says so
in one line naming it. The health survives CLI invocations with the session state.

Bounds (docs/lsp.md): an edit's diagnostics take at most WAIT_CAP_S for the changed files
(starting servers included: the budget is shared, not added), plus at most OTHER_FILES_WAIT_S for
other files a cross-file server rechecks, plus at most IMPORTERS_BUDGET_S the first time a file is
changed (finding and opening the files that import it); a view at most VIEW_WAIT_CAP_S
(VIEW_COLD_CAP_S when it has to start a server).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import Config
from ..state import StateDir
from .api import LspError
from .client import INIT_TIMEOUT_S, LspClient
from .diagnostics import ERROR, Diag, Outcome, format_report, merge, truth_notes, with_late_label, with_notes
from .importers import importer_pattern
from .servers import ServerConfig, find_root, language_id, missing_servers, servers_for
from .uris import uri_to_path

log = logging.getLogger("toolsmith.lsp")

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
#: After a server fails, it is not tried again for this long (doubling per failure, capped).
FIRST_BACKOFF_S = 60.0
MAX_BACKOFF_S = 600.0
#: Other files whose new errors a change reports besides the changed ones (seed 3.5). A server
#: checks dependent files after the changed one: their reports are waited for until the server
#: has been quiet for SETTLE_QUIET_S, at most OTHER_FILES_WAIT_S after the changed files' own.
OTHER_FILES_REPORTED = 5
SETTLE_QUIET_S = 1.0
OTHER_FILES_WAIT_S = 3.0
#: A server that sent nothing at all (no reply to the liveness probe, no notification) for this
#: long after a probe is hung. Slow diagnostics alone never make a server hung.
HUNG_AFTER_S = 20.0
#: A server instance's failure count (and so its back-off) resets after this long healthy.
HEALTHY_RESET_S = 300.0
#: Files that import a changed module (Python, TS/JS, Go), opened so the server reports what the
#: change broke in them: at most this many per module, found and given their first (baseline)
#: diagnostics within IMPORTERS_BUDGET_S, once per changed file per session.
MAX_IMPORTERS = 3
#: For the lsp tool's searches (references, rename, callers, implementations): a missed importer
#: is a missed use (a rename left half done), so more are opened, within the same time budget.
MAX_IMPORTERS_SEARCHED = 50
IMPORTERS_BUDGET_S = 2.0


@dataclass
class Health:
    """A server instance's failures; unavailable until ``retry_at`` (wall clock) after one."""

    reason: str
    failures: int
    retry_at: float
    #: When (wall clock) it last started well; failures reset after HEALTHY_RESET_S of health.
    healthy_since: float | None = None


#: lsp tool operations whose answers lie in other files.
SEARCHES_IMPORTERS = frozenset({"references", "rename", "incoming_calls", "implementation"})


def _key(name: str, root: Path) -> str:
    return f"{name}@{root}"


class LspManager:
    def __init__(self, workspace: Path, config: Config, state: StateDir) -> None:
        self.workspace = workspace
        self.config = config
        self.state = state
        self.clients: dict[tuple[str, Path], LspClient] = {}
        #: By server instance: "name@root".
        self.health: dict[str, Health] = {}
        #: Starts under way (by instance), for the state a one-shot front door saves meanwhile.
        self._pending: dict[str, tuple[LspClient, float]] = {}
        self._starts: dict[tuple[str, Path], asyncio.Future[tuple[LspClient | None, str | None]]] = {}
        self._importers_opened: set[str] = set()
        #: (server instance, uri) whose last wait ran out: what comes later is "late".
        self._awaiting: set[tuple[str, str]] = set()

    def servers_for(self, path: Path) -> list[ServerConfig]:
        return servers_for(path, self.config.lsp_servers)

    def missing_for(self, path: Path) -> list[str]:
        """Notes naming configured servers for ``path`` whose command is not installed."""
        return [
            f"{config.name} is configured but its command {config.command[0]!r} is not installed"
            for config in missing_servers(path, self.config.lsp_servers)
        ]

    # --- health -------------------------------------------------------------------------------

    def _unavailable(self, key: str) -> str | None:
        health = self.health.get(key)
        if health is None or health.healthy_since is not None or time.time() >= health.retry_at:
            return None
        wait = max(int(health.retry_at - time.time()), 1)
        return f"{key.split('@', 1)[0]} {health.reason} (next try in {wait} s)"

    def _mark_failed(self, key: str, reason: str, *, first_free: bool = False) -> str:
        """Count a failure and hold the instance back: FIRST_BACKOFF_S, doubling per failure.
        ``first_free``: a first crash is restarted at once (a crash on one input is not a pattern)."""
        previous = self.health.get(key)
        failures = previous.failures + 1 if previous else 1
        exponent = failures - 2 if first_free else failures - 1
        backoff = 0.0 if exponent < 0 else min(FIRST_BACKOFF_S * 2**exponent, MAX_BACKOFF_S)
        self.health[key] = Health(reason, failures, time.time() + backoff)
        log.warning("%s is unavailable: %s (retry in %.0f s)", key, reason, backoff)
        return f"{key.split('@', 1)[0]} {reason}"

    def _mark_started(self, key: str) -> None:
        health = self.health.get(key)
        if health is not None:  # keep the count: the back-off keeps doubling across restarts
            health.healthy_since = time.time()

    def _mark_healthy(self, key: str) -> None:
        health = self.health.get(key)
        since = health.healthy_since if health is not None else None
        if since is not None and time.time() - since >= HEALTHY_RESET_S:
            del self.health[key]

    def to_json(self) -> dict[str, Any]:
        """The health to keep across one-shot calls. A start still under way that has sent nothing
        at all counts as failed: the process ends with this call, and the next one should not
        wait for the same silence again."""
        health = dict(self.health)
        for key, (client, began) in self._pending.items():
            if client.last_message == 0.0:
                previous = health.get(key)
                failures = previous.failures + 1 if previous else 1
                backoff = min(FIRST_BACKOFF_S * 2 ** (failures - 1), MAX_BACKOFF_S)
                waited = time.monotonic() - began
                reason = f"did not start: did not answer initialize within {waited:.0f} s"
                health[key] = Health(reason, failures, time.time() + backoff)
        return {
            k: {"reason": h.reason, "failures": h.failures, "retry_at": h.retry_at, "healthy_since": h.healthy_since}
            for k, h in health.items()
        }

    def load_json(self, data: Any) -> None:
        if not isinstance(data, dict):
            return
        for key, entry in data.items():
            try:
                since = entry.get("healthy_since")
                self.health[str(key)] = Health(
                    str(entry["reason"]), int(entry["failures"]), float(entry["retry_at"]),
                    float(since) if since is not None else None,
                )  # fmt: skip
            except (AttributeError, KeyError, TypeError, ValueError):
                continue

    # --- clients ------------------------------------------------------------------------------

    async def clients_for(
        self, path: Path, *, budget: float, start: bool = True
    ) -> tuple[list[tuple[LspClient, ServerConfig]], list[str]]:
        """The running clients for ``path`` (started together within one shared ``budget`` when
        ``start``), and a note for each server that is unavailable or missing."""
        notes: list[str] = self.missing_for(path)
        wanted: list[tuple[ServerConfig, Path]] = []
        for config in self.servers_for(path):
            root = find_root(path, self.workspace, config.root_markers, config.root_tiers)
            unavailable = self._unavailable(_key(config.name, root))
            if unavailable is not None:
                notes.append(unavailable)
            else:
                wanted.append((config, root))
        results = await asyncio.gather(*(self._client(config, root, budget, start) for config, root in wanted))
        found: list[tuple[LspClient, ServerConfig]] = []
        for (config, _root), (client, note) in zip(wanted, results, strict=True):
            if client is not None:
                found.append((client, config))
            if note:
                notes.append(note)
        return found, notes

    async def _client(
        self, config: ServerConfig, root: Path, budget: float, start: bool
    ) -> tuple[LspClient | None, str | None]:
        key = (config.name, root)
        health_key = _key(config.name, root)
        client = self.clients.get(key)
        if client is not None and client.stopped:
            await self._drop(client, "is stopped (not running) and was killed")
            return None, f"{config.name} is stopped (not running) and was killed"
        if client is not None and client.hung(HUNG_AFTER_S):
            await self._drop(client, f"answered nothing for {HUNG_AFTER_S:.0f} s (hung) and was killed")
            return None, f"{config.name} answered nothing for {HUNG_AFTER_S:.0f} s (hung) and was killed"
        if client is not None and not client.alive:
            log.info("%s exited; restarting", health_key)
            del self.clients[key]
            await client.kill()
            self._mark_failed(health_key, "exited", first_free=True)
            client = None
            if self._unavailable(health_key) is not None:
                return None, self._unavailable(health_key)
        if client is not None:
            return client, None
        if not start:
            return None, None
        task = self._starts.get(key)
        if task is None:  # one start per instance, awaited by every caller for its own budget
            task = asyncio.ensure_future(self._start(config, root))
            self._starts[key] = task
        done, _ = await asyncio.wait({task}, timeout=max(budget, 0.01))
        if not done:
            return None, f"unconfirmed: {config.name} is still starting (its diagnostics come with a later result)"
        return task.result()

    async def _start(self, config: ServerConfig, root: Path) -> tuple[LspClient | None, str | None]:
        """Start a server with the full INIT_TIMEOUT_S, whatever the caller's budget: a caller
        that cannot wait that long leaves it starting for the next call."""
        key = (config.name, root)
        health_key = _key(config.name, root)
        client = LspClient(config, root, self.state.directory("lsp"))
        began = time.monotonic()
        self._pending[health_key] = (client, began)
        try:
            await client.start(INIT_TIMEOUT_S)
        except (LspError, OSError) as exc:
            await client.kill()
            return None, self._mark_failed(health_key, f"did not start: {exc}")
        except asyncio.CancelledError:
            # The session ends while it starts (a one-shot CLI call). A server that said nothing
            # at all meanwhile is not started again on every call; a slow talker is left alone.
            if client.last_message == 0.0:
                waited = time.monotonic() - began
                self._mark_failed(health_key, f"did not start: did not answer initialize within {waited:.0f} s")
            await client.kill()
            raise
        finally:
            self._starts.pop(key, None)
            self._pending.pop(health_key, None)
        self._mark_started(health_key)
        self.clients[key] = client
        return client, None

    async def _sync_and_wait(
        self, client: LspClient, config: ServerConfig, path: Path, text: str, cap_s: float, probe: bool
    ) -> tuple[list[Diag], str]:
        """Sync ``text`` and wait for the server's diagnostics of it: (diagnostics, status), the
        status one of "confirmed", "late" (confirmed, arrived after an earlier call gave up),
        "quiet" or "none" (see LspClient.wait_for_diagnostics)."""
        uri = path.as_uri()
        awaiting = (_key(config.name, client.root), uri)
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
            self._mark_healthy(_key(config.name, client.root))
            if awaiting in self._awaiting:  # the answer an earlier call gave up on
                self._awaiting.discard(awaiting)
                return diags, "late"
        return diags, status

    def _all_running(self, path: Path) -> bool:
        for config in self.servers_for(path):
            client = self.clients.get(
                (config.name, find_root(path, self.workspace, config.root_markers, config.root_tiers))
            )
            if client is None or not client.alive:
                return False
        return True

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

    async def _drop(self, client: LspClient, reason: str) -> None:
        for key, running in list(self.clients.items()):
            if running is client:
                del self.clients[key]
        await client.kill()
        self._mark_failed(_key(client.config.name, client.root), reason)

    def _display(self, path: Path) -> str:
        try:
            return path.relative_to(self.workspace).as_posix()
        except ValueError:
            return str(path)

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
                    self._awaiting.discard((_key(config.name, client.root), uri))
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

    # --- the lsp tool -------------------------------------------------------------------------

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
        for task in list(self._starts.values()):
            task.cancel()
        await asyncio.gather(*self._starts.values(), return_exceptions=True)
        await asyncio.gather(*(client.shutdown() for client in self.clients.values()))
        self.clients.clear()
        # Servers started again later (a session's idle stop, then a call) know nothing of these.
        self._starts.clear()
        self._importers_opened.clear()
        self._awaiting.clear()
