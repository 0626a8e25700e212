"""The claude profile's file and shell tools: Read, Write, Edit, NotebookEdit, Bash and TaskStop,
with the input properties of Claude Code 2.1.332 (``sdk-tools.d.ts`` of npm
``@anthropic-ai/claude-agent-sdk@0.3.332``). Descriptions are this project's own."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from ...errors import InvalidParams
from ...vocabulary import speaking
from ..tools.command_call import start_background_job
from ..tools.context import ToolContext
from ..tools.contract import ToolResponse
from ..tools.params import param
from .base import ProfileTool, drop_none, not_supported, with_notes
from .vocabularies import CLAUDE

#: Read with ``allow_large``: a page may be this large (bytes) and this long (lines) instead of
#: the configured page size — "what still fits in your context".
ALLOW_LARGE_BYTES = 256 * 1024
ALLOW_LARGE_LINES = 20_000
#: Bash's ``timeout``: a foreground command at most this long (ms); a background one by default
#: this long, at most that long (the product's limits).
MAX_FOREGROUND_MS = 600_000
DEFAULT_BACKGROUND_MS = 1_800_000
MAX_BACKGROUND_MS = 7_200_000


class ClaudeTool(ProfileTool):
    vocabulary = CLAUDE


# --- Read ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReadParams:
    file_path: str = param("The absolute path of the file to read", minLength=1)
    offset: int | None = param("The 1-based line number to start reading at (for long files)", None, minimum=1)
    limit: int | None = param("How many lines to read (default 2000)", None, minimum=1)
    pages: str | None = param('PDF files: the pages to read, e.g. "3", "1-5" or "2,4" (at most 20)', None)
    allow_large: bool = param("Read a file (or range) over the usual size limit, up to 256 KiB", False)


class Read(ClaudeTool):
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
- A background command's output file (named by Bash) is read with Read too.
- `allow_large` reads past the usual page size (up to 256 KiB): only when you need all of it.
- Reading a file is required before editing it with Edit or Write.
"""

    async def run(self, params: ReadParams, ctx: ToolContext) -> ToolResponse:
        offset = params.offset - 1 if params.offset is not None else None
        limit = params.limit if params.limit is not None else (ALLOW_LARGE_LINES if params.allow_large else None)
        values = drop_none({"file_path": params.file_path, "offset": offset, "limit": limit, "pages": params.pages})
        if params.allow_large:
            ctx = ctx.variant(config=replace(ctx.config, max_output_bytes=ALLOW_LARGE_BYTES))
        return await self.engine_call("view", values, ctx)


# --- Write, Edit, NotebookEdit ------------------------------------------------------------------


@dataclass(frozen=True)
class WriteParams:
    file_path: str = param("The absolute path of the file to write", minLength=1)
    content: str = param("The whole content of the file")


class Write(ClaudeTool):
    name = "Write"
    engine = "write"
    idempotent = True
    Params = WriteParams
    description = """Writes a file, replacing it if it exists.

- An existing file must have been read with Read first, and not changed since.
- Prefer Edit for changes to existing files: it sends only the change.
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


class Edit(ClaudeTool):
    name = "Edit"
    engine = "edit"
    Params = EditParams
    description = """Replaces exact text in a file.

- Read the file first. `old_string` must match the file's text, without Read's line-number
  prefix, and must be unique unless `replace_all` is true; include surrounding lines to make it so.
- Indentation and trailing-whitespace slips are forgiven when the match is still unambiguous;
  the result says when a forgiving match was used.
"""

    def to_engine(self, params: EditParams) -> dict[str, Any]:
        return {
            "file_path": params.file_path, "old_string": params.old_string,
            "new_string": params.new_string, "replace_all": params.replace_all,
        }  # fmt: skip


@dataclass(frozen=True)
class NotebookEditParams:
    notebook_path: str = param("The absolute path of the .ipynb file", minLength=1)
    new_source: str = param("The cell's new source (ignored for delete)")
    cell_id: str | None = param("The id of the cell to change, or to insert after", None, minLength=1)
    cell_type: Literal["code", "markdown"] | None = param("The cell's type (required for insert)", None)
    edit_mode: Literal["replace", "insert", "delete"] = param("What to do with the cell", "replace")


class NotebookEdit(ClaudeTool):
    name = "NotebookEdit"
    engine = "notebook_edit"
    Params = NotebookEditParams
    description = """Changes one cell of a Jupyter notebook: replace its source, insert a cell, or delete one.

- Read the notebook first; cells are addressed by id. The edited cell's outputs are cleared;
  every other cell is kept as it was.
"""

    def to_engine(self, params: NotebookEditParams) -> dict[str, Any]:
        return drop_none({
            "file_path": params.notebook_path, "new_source": params.new_source, "cell_id": params.cell_id,
            "cell_type": params.cell_type, "edit_mode": params.edit_mode,
        })  # fmt: skip


# --- Bash and TaskStop --------------------------------------------------------------------------


@dataclass(frozen=True)
class BashParams:
    command: str = param("The command to run", minLength=1)
    timeout: int | None = param(
        "Timeout in milliseconds: max 600000 in the foreground; in the background how long it may run "
        "(default 1800000, max 7200000)", None, minimum=1, maximum=MAX_BACKGROUND_MS,
    )  # fmt: skip
    description: str | None = param("A few words on what the command does", None)
    run_in_background: bool = param("Run it in the background; read its output file with Read", False)
    disable_sandbox: bool = param(
        "Ask to run without the sandbox (not honoured here)", False, alias="dangerouslyDisableSandbox"
    )


class Bash(ClaudeTool):
    name = "Bash"
    engine = "bash"
    open_world = True
    Params = BashParams
    description = """Runs a command in a persistent bash shell (the working directory and exported
variables carry over between calls).

- Use Read, Write, Edit, Glob and Grep instead of cat, sed, echo, find and grep.
- Long-running programs (servers, watchers, long builds) go in the background with
  `run_in_background`: the result names the task id and the file its output is written to; read
  that file with Read, stop the task with TaskStop. `cmd &` inside a normal call is stopped when
  the call ends.
- Independent commands are best sent as separate calls, not chained with &&.
"""

    async def run(self, params: BashParams, ctx: ToolContext) -> ToolResponse:
        notes = []
        if params.disable_sandbox:
            notes.append(not_supported("dangerouslyDisableSandbox", "the sandbox is the host's setting; the "
                                       "command ran with the session's settings"))  # fmt: skip
        if params.run_in_background:
            return with_notes(await self._background(params, ctx), notes)
        if params.timeout is not None and params.timeout > MAX_FOREGROUND_MS:
            raise InvalidParams(
                f"timeout is at most {MAX_FOREGROUND_MS} ms for a foreground command; set run_in_background for "
                "a longer one."
            )
        values = drop_none({"command": params.command, "timeout": params.timeout, "description": params.description})
        return with_notes(await self.engine_call("bash", values, ctx), notes)

    async def _background(self, params: BashParams, ctx: ToolContext) -> ToolResponse:
        with speaking(self.vocabulary):  # the engine's checks and refusals, in this profile's words
            job = await start_background_job(
                params.command, ctx, tool="bash", tty=False, timeout_ms=params.timeout or DEFAULT_BACKGROUND_MS,
                description=params.description,
            )  # fmt: skip
        text = (
            f"Command running in background with ID: {job.id}. Output is being written to: {job.spill_path}\n"
            "Read that file with Read to see its output; stop the task with TaskStop."
        )
        return ToolResponse(text, metadata={"job_id": job.id, "pid": job.pid, "output_file": str(job.spill_path)})


@dataclass(frozen=True)
class TaskStopParams:
    task_id: str | None = param("The id of the background task to stop", None, minLength=1)
    shell_id: str | None = param("Deprecated: the same as task_id", None, minLength=1)


class TaskStop(ClaudeTool):
    name = "TaskStop"
    engine = "job_kill"
    Params = TaskStopParams
    description = "Stops a background task (a Bash command run in the background) and everything it started.\n"

    async def run(self, params: TaskStopParams, ctx: ToolContext) -> ToolResponse:
        task = params.task_id or params.shell_id
        if task is None:
            raise InvalidParams("Give task_id: the id Bash named when it started the task.")
        return await self.engine_call("job_kill", {"job_id": task}, ctx)


TOOLS = [Read(), Write(), Edit(), NotebookEdit(), Bash(), TaskStop()]
