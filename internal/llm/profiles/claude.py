"""The claude profile: Read, Write, Edit, MultiEdit, Glob, Grep, Bash, BashOutput, KillShell,
NotebookEdit, WebFetch and LS, with the parameter names and conventions of the tools Claude
models were trained on (Read's ``offset`` is a 1-based line number; Grep takes ``-i``, ``-A``,
``-B``, ``-C``). Descriptions are this project's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..tools.contract import ToolResponse
from ..tools.grep import MAX_CONTEXT_LINES, MAX_HEAD_LIMIT
from ..tools.params import param
from .base import ProfileTool, one_based_offsets


def _drop_none(values: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


# --- Read -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReadParams:
    file_path: str = param("The absolute path of the file to read", minLength=1)
    offset: int | None = param("The 1-based line number to start reading at (for long files)", None, minimum=1)
    limit: int | None = param("How many lines to read (default 2000)", None, minimum=1)
    pages: str | None = param('PDF files: the pages to read, e.g. "3", "1-5" or "2,4"', None)


class Read(ProfileTool):
    name = "Read"
    engine = "view"
    read_only = True
    Params = ReadParams
    description = """Reads a file from the local filesystem and returns it with line numbers.

- `file_path` should be absolute. `offset` is the 1-based line to start at and `limit` the
  number of lines (default 2000); read whole files unless they are long.
- Lines are shown as `     N|text`, numbered from 1; the number and `|` are not part of the file.
- Images come back as images. PDFs are read as text by page (`pages`, e.g. "1-5"). Jupyter
  notebooks are shown cell by cell with their outputs.
- Reading a file is required before editing it with Edit, MultiEdit or Write.
- Use LS for directories, not Read.
"""

    def to_engine(self, params: ReadParams) -> dict[str, Any]:
        offset = params.offset - 1 if params.offset is not None else None
        values = {"file_path": params.file_path, "offset": offset, "limit": params.limit, "pages": params.pages}
        return _drop_none(values)

    def render(self, response: ToolResponse, params: ReadParams) -> ToolResponse:
        return one_based_offsets(response)


# --- Write, Edit, MultiEdit ---------------------------------------------------------------------


@dataclass(frozen=True)
class WriteParams:
    file_path: str = param("The absolute path of the file to write", minLength=1)
    content: str = param("The whole content of the file")


class Write(ProfileTool):
    name = "Write"
    engine = "write"
    idempotent = True
    Params = WriteParams
    description = """Writes a file, replacing it if it exists.

- An existing file must have been read with Read first, and not changed since.
- Prefer Edit or MultiEdit for changes to existing files: they send only the change.
- Do not create documentation files (*.md, README) unless asked to.
"""

    def to_engine(self, params: WriteParams) -> dict[str, Any]:
        return {"file_path": params.file_path, "content": params.content}


@dataclass(frozen=True)
class EditParams:
    file_path: str = param("The absolute path of the file to change", minLength=1)
    old_string: str = param("The exact text to replace")
    new_string: str = param("The text to replace it with (must differ from old_string)")
    replace_all: bool = param("Replace every occurrence of old_string", False)


class Edit(ProfileTool):
    name = "Edit"
    engine = "edit"
    Params = EditParams
    description = """Replaces exact text in a file.

- Read the file first. `old_string` must match the file's text, without Read's line-number
  prefix, and must be unique unless `replace_all` is true; include surrounding lines to make it so.
- Indentation and trailing-whitespace slips are forgiven when the match is still unambiguous;
  the result says when a forgiving match was used.
- For several changes to one file, use MultiEdit.
"""

    def to_engine(self, params: EditParams) -> dict[str, Any]:
        return {
            "file_path": params.file_path, "old_string": params.old_string,
            "new_string": params.new_string, "replace_all": params.replace_all,
        }  # fmt: skip


@dataclass(frozen=True)
class MultiEditItem:
    old_string: str = param("The exact text to replace")
    new_string: str = param("The text to replace it with")
    replace_all: bool = param("Replace every occurrence", False)


@dataclass(frozen=True)
class MultiEditParams:
    file_path: str = param("The absolute path of the file to change", minLength=1)
    edits: list[MultiEditItem] = param("The edits, applied in order", minItems=1)


class MultiEdit(ProfileTool):
    name = "MultiEdit"
    engine = "multiedit"
    Params = MultiEditParams
    description = """Makes several edits to one file in one step: all of them apply, or none.

- Each edit works like Edit, on the result of the ones before it.
- Prefer it to several Edit calls on the same file.
- To create a file, give one edit with an empty `old_string` and the content as `new_string`.
"""

    def to_engine(self, params: MultiEditParams) -> dict[str, Any]:
        edits = [
            {"old_string": e.old_string, "new_string": e.new_string, "replace_all": e.replace_all} for e in params.edits
        ]
        return {"file_path": params.file_path, "edits": edits}


# --- Glob, Grep, LS -----------------------------------------------------------------------------


@dataclass(frozen=True)
class GlobParams:
    pattern: str = param('The glob to match, e.g. "**/*.ts" or "src/**/test_*.py"', minLength=1)
    path: str | None = param("The directory to search (default: the working directory)", None)


class Glob(ProfileTool):
    name = "Glob"
    engine = "glob"
    read_only = True
    Params = GlobParams
    description = """Finds files by name pattern, newest first; respects .gitignore.

- Use it to find files by name; use Grep to search their contents.
- Several speculative searches are best sent together in one turn.
"""

    def to_engine(self, params: GlobParams) -> dict[str, Any]:
        return _drop_none({"pattern": params.pattern, "path": params.path})


@dataclass(frozen=True)
class GrepParams:
    pattern: str = param("The regular expression to search for (ripgrep syntax)", minLength=1)
    path: str | None = param("The file or directory to search (default: the working directory)", None)
    glob: str | None = param('Only files matching this glob, e.g. "*.js" or "*.{ts,tsx}"', None)
    type: str | None = param('Only files of this ripgrep type, e.g. "py", "js", "rust"', None, minLength=1)
    output_mode: Literal["content", "files_with_matches", "count"] = param(
        "content: matching lines; files_with_matches: file paths only; count: matches per file",
        "files_with_matches",
    )
    case_insensitive: bool = param("Ignore case", False, alias="-i")
    line_numbers: bool = param("Show line numbers (content mode; always shown)", True, alias="-n")
    after: int | None = param(
        "Lines of context after each match (content mode)", None, minimum=0, maximum=MAX_CONTEXT_LINES, alias="-A"
    )
    before: int | None = param(
        "Lines of context before each match (content mode)", None, minimum=0, maximum=MAX_CONTEXT_LINES, alias="-B"
    )
    context: int | None = param(
        "Lines of context around each match (content mode)", None, minimum=0, maximum=MAX_CONTEXT_LINES, alias="-C"
    )
    multiline: bool = param("Let patterns span lines ('.' matches newlines too)", False)
    head_limit: int | None = param(
        "Show only the first N entries (lines, files or counts)", None, minimum=1, maximum=MAX_HEAD_LIMIT
    )
    offset: int = param("Skip the first N entries (to page with head_limit)", 0, minimum=0)


class Grep(ProfileTool):
    name = "Grep"
    engine = "grep"
    read_only = True
    Params = GrepParams
    description = """Searches file contents with ripgrep; respects .gitignore.

- `output_mode`: "files_with_matches" (default, paths newest first), "content" (matching lines
  with line numbers; `-A`/`-B`/`-C` add context), or "count" (matches per file).
- Filter files with `glob` or `type`; `-i` ignores case; `multiline` lets a pattern span lines.
- Page with `head_limit` and `offset`.
- Always use Grep for searching; do not run grep or rg through Bash.
"""

    def to_engine(self, params: GrepParams) -> dict[str, Any]:
        return _drop_none({
            "pattern": params.pattern, "path": params.path, "include": params.glob, "type": params.type,
            "output_mode": params.output_mode, "case_insensitive": params.case_insensitive,
            "after": params.after, "before": params.before, "context": params.context,
            "multiline": params.multiline, "head_limit": params.head_limit, "offset": params.offset,
        })  # fmt: skip


@dataclass(frozen=True)
class LsParams:
    path: str = param("The absolute path of the directory to list", minLength=1)
    ignore: list[str] = param("Glob patterns to leave out", [])


class LS(ProfileTool):
    name = "LS"
    engine = "ls"
    read_only = True
    Params = LsParams
    description = """Lists a directory as a tree; respects .gitignore and skips the usual noise.

- Prefer Glob and Grep when you know what you are looking for.
"""

    def to_engine(self, params: LsParams) -> dict[str, Any]:
        return {"path": params.path, "ignore": params.ignore}


# --- Bash and its background shells -------------------------------------------------------------


@dataclass(frozen=True)
class BashParams:
    command: str = param("The command to run", minLength=1)
    timeout: int | None = param("Timeout in milliseconds (max 600000)", None, minimum=1, maximum=600_000)
    description: str | None = param("A few words on what the command does", None)
    run_in_background: bool = param("Run it in the background; read it with BashOutput, stop it with KillShell", False)


class Bash(ProfileTool):
    name = "Bash"
    engine = "bash"
    open_world = True
    Params = BashParams
    description = """Runs a command in a persistent bash shell (the working directory and exported
variables carry over between calls).

- Use Read, Write, Edit, Glob and Grep instead of cat, sed, echo, find and grep.
- Long-running programs (servers, watchers, long builds) go in the background with
  `run_in_background`; `cmd &` inside a normal call is stopped when the call ends.
- Independent commands are best sent as separate calls, not chained with &&.
"""

    def to_engine(self, params: BashParams) -> dict[str, Any]:
        return _drop_none({
            "command": params.command, "timeout": params.timeout, "description": params.description,
            "run_in_background": params.run_in_background or None,
        })  # fmt: skip


@dataclass(frozen=True)
class BashOutputParams:
    bash_id: str = param("The id of the background shell (from Bash with run_in_background)", minLength=1)


class BashOutput(ProfileTool):
    name = "BashOutput"
    engine = "job_output"
    read_only = True
    Params = BashOutputParams
    description = """Returns the new output of a background shell since it was last read, and its state
(running, or exited with its code).
"""

    def to_engine(self, params: BashOutputParams) -> dict[str, Any]:
        return {"job_id": params.bash_id}


@dataclass(frozen=True)
class KillShellParams:
    shell_id: str = param("The id of the background shell to stop", minLength=1)


class KillShell(ProfileTool):
    name = "KillShell"
    engine = "job_kill"
    Params = KillShellParams
    description = "Stops a background shell and everything it started; returns its last output.\n"

    def to_engine(self, params: KillShellParams) -> dict[str, Any]:
        return {"job_id": params.shell_id}


# --- NotebookEdit, WebFetch ---------------------------------------------------------------------


@dataclass(frozen=True)
class NotebookEditParams:
    notebook_path: str = param("The absolute path of the .ipynb file", minLength=1)
    new_source: str = param("The cell's new source (ignored for delete)")
    cell_id: str | None = param("The id of the cell to change, or to insert after", None, minLength=1)
    cell_type: Literal["code", "markdown"] | None = param("The cell's type (required for insert)", None)
    edit_mode: Literal["replace", "insert", "delete"] = param("What to do with the cell", "replace")


class NotebookEdit(ProfileTool):
    name = "NotebookEdit"
    engine = "notebook_edit"
    Params = NotebookEditParams
    description = """Changes one cell of a Jupyter notebook: replace its source, insert a cell, or delete one.

- Read the notebook first; cells are addressed by id. The edited cell's outputs are cleared;
  every other cell is kept as it was.
"""

    def to_engine(self, params: NotebookEditParams) -> dict[str, Any]:
        return _drop_none({
            "file_path": params.notebook_path, "new_source": params.new_source, "cell_id": params.cell_id,
            "cell_type": params.cell_type, "edit_mode": params.edit_mode,
        })  # fmt: skip


@dataclass(frozen=True)
class WebFetchParams:
    url: str = param("The URL to fetch", minLength=1)
    prompt: str = param("What to look for in the page")


class WebFetch(ProfileTool):
    name = "WebFetch"
    engine = "fetch"
    read_only = True
    open_world = True
    Params = WebFetchParams
    description = """Fetches a URL and returns the page as markdown.

- The page itself is returned: `prompt` is not applied by a model here, so read the page for it.
- Responses over 5 MB and binary content are refused.
"""

    def to_engine(self, params: WebFetchParams) -> dict[str, Any]:
        return {"url": params.url, "format": "markdown"}

    def render(self, response: ToolResponse, params: WebFetchParams) -> ToolResponse:
        if response.is_error:
            return response
        note = "(The prompt was not applied: this is the page itself. Look in it for what you asked.)\n\n"
        return ToolResponse(note + response.content, response.is_error, response.metadata, response.images)


TOOLS = [
    Read(), Write(), Edit(), MultiEdit(), Glob(), Grep(), Bash(), BashOutput(), KillShell(),
    NotebookEdit(), WebFetch(), LS(),
]  # fmt: skip
