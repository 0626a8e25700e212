"""The audit log: one JSON line per tool call, written off the call's path.

A record holds ``time`` (UTC, ISO 8601, when the call started), ``session``, ``tool``,
``params`` (secrets redacted, long strings cut), ``is_error``, ``exit_code`` (bash and custom
tools, else null), ``duration_ms``, ``bytes_in`` (the params as JSON), ``bytes_out`` (the
content as UTF-8), ``truncated`` and ``full_output_path``.

Records go through a queue to one writer thread, so a slow or stuck disk never delays a result;
each record is one ``write`` of a whole line to an ``O_APPEND`` descriptor, so lines from
several sessions or processes sharing the file do not interleave. A sink that fails (a
directory, a full disk) is logged once and drops records — it never fails a call. When the
queue is full, records are dropped and counted rather than block a call.

Redaction: the value of any key whose name contains a secret word (``token``, ``password``,
``authorization``, ``api_key``, …; case-insensitive, ``-`` read as ``_``), at any depth of
nested objects and lists, becomes ``"[redacted]"``. Over-redaction (``max_tokens``) is the
accepted cost. Secrets inside free text — a token typed into a bash command line — are **not**
found: the log records what the model sent.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .logs import logger
from .state import open_private

log = logger("toolsmith")

#: Key fragments whose values are never logged (extended by ``Config.audit_redact_keys``).
DEFAULT_REDACT_KEYS: tuple[str, ...] = (
    "token", "password", "passwd", "secret", "authorization", "api_key", "apikey", "access_key",
    "private_key", "cookie", "credential", "session_key",
)  # fmt: skip
REDACTED = "[redacted]"
#: Characters of one string parameter kept in a record (a whole file's content is not).
MAX_PARAM_CHARS = 2000
#: Records waiting for the writer; beyond this they are dropped (and counted), never waited for.
MAX_QUEUED_RECORDS = 10_000
#: How long closing waits for queued records to reach the file.
CLOSE_TIMEOUT_S = 2.0

_STOP = object()


class AuditLog:
    """An append-only JSONL sink. :meth:`record` never blocks and never raises."""

    def __init__(self, path: str | os.PathLike[str], redact_keys: list[str] | tuple[str, ...] = ()) -> None:
        self.path = Path(path)
        self.redact_keys = tuple(k.lower().replace("-", "_") for k in (*DEFAULT_REDACT_KEYS, *redact_keys))
        self._queue: queue.Queue[Any] = queue.Queue(MAX_QUEUED_RECORDS)
        self._writer: threading.Thread | None = None
        self._lock = threading.Lock()
        self.dropped = 0
        self.failed: str | None = None

    def record(
        self,
        *,
        started: float,
        session: str,
        tool: str,
        params: Any,
        is_error: bool,
        metadata: dict[str, Any],
        content: str,
    ) -> None:
        """Queue one record (``started``: ``time.time()`` when the call began)."""
        entry = {
            "time": datetime.fromtimestamp(started, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "session": session,
            "tool": tool,
            "params": self.redact(_as_json_value(params)),
            "is_error": is_error,
            "exit_code": metadata.get("exit_code"),
            "duration_ms": metadata.get("duration_ms"),
            "bytes_in": len(params.encode("utf-8", "replace")) if isinstance(params, str) else _json_size(params),
            "bytes_out": len(content.encode("utf-8", "replace")),
            "truncated": bool(metadata.get("truncated", False)),
            "full_output_path": metadata.get("full_output_path"),
        }
        self._start()
        try:
            self._queue.put_nowait(entry)
        except queue.Full:
            self.dropped += 1
            if self.dropped == 1:
                log.warning("audit log %s: the writer is behind; dropping records", self.path)

    def redact(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: REDACTED if self._secret(str(k)) else self.redact(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.redact(v) for v in value]
        if isinstance(value, str) and len(value) > MAX_PARAM_CHARS:
            return value[:MAX_PARAM_CHARS] + f"…[{len(value)} characters]"
        return value

    def _secret(self, key: str) -> bool:
        normal = key.lower().replace("-", "_")
        return any(fragment in normal for fragment in self.redact_keys)

    def close(self) -> None:
        """Write what is queued (waiting at most CLOSE_TIMEOUT_S) and stop the writer."""
        writer = self._writer
        if writer is None:
            return
        with contextlib.suppress(queue.Full):
            self._queue.put(_STOP, timeout=CLOSE_TIMEOUT_S)
        writer.join(CLOSE_TIMEOUT_S)
        if writer.is_alive():
            log.warning("audit log %s: records still queued after %.0f s were not written", self.path, CLOSE_TIMEOUT_S)
        with self._lock:
            self._writer = None

    def _start(self) -> None:
        with self._lock:
            if self._writer is None:
                self._writer = threading.Thread(target=self._write_all, name="toolsmith-audit", daemon=True)
                self._writer.start()

    def _write_all(self) -> None:
        fd: int | None = None
        try:
            while (entry := self._queue.get()) is not _STOP:
                if self.failed is not None:
                    continue
                line = (json.dumps(entry, ensure_ascii=False, default=str) + "\n").encode("utf-8", "replace")
                try:
                    if fd is None:
                        self.path.parent.mkdir(parents=True, exist_ok=True)
                        fd = open_private(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
                    while line:  # a regular file takes it whole; the loop covers a short write
                        line = line[os.write(fd, line) :]
                except OSError as exc:
                    self.failed = exc.strerror or str(exc)
                    log.warning("audit log %s cannot be written (%s); records are dropped", self.path, self.failed)
        finally:
            if fd is not None:
                os.close(fd)


def _as_json_value(params: Any) -> Any:
    if isinstance(params, str | bytes):
        try:
            return json.loads(params)
        except (ValueError, RecursionError):
            return f"<not JSON: {len(params)} bytes>"
    return params


def _json_size(params: Any) -> int:
    try:
        return len(json.dumps(params, ensure_ascii=False, default=str).encode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return 0
