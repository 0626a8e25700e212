"""Resolving paths the model gives us, and keeping mutating tools inside the workspace."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Collection, Iterable
from pathlib import Path

from ..errors import IsDirectory, NotFound, NotRegular, Outside, Protected, ToolError
from .printable import printable
from .realpath import kernel_real_path

#: How many similar names a "File not found" error suggests.
MAX_SUGGESTIONS = 3
#: Linux limits: one name, a whole path (bytes).
NAME_MAX = 255
PATH_MAX = 4096


def resolve(workspace: Path, file_path: str) -> Path:
    """An absolute, normalised path; relative paths are taken from the workspace root.

    Text that cannot name a file (a NUL character, a lone surrogate) is refused here, with a
    message, rather than failing later inside an OS call.
    """
    if "\0" in file_path:
        raise ToolError(
            f"The path {quote_input(file_path)} contains a NUL character, which no file name can hold.",
            code="invalid_path",
        )
    try:
        file_path.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolError(
            f"The path {quote_input(file_path)} contains an unpaired surrogate character, which no file name can hold.",
            code="invalid_path",
        ) from None
    expanded = os.path.expanduser(file_path)
    normal = os.path.normpath(expanded if os.path.isabs(expanded) else os.path.join(workspace, expanded))
    encoded = normal.encode("utf-8", "surrogateescape")
    longest = max(map(len, encoded.split(b"/")))
    if longest > NAME_MAX or len(encoded) > PATH_MAX:
        raise ToolError(
            f"The path {quote_input(file_path)} is too long: file names are at most {NAME_MAX} bytes and paths "
            f"at most {PATH_MAX}.",
            code="invalid_path",
        )
    return Path(normal)


#: Resolving a path that is being changed under us (a symlink swapped in and out) is retried.
REALPATH_ATTEMPTS = 5


def real_path(path: Path) -> Path:
    """``path`` with every symlink resolved, also when the file itself does not exist yet.

    realpath can fail mid-race (a component stops being a symlink between lstat and readlink:
    EINVAL); that is retried, then refused with a clear message.
    """
    known = kernel_real_path(path)
    if known is not None:
        return known
    for _ in range(REALPATH_ATTEMPTS):
        try:
            return Path(os.path.realpath(path))
        except OSError:
            continue
    raise ToolError(
        f"{quote_input(str(path))} keeps changing while it is being resolved (a directory or symlink is being "
        "swapped); nothing was done. Try again.",
        code="path_changed",
    )


def is_within(path: Path, root: Path) -> bool:
    """``path`` is ``root`` or below it. Both are normalised paths (pathlib's text of them), so
    the text decides what ``root in path.parents`` would, without making every parent."""
    text, base = str(path), str(root)
    return text == base or text.startswith(base if base.endswith("/") else base + "/")


def within_any(path: Path, roots: list[Path]) -> bool:
    return any(is_within(path, root) for root in roots)


def from_workspace(workspace: Path, directory: str | os.PathLike[str]) -> Path:
    """A configured directory: absolute as given (``~`` expanded), relative from the workspace root."""
    expanded = Path(os.path.expanduser(directory))
    return expanded if expanded.is_absolute() else workspace / expanded


def writable_roots(workspace: Path, allowed_dirs: list[Path]) -> list[Path]:
    """The workspace and the allowed directories (relative ones from the workspace), resolved."""
    return [real_path(workspace), *(real_path(from_workspace(workspace, d)) for d in allowed_dirs)]


def check_writable(
    path: Path,
    *,
    workspace: Path,
    allowed_dirs: list[Path],
    protected_dirs: list[str],
    confine: bool,
    follow: bool = True,
) -> Path:
    """The real path a write to ``path`` would change, unless policy refuses it.

    ``follow``: the target of a symlink is written (edit, write); without it the entry itself is
    (deleting or moving a link), so only its directory is resolved. Refused: anything outside
    the workspace and allowed dirs (when confined), and anything under a protected directory —
    a bare name (``.git``) at any depth, a path (``build/keep``) from the workspace root.
    """
    target = real_path(path) if follow else real_path(path.parent) / path.name
    roots = writable_roots(workspace, allowed_dirs)
    if confine and not within_any(target, roots):
        raise Outside(quote_input(str(path)), str(target), str(roots[0]))
    names = {p.strip("/").casefold() for p in protected_dirs if "/" not in p.strip("/")}
    for candidate in (path, target):
        for part in _parts_below_root(candidate, roots):
            # casefold: ".GIT" is ".git" on a case-insensitive file system (macOS, Windows shares).
            if part.casefold() in names:
                raise Protected(
                    quote_input(str(path)),
                    f"'{part}' directories are protected (they hold configuration that runs commands, such as "
                    "git hooks and language-server settings).",
                )
    git_dir = _enclosing_git_dir(target, roots)
    if git_dir is not None:
        raise Protected(
            quote_input(str(path)),
            f"{printable(str(git_dir))} is a git directory (it holds HEAD, objects and refs, or a gitdir/commondir "
            "pointer names it); git metadata is protected like .git, because its hooks and config run commands.",
        )
    check_no_new_git_dir([target], roots, shown=quote_input(str(path)))
    for protected in protected_dirs:
        if "/" in protected.strip("/"):
            pdir = real_path(from_workspace(workspace, protected))
            if is_within(target, pdir):
                raise Protected(quote_input(str(path)), f"{pdir} is a protected directory.")
    return target


#: The entries that make a directory a git directory, as git itself recognises one (a HEAD file
#: with objects/ and refs/, or HEAD with a commondir file): compared case-insensitively, as a
#: case-insensitive file system would.
GIT_DIR_ENTRIES = frozenset({"head", "objects", "refs", "commondir"})


def is_git_dir(directory: Path, adding: Collection[str] = ()) -> bool:
    """Does ``directory`` look like a git directory (what git itself checks): a HEAD file plus
    objects/ and refs/, or a HEAD file plus a commondir pointer (a linked worktree's git dir)?
    ``adding``: entries of :data:`GIT_DIR_ENTRIES` (casefolded) a write is about to create,
    counted as there."""

    def has(name: str, kind: Callable[[Path], bool]) -> bool:
        return name.casefold() in adding or kind(directory / name)

    try:
        if not has("HEAD", Path.is_file):
            return False
        return (has("objects", Path.is_dir) and has("refs", Path.is_dir)) or has("commondir", Path.is_file)
    except OSError:
        return False


def check_no_new_git_dir(targets: Iterable[Path], roots: list[Path], *, shown: str | None = None) -> None:
    """Refuse writes (to the real paths ``targets``, taken together: one patch's files) that would
    make a directory a git directory — its HEAD, objects/, refs/ or commondir written beside the
    others — at any depth below their root, the root included: git would then take that
    directory for a repository and run what its config names (core.fsmonitor) on ``git status``."""
    adding: dict[Path, set[str]] = {}
    for target in targets:
        root = next((r for r in roots if is_within(target, r)), None)
        if root is None:
            continue
        for child in [target, *target.parents]:
            if child == root:
                break
            if child.name.casefold() in GIT_DIR_ENTRIES:
                adding.setdefault(child.parent, set()).add(child.name.casefold())
    for directory, entries in adding.items():
        if is_git_dir(directory, entries):
            raise Protected(
                shown or quote_input(", ".join(str(t) for t in targets)),
                f"it would make {printable(str(directory))} a git directory (HEAD with objects/ and refs/, or HEAD "
                "with commondir): git would take it for a repository and run the commands its config and hooks "
                "name, so git metadata is not built with the file tools.",
            )


def _enclosing_git_dir(target: Path, roots: list[Path]) -> Path | None:
    """The git directory ``target`` is in (or is), at any depth below its root; None if none."""
    root = next((r for r in roots if is_within(target, r)), None)
    if root is None:
        return None
    for directory in [target, *target.parents]:
        if directory != root and not is_within(directory, root):
            break
        if is_git_dir(directory):
            return directory
        if directory == root:
            break
    return None


def _parts_below_root(path: Path, roots: list[Path]) -> tuple[str, ...]:
    for root in roots:
        if is_within(path, root):
            return path.relative_to(root).parts
    return path.parts


def display_path(path: Path, workspace: Path) -> str:
    """Workspace-relative when inside it (diff headers, messages), else absolute; :func:`printable`."""
    try:
        return printable(path.relative_to(workspace).as_posix())
    except ValueError:
        return printable(str(path))


def similar_names(path: Path) -> list[str]:
    """Up to three existing paths in the same directory whose names resemble ``path``'s."""
    try:
        names = os.listdir(path.parent)
    except OSError:
        return []
    import difflib  # for a path that is not there: a call that finds its file does not load it

    lowered = path.name.lower()
    close = difflib.get_close_matches(path.name, names, n=MAX_SUGGESTIONS, cutoff=0.5)
    contains = [n for n in names if lowered and (lowered in n.lower() or n.lower() in lowered)]
    seen: list[str] = []
    for name in [*close, *sorted(contains)]:
        if name not in seen:
            seen.append(name)
    return [str(path.parent / n) for n in seen[:MAX_SUGGESTIONS]]


def not_found_error(path: Path) -> NotFound:
    return NotFound(printable(str(path)), [printable(name) for name in similar_names(path)])


def require_directory(path: Path, hint: str) -> Path:
    """``path`` if it is an existing directory; else the not-found error or ``hint``'s refusal
    (``not_a_directory``; a FIFO, device or socket: ``not_regular_file``)."""
    st = stat_existing(path)
    if stat.S_ISDIR(st.st_mode):
        return path
    kind = _NOT_REGULAR.get(stat.S_IFMT(st.st_mode))
    if kind is not None:
        raise NotRegular(f"Path {printable(str(path))} is {kind}, not a directory. {hint}")
    raise ToolError(f"Path {printable(str(path))} is not a directory. {hint}", code="not_a_directory")


def require_file_or_directory(path: Path, purpose: str) -> os.stat_result:
    """The stat of ``path``, a regular file or a directory (symlinks followed): what a search
    may be given. A FIFO, device or socket is refused at once (``not_regular_file``) — a search
    would block on its open until its timeout."""
    st = stat_existing(path)
    if not stat.S_ISDIR(st.st_mode) and (error := not_regular_error(path, st, purpose)) is not None:
        raise error
    return st


def stat_existing(path: Path) -> os.stat_result:
    """``os.stat(path)``; the not-found error (with similar names) or a clear OS error otherwise."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        raise not_found_error(path) from None
    except OSError as exc:
        raise ToolError(os_error_message(exc, path), code=os_error_code(exc)) from None


_NOT_REGULAR = {
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
}


def not_regular_error(path: Path, st: os.stat_result, purpose: str) -> ToolError | None:
    """Why ``path`` (stat ``st``) is not a file the tools can use, or None for a regular file.

    ``purpose`` ends the message ("view reads regular files only."). The error code is
    ``not_regular_file`` (a directory: ``is_directory``).
    """
    if stat.S_ISREG(st.st_mode):
        return None
    kind = _NOT_REGULAR.get(stat.S_IFMT(st.st_mode), "not a regular file")
    error = IsDirectory if stat.S_ISDIR(st.st_mode) else NotRegular
    return error(f"{printable(str(path))} is {kind}; {purpose}")


def fd_real_path(fd: int) -> Path | None:
    """Where an open descriptor really is (the kernel's answer, immune to later renames of the
    names we used to open it); None where /proc is not mounted."""
    try:
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        return None


def open_regular_file(
    path: Path, purpose: str = "view reads regular files only.", *, allowed: Callable[[Path], bool] | None = None
) -> tuple[int, os.stat_result]:
    """An fd for reading ``path`` and its stat, only if it is a regular file.

    ``allowed``: the file actually opened (its real path, from the descriptor) must pass it — a
    path checked (and perhaps approved) before opening can be swapped for a symlink to a file
    outside before the open; then nothing is read.

    Opened non-blocking, so a FIFO (also one swapped in after any earlier check) cannot block
    the open or the read; FIFOs, devices (``/dev/zero``) and sockets are refused with a clear
    error before anything is read.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise not_found_error(path) from None
    except OSError as exc:
        raise ToolError(os_error_message(exc, path), code=os_error_code(exc)) from None
    st = os.fstat(fd)
    error = not_regular_error(path, st, purpose)
    if error is None and allowed is not None:
        real = fd_real_path(fd)
        if real is not None and not allowed(real):
            error = ToolError(
                f"{printable(str(path))} changed while it was being opened: it now leads to {printable(str(real))}, "
                "which was not approved for reading (a file or directory on the way was swapped for a symlink). "
                "Nothing was read.",
                code="path_changed",
            )
    if error is not None:
        os.close(fd)
        raise error
    return fd, st


def read_opened(fd: int, path: Path, size: int) -> bytes:
    """The whole of a file opened with :func:`open_regular_file` (``size``: its stat size): one read
    of that size (no second copy from joining chunks), then whatever it grew by since. A failed
    read (``/proc/self/mem``: EIO) is :func:`read_error`'s refusal."""
    try:
        first = os.read(fd, size + 1)
        rest = os.read(fd, 1 << 20) if first else b""
        if not rest:
            return first
        chunks = [first, rest]
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    except OSError as exc:
        raise read_error(exc, path) from None
    return b"".join(chunks)


def read_error(exc: OSError, path: Path) -> ToolError:
    """A failed read of an opened file (``/proc/self/mem``: EIO) as a specific, model-facing error."""
    return ToolError(os_error_message(exc, path), code=os_error_code(exc))


def os_error_code(exc: OSError) -> str:
    """A stable snake_case code for an OSError (metadata["error"])."""
    codes = {
        errno.EACCES: "permission_denied",
        errno.EPERM: "permission_denied",
        errno.EIO: "unreadable_file",
        errno.EINVAL: "unreadable_file",
        errno.ENXIO: "not_regular_file",
        errno.ELOOP: "symlink_loop",
        errno.ENOTDIR: "not_a_directory",
        errno.EISDIR: "is_directory",
        errno.ENAMETOOLONG: "path_too_long",
        errno.EROFS: "read_only_file_system",
        errno.ENOSPC: "no_space",
        errno.EDQUOT: "no_space",
    }
    return codes.get(exc.errno or 0, "os_error")


def os_error_message(exc: OSError, path: Path | str) -> str:
    """A one-line, actionable message for an OSError on ``path`` (never a bare errno)."""
    shown = quote_input(str(path))
    reasons = {
        errno.ENAMETOOLONG: "the path (or one of its names) is too long",
        errno.ELOOP: "it is a symbolic link that loops (or too many links to follow)",
        errno.EACCES: "permission denied",
        errno.EPERM: "operation not permitted",
        errno.ENOTDIR: "a component of the path is not a directory",
        errno.EISDIR: "it is a directory",
        errno.ENXIO: "it is a socket or a device without a reader",
        errno.EIO: "it cannot be read as a file (an input/output error: a special file such as /proc/self/mem, "
        "or a failing device)",
        errno.EINVAL: "it cannot be read as a file (a special file that refuses ordinary reads)",
        errno.EROFS: "the file system is read-only",
        errno.ENOSPC: "no space left on the device",
        errno.EDQUOT: "the disk quota is exhausted",
    }
    reason = reasons.get(exc.errno or 0, exc.strerror or type(exc).__name__)
    return f"Cannot access {shown}: {reason}."


#: Error messages quote at most this much of any input, so a 10 MB argument is not echoed back.
MAX_QUOTED_CHARS = 200


def quote_input(text: str) -> str:
    """``text`` for an error message: at most MAX_QUOTED_CHARS characters, :func:`printable`."""
    if len(text) <= MAX_QUOTED_CHARS:
        return printable(text)
    return f"{printable(text[:MAX_QUOTED_CHARS])}… ({len(text)} characters)"
