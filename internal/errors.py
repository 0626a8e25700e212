"""The outcome layer: failures the model is told about, typed, with stable error codes.

Mechanisms and tools raise a :class:`ToolError` subclass carrying the facts (a path, the
matching lines, the closest region); the subclass renders the model's text from them and sets
``metadata["error"]`` to its :attr:`ToolError.code`, so a host can tell "not read" from
"ambiguous" from "denied" without parsing English. The tool runner (llm/tools/runner.py) turns
any ToolError into an error response; any other exception is a bug, logged with its traceback
and reported in one line. The codes are documented in docs/error-codes.md (the test suite checks
that every code set in the source is listed there).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from .vocabulary import tool_name

#: A number longer than this is described by its length, not shown.
MAX_SHOWN_NUMBER = 40


def describe_value(value: Any, dialect: Literal["json", "toml"] = "json") -> str:
    """What kind of value the caller gave, in the words of its format ("an object" in JSON
    parameters, "a table" in a TOML config file), for "expected X, got Y" messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        shown = repr(value)
        return f"the number {shown}" if len(shown) <= MAX_SHOWN_NUMBER else f"a number of {len(shown)} digits"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array" if dialect == "json" else "a list"
    if isinstance(value, dict):
        return "an object" if dialect == "json" else "a table"
    return type(value).__name__


class ToolError(Exception):
    """A failure explained to the model. ``message`` is the whole response text.

    Every failure has a stable code (docs/error-codes.md): a subclass names its ``code``; a
    failure without a class of its own passes ``code=``. A code given explicitly (``code=``, or
    ``metadata["error"]``: a mechanism that knows better, e.g. an OS error mapped to
    ``permission_denied``) wins over the class's.
    """

    code: ClassVar[str | None] = None

    def __init__(self, message: str, metadata: dict[str, Any] | None = None, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.metadata = dict(metadata or {})
        if code is not None:
            self.metadata["error"] = code
        elif self.code is not None:
            self.metadata.setdefault("error", self.code)


class InvalidParams(ToolError):
    """The call's parameters do not fit the tool's ``Params``."""

    code = "invalid_params"


class UnknownTool(ToolError):
    code = "unknown_tool"


class NotFound(ToolError):
    """No file at ``path``; ``similar`` lists names in its directory that look alike."""

    code = "not_found"

    def __init__(self, path: str, similar: Sequence[str] = ()) -> None:
        message = f"File not found: {path}"
        if similar:
            message += "\n\nDid you mean one of these?\n" + "\n".join(similar)
        super().__init__(message, {"file_path": path})
        self.path = path
        self.similar = list(similar)


def must_read() -> str:
    """What every edit-class tool says of a file this session has not read (in the words of the
    tools the model sees: vocabulary.py)."""
    return f"You must read the file before editing it. Use the {tool_name('view')} tool first."


class NotRead(ToolError):
    """An edit of a file this session has not viewed."""

    code = "not_read"

    def __init__(self, path: str) -> None:
        super().__init__(f"{must_read()} ({path})", {"file_path": path})
        self.path = path


class ChangedSinceRead(ToolError):
    """The file changed on disk after this session last read it; ``when`` says how we know."""

    code = "changed_since_read"

    def __init__(self, path: str, when: str = "", *, nothing_written: bool = False) -> None:
        detail = f" ({when})" if when else ""
        written = "; nothing was written" if nothing_written else ""
        super().__init__(
            f"File {path} has been modified since it was last read{detail}{written}. Read it again before editing.",
            {"file_path": path},
        )
        self.path = path


class ModifiedWhileSaving(ToolError):
    """A program outside our lock saved the target between the last check and the swap."""

    code = "modified_while_saving"

    def __init__(self, path: str) -> None:
        super().__init__(
            f"File {path} was modified while saving (by a program outside this session); nothing was written and "
            "the other program's version is kept. Read it again before editing.",
            {"file_path": path},
        )


class OpenForWriting(ToolError):
    """Another program kept the target open for writing: replacing it would lose its writes."""

    code = "open_for_writing"

    def __init__(self, path: str, waited_s: float) -> None:
        super().__init__(
            f"File {path} is open for writing in another program (still after {waited_s:g} s); nothing was written, "
            "so that program's writes are not lost. Try again when it has closed the file.",
            {"file_path": path},
        )


class ReadOnlyFile(ToolError):
    """The file's mode makes it read-only."""

    code = "read_only_file"

    def __init__(self, path: str, mode: int) -> None:
        super().__init__(
            f"{path} is read-only (mode {mode:04o}); it was not changed. If it should change, make it writable "
            "first (chmod u+w) and read it again.",
            {"file_path": path},
        )


class NotWritable(ToolError):
    """The operating system would refuse this user's write (the file's owner or ACLs)."""

    code = "permission_denied"

    def __init__(self, path: str) -> None:
        super().__init__(f"{path} is not writable by this user; it was not changed.", {"file_path": path})


class PathChanged(ToolError):
    """A directory on the way to the target was replaced (by a symlink or a file) mid-write."""

    code = "path_changed"


class NoMatch(ToolError):
    """old_string (or a patch hunk) matches nowhere; ``closest`` is the nearest region, if any."""

    code = "no_match"

    def __init__(self, message: str, closest: str = "") -> None:
        super().__init__(message)
        self.closest = closest


class Ambiguous(ToolError):
    """old_string matches in several places (``lines``, 1-based)."""

    code = "ambiguous_match"

    def __init__(self, message: str, lines: Sequence[int] = ()) -> None:
        super().__init__(message, {"lines": list(lines)})
        self.lines = list(lines)


class Outside(ToolError):
    """A write to a path that resolves outside the workspace and the allowed directories."""

    code = "outside_workspace"

    def __init__(self, path: str, target: str, root: str) -> None:
        super().__init__(
            f"Refusing to write {path}: it resolves to {target}, outside the workspace {root}. Only files "
            "inside the workspace can be changed."
        )
        self.path = path
        self.target = target


class Protected(ToolError):
    """A write under a protected directory (``.git``, any git directory, ``protected_dirs``)."""

    code = "protected_path"

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"Refusing to write {path}: {why}")
        self.path = path


class NoChange(ToolError):
    """The call would leave the file(s) exactly as they are (write of the same content, an edit
    whose new_string equals old_string, a rename to the same name): nothing was written."""

    code = "no_change"


class FileExists(ToolError):
    """A new file (edit's empty old_string, a patch's Add File or Move to) where one exists."""

    code = "file_exists"

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message, {"file_path": path})
        self.path = path


class IsDirectory(ToolError):
    code = "is_directory"


class NotRegular(ToolError):
    """A FIFO, socket, device or special file where a regular file is needed."""

    code = "not_regular_file"


class OffsetOutOfRange(ToolError):
    """An offset past the end of a file (or of a search's results); the message gives the last
    valid one."""

    code = "offset_out_of_range"


class TimedOut(ToolError):
    """The call ran past its time limit and was stopped."""

    code = "timed_out"

    def __init__(self, message: str, seconds: float, metadata: dict[str, Any] | None = None) -> None:
        super().__init__(message, {"timeout_s": seconds, **(metadata or {})})
        self.seconds = seconds


class ToolNotOffered(ToolError):
    """The tool exists but the session's policy does not offer it (a read-only session)."""

    code = "tool_not_offered"


class MissingDependency(ToolError):
    """A package the call needs is not installed in this Python."""

    code = "missing_dependency"


class InternalError(ToolError):
    """A bug: an exception no mechanism turned into an outcome (logged with its traceback)."""

    code = "internal_error"


class LspUnavailable(ToolError):
    """No language server can answer for the file: servers are off, none is configured or
    installed for its type, or the session's diagnostics source offers no navigation."""

    code = "lsp_unavailable"


class Denied(ToolError):
    """The permission service (the user, a rule, a read-only session) refused the action."""

    code = "denied"


class ToolCancelled(ToolError):
    """The call's cancellation token fired before the tool finished (``metadata["aborted"]``)."""


class ParseFailed(ToolError):
    """Parsing a deeply nested file failed in the child process it was tried in first
    (syntax/probe.py): the parser crashed there, or ran out of time or memory. This process was
    spared; the file is not outlined, and the syntax gate does not judge it."""

    code = "parse_failed"

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(
            f"{path} could not be parsed: {reason}. It nests deeply, so it was parsed in a separate process "
            f"first, which spared this one. Use {tool_name('view')} and {tool_name('grep')} to read it, and "
            f"{tool_name('edit')} to change it.",
            {"file_path": path, "reason": reason},
        )
        self.path = path
        self.reason = reason


class CannotAsk(ToolError):
    """The question tool has no way to reach the user here (the host offers none, an MCP client
    without elicitation, or the host's way failed): decide and say so, never wait."""

    code = "cannot_ask"


class NoAnswer(ToolError):
    """The user did not answer the question within its time limit."""

    code = "no_answer"


class InputRequired(ToolError):
    """Over MCP's 2026-07-28 protocol a server asks the user by answering the call with its
    questions (``metadata["input_requests"]``); the client asks, then calls again with the
    answers. The MCP server turns this outcome into that answer: no model ever reads it."""

    code = "input_required"

    def __init__(self, input_requests: dict[str, Any]) -> None:
        super().__init__("The call waits for the user's answers.", {"input_requests": input_requests})
