"""The library's loggers, with :mod:`logging` imported only once something logs.

Importing logging costs about 4 ms (it brings traceback, tokenize, string.Template and the
regexes they compile), a tenth of a one-shot CLI view, which logs nothing. So modules name their
logger with :func:`logger`, a stand-in that imports logging on its first record, and settings
(the package's NullHandler, the CLI's log file) are given to :func:`configure`, which applies
them at once when logging is loaded already, else just before the first record of ours.

Records of other libraries' loggers (pygls) go through ours or are routed with :func:`get`,
which applies the settings too.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import logging

_pending: list[Callable[[], None]] = []
_pending_lock = threading.Lock()


def configure(setup: Callable[[], None]) -> None:
    """Run ``setup`` (it configures logging) before any record of ours is made: now when
    logging is imported already (another library, an embedding application), else when one of
    our loggers first logs."""
    if "logging" in sys.modules:
        setup()
        return
    with _pending_lock:
        _pending.append(setup)


def get(name: str) -> logging.Logger:
    """The logger ``name``, after the settings given to :func:`configure` are applied."""
    import logging

    if _pending:
        with _pending_lock:  # another thread's first record waits until the settings are in place
            for setup in _pending:
                setup()
            _pending.clear()
    return logging.getLogger(name)


class Logger:
    """A module's logger, made on its first record (:func:`get`). The methods are the
    :class:`logging.Logger` methods of the same name; records name the caller as their source."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._logger: logging.Logger | None = None

    def _real(self) -> logging.Logger:
        if self._logger is None:
            self._logger = get(self.name)
        return self._logger

    # stacklevel=2: the record's source is who called us, not this module.
    def debug(self, msg: object, *args: object, **kwargs: Any) -> None:
        self._real().debug(msg, *args, stacklevel=2, **kwargs)

    def info(self, msg: object, *args: object, **kwargs: Any) -> None:
        self._real().info(msg, *args, stacklevel=2, **kwargs)

    def warning(self, msg: object, *args: object, **kwargs: Any) -> None:
        self._real().warning(msg, *args, stacklevel=2, **kwargs)

    def error(self, msg: object, *args: object, **kwargs: Any) -> None:
        self._real().error(msg, *args, stacklevel=2, **kwargs)

    def exception(self, msg: object, *args: object, **kwargs: Any) -> None:
        self._real().exception(msg, *args, stacklevel=2, **kwargs)

    def handle(self, record: logging.LogRecord) -> None:
        self._real().handle(record)


def logger(name: str) -> Logger:
    """The logger for a module's records (``toolsmith`` or below it)."""
    return Logger(name)
