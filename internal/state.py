"""The state directory: session state, spilled outputs, logs. Private, and never fatal.

It holds exported shell environments (API keys included) and full command outputs, so it is
created 0700 and its files 0600. When it cannot be created or written (a read-only home, a
wrong ``$TOOLSMITH_STATE_DIR``), the session says so once — naming the directory and the
variable that moves it — and carries on in a private temporary directory, without persistence
across processes.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from pathlib import Path

from . import logs
from .config import STATE_DIR_ENV

#: Directory and file modes: only the owner may look inside.
PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600

#: Session ids name a directory in the state dir: no separators, no "." or "..".
SESSION_ID_RE = re.compile(r"^(?!\.+$)[A-Za-z0-9._-]{1,64}$")


def check_session_id(session_id: str) -> str:
    if not SESSION_ID_RE.match(session_id):
        shown = session_id[:80] + ("…" if len(session_id) > 80 else "")
        raise ValueError(f"invalid session id {shown!r}: use 1-64 characters from A-Z a-z 0-9 . _ - (not only dots)")
    return session_id


class StateDir:
    """One session's view of the state directory. ``problem`` is set once it proved unusable."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.problem: str | None = None
        self._fallback: Path | None = None

    def location(self) -> Path:
        """Where state goes now: the state directory, or the temporary one standing in for it."""
        return self._fallback if self.problem is not None and self._fallback is not None else self.root

    @property
    def usable(self) -> bool:
        """True unless the state directory failed and a temporary one stands in."""
        return self.problem is None

    def directory(self, *parts: str) -> Path:
        """``root/parts…`` created private on demand; on failure the same below a temp dir."""
        if self.problem is None:
            try:
                return _private_dirs(self.root, parts)
            except OSError as exc:
                self.problem = (
                    f"toolsmith: the state directory {self.root} is not usable ({exc.strerror or exc}); "
                    f"session state is not kept and outputs go to a temporary directory. "
                    f"Set {STATE_DIR_ENV} to a writable directory."
                )
        if self._fallback is None:
            import tempfile  # only when the state directory is unusable

            self._fallback = Path(tempfile.mkdtemp(prefix="toolsmith-state-"))
        return _private_dirs(self._fallback, parts)


def _private_dirs(root: Path, parts: tuple[str, ...]) -> Path:
    root.parent.mkdir(parents=True, exist_ok=True)
    if not _make_private(root):
        _tighten(root)
    path = root
    for part in parts:
        path = path / part
        _make_private(path)
    if not os.access(path, os.W_OK | os.X_OK):
        raise PermissionError(13, "Permission denied", str(path))
    return path


def _make_private(path: Path) -> bool:
    """Create ``path`` 0700; False when it already existed."""
    try:
        os.mkdir(path, PRIVATE_DIR_MODE)
    except FileExistsError:
        return False
    return True


def _tighten(path: Path) -> None:
    """An existing state root made by an older version (or by mkdir -p) loses group/other access."""
    with contextlib.suppress(OSError):
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) & 0o077:
            os.chmod(path, stat.S_IMODE(st.st_mode) & ~0o077)


def open_private(path: Path, flags: int = os.O_WRONLY | os.O_CREAT | os.O_TRUNC) -> int:
    """A file descriptor for ``path``, created 0600 whatever the umask."""
    fd = os.open(path, flags | os.O_CLOEXEC, PRIVATE_FILE_MODE)
    with contextlib.suppress(OSError):
        os.fchmod(fd, PRIVATE_FILE_MODE)
    return fd


def log_to_file(path: Path, loggers: tuple[str, ...]) -> None:
    """Send these loggers to ``path`` (created private), never to a terminal or a protocol stream:
    the CLI's stdout is what the model reads, the MCP server's is the protocol. The file is
    created now; the handlers are set up when logging is loaded (see logs.py)."""
    try:
        os.close(open_private(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND))
        writable = True
    except OSError:
        writable = False

    def setup() -> None:
        import logging

        handler = logging.FileHandler(path, delay=True) if writable else logging.NullHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
        for name in loggers:
            logger = logging.getLogger(name)
            logger.addHandler(handler)
            logger.setLevel(logging.INFO)
            logger.propagate = False

    logs.configure(setup)
