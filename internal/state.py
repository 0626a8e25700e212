"""The state directory: session state, spilled outputs, logs. Private, and never fatal.

It holds exported shell environments (API keys included) and full command outputs, so it is
created 0700 and its files 0600. When it cannot be created or written (a read-only home, a
wrong ``$TOOLSMITH_STATE_DIR``), the session says so once — naming the directory and the
variable that moves it — and carries on in a private temporary directory, without persistence
across processes.
"""

from __future__ import annotations

import contextlib
import errno
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


def not_private(st: os.stat_result) -> str:
    """Why a file or directory with this stat is not this user's alone ("" when it is): another
    owner, or write access for group or others (they could add, remove or replace entries)."""
    if st.st_uid != os.getuid():
        return f"belongs to uid {st.st_uid}, not to this user (uid {os.getuid()})"
    if st.st_mode & 0o022:
        who = {0o020: "group", 0o002: "others"}.get(st.st_mode & 0o022, "group and others")
        return f"is writable by {who} (mode {stat.S_IMODE(st.st_mode):04o})"
    return ""


#: Flags for our own files in the state directory: never through a symbolic link someone put
#: there, never blocking on a FIFO.
_STATE_FILE_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class NotPrivate(OSError):
    """A file in the state directory is another user's, or others may write it."""


def read_state_file(path: str | Path, max_bytes: int, *, dir_fd: int | None = None) -> bytes:
    """The content of one of our files in the state directory: a regular file (not a symbolic
    link, FIFO or device) of this user's alone, at most ``max_bytes``. Else an OSError that says
    which (:class:`NotPrivate` for the owner or mode)."""
    fd = os.open(path, os.O_RDONLY | _STATE_FILE_FLAGS, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        why = not_private(st)
        if why:
            raise NotPrivate(errno.EPERM, why, str(path))
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes and (chunk := os.read(fd, max_bytes + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
        if size > max_bytes:
            raise OSError(errno.EFBIG, f"over {max_bytes} bytes", str(path))
        return b"".join(chunks)
    finally:
        os.close(fd)


def open_state_file(path: str | Path, flags: int, *, dir_fd: int | None = None) -> int:
    """One of our files in the state directory opened (created 0600) with ``flags``: a regular
    file, not a symbolic link, FIFO or device, else an OSError."""
    fd = os.open(path, flags | _STATE_FILE_FLAGS, PRIVATE_FILE_MODE, dir_fd=dir_fd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    with contextlib.suppress(OSError):
        os.fchmod(fd, PRIVATE_FILE_MODE)
    return fd


def write_state_file(name: str, data: bytes, *, dir_fd: int) -> None:
    """A new private file ``name`` holding ``data`` in the directory ``dir_fd``; whatever had the
    name is removed first (the name is never followed)."""
    from .fsutil.fs import REAL, write_all

    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=dir_fd)
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _STATE_FILE_FLAGS, PRIVATE_FILE_MODE, dir_fd=dir_fd)
    try:
        write_all(REAL, fd, data)
    finally:
        os.close(fd)


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
