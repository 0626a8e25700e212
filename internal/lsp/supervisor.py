"""Language servers per (name, root): started once, watched, held back after failures.

Busy is not hung. A server is hung only when it answers nothing: no message of any kind, not even
the reply to a liveness probe, for HUNG_AFTER_S. A server that cannot start, exits, stops
(SIGSTOP) or hangs is killed at once and retried after a back-off that doubles across restarts
(up to MAX_BACKOFF_S) and resets only after HEALTHY_RESET_S of health. Health is per server
instance (name and root): one project's trouble never disables another. The health survives CLI
invocations with the session state (:meth:`ServerSupervisor.to_json`).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import Config
from ..logs import logger
from ..state import StateDir
from .api import LspError
from .client import INIT_TIMEOUT_S, LspClient
from .servers import ServerConfig, find_root, missing_servers, servers_for

log = logger("toolsmith.lsp")

#: After a server fails, it is not tried again for this long (doubling per failure, capped).
FIRST_BACKOFF_S = 60.0
MAX_BACKOFF_S = 600.0
#: A server that sent nothing at all (no reply to the liveness probe, no notification) for this
#: long after a probe is hung. Slow diagnostics alone never make a server hung.
HUNG_AFTER_S = 20.0
#: A server instance's failure count (and so its back-off) resets after this long healthy.
HEALTHY_RESET_S = 300.0


@dataclass
class Health:
    """A server instance's failures; unavailable until ``retry_at`` (wall clock) after one."""

    reason: str
    failures: int
    retry_at: float
    #: When (wall clock) it last started well; failures reset after HEALTHY_RESET_S of health.
    healthy_since: float | None = None


def instance_key(name: str, root: Path) -> str:
    """A server instance's name in the health table and the saved state: "name@root"."""
    return f"{name}@{root}"


class ServerSupervisor:
    """The running clients by (server name, root), and the health of every server instance."""

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
            unavailable = self._unavailable(instance_key(config.name, root))
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
        health_key = instance_key(config.name, root)
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
        health_key = instance_key(config.name, root)
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

    def _all_running(self, path: Path) -> bool:
        for config in self.servers_for(path):
            client = self.clients.get(
                (config.name, find_root(path, self.workspace, config.root_markers, config.root_tiers))
            )
            if client is None or not client.alive:
                return False
        return True

    async def _drop(self, client: LspClient, reason: str) -> None:
        for key, running in list(self.clients.items()):
            if running is client:
                del self.clients[key]
        await client.kill()
        self._mark_failed(instance_key(client.config.name, client.root), reason)

    async def close(self) -> None:
        for task in list(self._starts.values()):
            task.cancel()
        await asyncio.gather(*self._starts.values(), return_exceptions=True)
        await asyncio.gather(*(client.shutdown() for client in self.clients.values()))
        self.clients.clear()
        # Servers started again later (a session's idle stop, then a call) know nothing of these.
        self._starts.clear()
