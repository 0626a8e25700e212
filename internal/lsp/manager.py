"""The LSP layer tools see: lazy servers per (language, root), diagnostics after view and edits.

One server per (config, project root), started on the first file of its type, restarted on next
use after a crash. After a change the touched files are synced and their fresh diagnostics waited
for (push or pull); the report is errors only, capped per file, plus other files that *gained*
errors during the change (stale ones never flood the output).
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

from ..config import Config
from ..state import StateDir
from .client import LspClient, LspError
from .diagnostics import ERROR, Diag, format_report
from .servers import ServerConfig, find_root, language_id, server_for

log = logging.getLogger("toolsmith.lsp")

#: A diagnostics set counts as settled after this long without another publish.
QUIET_S = 0.2
#: Longest wait for fresh diagnostics after an edit.
WAIT_CAP_S = 4.0
#: view waits less: reading should not stall on a slow server.
VIEW_WAIT_CAP_S = 1.0


class LspManager:
    def __init__(self, workspace: Path, config: Config, state: StateDir) -> None:
        self.workspace = workspace
        self.config = config
        self.state = state
        self.clients: dict[tuple[str, Path], LspClient] = {}
        self._starting: dict[tuple[str, Path], asyncio.Lock] = {}

    def server_for(self, path: Path) -> ServerConfig | None:
        return server_for(path, self.config.lsp_servers)

    async def client_for(self, path: Path) -> tuple[LspClient, ServerConfig] | None:
        """The running client for ``path`` (started or restarted as needed), or None."""
        config = self.server_for(path)
        if config is None:
            return None
        root = find_root(path, self.workspace, config.root_markers)
        key = (config.name, root)
        lock = self._starting.setdefault(key, asyncio.Lock())
        async with lock:
            client = self.clients.get(key)
            if client is not None and not client.alive:
                log.info("%s exited; restarting", config.name)
                await client.shutdown()
                client = None
            if client is None:
                client = LspClient(config, root, self.state.directory("lsp"))
                try:
                    await client.start()
                except (LspError, OSError) as exc:
                    log.warning("could not start %s: %s", config.name, exc)
                    await client.shutdown()
                    return None
                self.clients[key] = client
        return client, config

    async def open_and_wait(self, path: Path, cap_s: float) -> tuple[list[Diag], bool] | None:
        found = await self.client_for(path)
        if found is None:
            return None
        client, config = found
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        uri = path.as_uri()
        current = client.published.get(uri)
        if client.texts.get(uri) == text and current is not None:
            return current.diagnostics, True  # nothing changed since the server last reported
        since = time.monotonic()
        version = client.sync(path, text, language_id(config, path))
        return await client.wait_for_diagnostics(uri, version, since, quiet_s=QUIET_S, cap_s=cap_s)

    def _display(self, path: Path) -> str:
        try:
            return path.relative_to(self.workspace).as_posix()
        except ValueError:
            return str(path)

    # --- DiagnosticsSource --------------------------------------------------------------------

    async def after_view(self, path: Path) -> str:
        result = await self.open_and_wait(path, VIEW_WAIT_CAP_S)
        if result is None:
            return ""
        diags, _ = result
        return format_report({self._display(path): diags}, errors_only=True)

    async def after_change(self, paths: list[Path], *, other_files: int = 0) -> str:
        before = self._error_counts()
        reports: dict[str, list[Diag]] = {}
        unconfirmed: list[str] = []
        results = await asyncio.gather(*(self.open_and_wait(p, WAIT_CAP_S) for p in paths))
        for path, result in zip(paths, results, strict=True):
            if result is None:
                continue
            diags, confirmed = result
            reports[self._display(path)] = diags
            if not confirmed:
                unconfirmed.append(self._display(path))
        touched = {p.as_uri() for p in paths}
        if other_files > 0:
            until = time.monotonic() + WAIT_CAP_S
            await asyncio.gather(*(client.settle(QUIET_S, until) for client in self.clients.values()))
        others = self._gained_errors(before, touched, other_files)
        note = ""
        if unconfirmed:
            files = ", ".join(unconfirmed)
            note = f"(Diagnostics unconfirmed: the language server sent none within {WAIT_CAP_S:.0f} s for {files}.)"
        return format_report(reports, others, errors_only=True, note=note)

    def _error_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for client in self.clients.values():
            for uri, published in client.published.items():
                counts[uri] = sum(1 for d in published.diagnostics if d.severity == ERROR)
        return counts

    def _gained_errors(self, before: dict[str, int], touched: set[str], limit: int) -> dict[str, list[Diag]]:
        if limit <= 0:
            return {}
        out: dict[str, list[Diag]] = {}
        for client in self.clients.values():
            for uri, published in client.published.items():
                errors = [d for d in published.diagnostics if d.severity == ERROR]
                if uri in touched or len(errors) <= before.get(uri, 0):
                    continue
                out[self._display(Path(_uri_path(uri)))] = errors
                if len(out) >= limit:
                    return out
        return out

    async def request(self, path: Path, name: str, params: Any) -> Any:
        found = await self.client_for(path)
        if found is None:
            raise LspError("no server")
        client, config = found
        text = path.read_text(encoding="utf-8", errors="replace")
        client.sync(path, text, language_id(config, path))
        return await client.request(name, params)

    async def close(self) -> None:
        await asyncio.gather(*(client.shutdown() for client in self.clients.values()))
        self.clients.clear()


def _uri_path(uri: str) -> str:
    from urllib.parse import unquote, urlsplit

    return unquote(urlsplit(uri).path)
