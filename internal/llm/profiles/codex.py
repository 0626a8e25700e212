"""The codex profile: apply_patch, exec_command, write_stdin, read_file, list_dir and grep_files,
in the shapes Codex's GPT models were trained on.

apply_patch takes the patch as one free-form string. To the OpenAI Responses API it is declared
as a custom tool whose input is constrained by :data:`PATCH_GRAMMAR` (Lark); to every other
provider as a function with one ``input`` string. exec_command and write_stdin run on the
background-job mechanism: a command that is still running after ``yield_time_ms`` keeps running
as a session the model can write to.
"""

from __future__ import annotations

import asyncio
import shlex
import time
from dataclasses import dataclass
from typing import Any

from ...truncate import cap_tokens, estimate_tokens
from ..tools.context import ToolContext
from ..tools.contract import ToolResponse
from ..tools.grep import MAX_HEAD_LIMIT
from ..tools.params import param
from ..tools.runner import run_engine_tool
from .base import ProfileTool, one_based_offsets

#: Our patch format (diff/patch.py) as a Lark grammar, for providers that constrain a free-form
#: tool's input. It describes the canonical form; the parser also tolerates more (surrounding
#: whitespace on markers, a heredoc wrapper, unified diffs), which a constrained model never needs.
PATCH_GRAMMAR = r"""
start: "*** Begin Patch" LF operation+ "*** End Patch" LF*

operation: add_file | delete_file | update_file
add_file: "*** Add File: " PATH LF added*
delete_file: "*** Delete File: " PATH LF
update_file: "*** Update File: " PATH LF move_to? first_chunk? chunk*
move_to: "*** Move to: " PATH LF

first_chunk: line+ end_of_file?
chunk: HEADER LF line+ end_of_file?
line: CHANGE LF | LF
added: ADDED LF
end_of_file: "*** End of File" LF

PATH: /[^\n]+/
HEADER: /@@[^\n]*/
CHANGE: /[ +\-][^\n]*/
ADDED: /\+[^\n]*/
LF: "\n"
"""

#: exec_command and write_stdin wait this long for output by default, and at most this long.
DEFAULT_YIELD_MS = 10_000
MAX_YIELD_MS = 60_000
#: Output shown per call when the model sets no ``max_output_tokens``.
DEFAULT_MAX_OUTPUT_TOKENS = 10_000

_HEADER_END = "\n\n"
_EMPTY_READS = ("(no new output)", "(no output yet)")


# --- apply_patch --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ApplyPatchParams:
    input: str = param("The whole patch, from '*** Begin Patch' to '*** End Patch'", minLength=1)


class ApplyPatch(ProfileTool):
    name = "apply_patch"
    engine = "patch"
    grammar = PATCH_GRAMMAR
    Params = ApplyPatchParams
    description = """Edits files with a patch: add, delete, update and move files in one all-or-nothing change.

*** Begin Patch
*** Update File: src/app.py
@@ def main():
-    print("hi")
+    print("hello")
*** Add File: notes/todo.txt
+first line
*** Delete File: old.txt
*** End Patch

- `@@` lines (optionally with a line of context, like a function header) start each chunk;
  chunk lines start with " " (context), "-" (removed) or "+" (added). Give 3 lines of context.
- `*** Move to: new/path` right after an Update File line renames the file.
- Files to update or delete must have been read first; nothing is written if any part fails.
"""

    def to_engine(self, params: ApplyPatchParams) -> dict[str, Any]:
        return {"patch_text": params.input}


# --- exec_command and write_stdin ---------------------------------------------------------------


@dataclass(frozen=True)
class ExecCommandParams:
    cmd: str = param("The shell command to run", minLength=1)
    workdir: str | None = param("The directory to run it in (default: the session's working directory)", None)
    yield_time_ms: int = param(
        "How long to wait for output before returning; a command still running keeps running as a session",
        DEFAULT_YIELD_MS, minimum=0, maximum=MAX_YIELD_MS,
    )  # fmt: skip
    max_output_tokens: int = param(
        "At most this many tokens of output (estimated as bytes / 4)", DEFAULT_MAX_OUTPUT_TOKENS, minimum=1
    )
    tty: bool = param("Run on a pseudo-terminal (REPLs, prompts, programs that check isatty)", False)


class ExecCommand(ProfileTool):
    name = "exec_command"
    engine = "bash"
    open_world = True
    Params = ExecCommandParams
    description = """Runs a shell command and returns its output.

- Waits up to `yield_time_ms` for it to finish. A command still running then keeps running: the
  result gives its `session_id`, and write_stdin reads more output or types into it (with
  `tty: true` for REPLs and prompts).
- Output over `max_output_tokens` keeps its beginning and end.
"""

    async def run(self, params: ExecCommandParams, ctx: ToolContext) -> ToolResponse:
        command = params.cmd
        if params.workdir:
            command = f"cd -- {shlex.quote(params.workdir)} && {command}"
        started = await run_engine_tool(
            "bash", {"command": command, "run_in_background": True, "tty": params.tty}, ctx
        )
        if started.is_error or "job_id" not in started.metadata:
            return started
        first = _output_of(started.content.split(_HEADER_END, 1)[-1])
        job_id = str(started.metadata["job_id"])
        return await _collect(job_id, first, params.yield_time_ms, params.max_output_tokens, ctx)


@dataclass(frozen=True)
class WriteStdinParams:
    session_id: str = param("The session_id exec_command returned", minLength=1)
    chars: str = param("What to type (may be empty, to just read more output); \\n presses Enter", "")
    yield_time_ms: int = param("How long to wait for output", DEFAULT_YIELD_MS, minimum=0, maximum=MAX_YIELD_MS)
    max_output_tokens: int = param(
        "At most this many tokens of output (estimated as bytes / 4)", DEFAULT_MAX_OUTPUT_TOKENS, minimum=1
    )


class WriteStdin(ProfileTool):
    name = "write_stdin"
    engine = "job_input"
    open_world = True
    Params = WriteStdinParams
    description = """Types into a running exec_command session and returns what it printed.

- `chars` goes to the program's input as is ("\\u0003" is Ctrl-C, "\\u0004" Ctrl-D); empty
  `chars` just waits for more output.
"""

    async def run(self, params: WriteStdinParams, ctx: ToolContext) -> ToolResponse:
        first = ""
        if params.chars:
            sent = await run_engine_tool(
                "job_input", {"job_id": params.session_id, "text": params.chars, "wait_ms": 0}, ctx
            )
            if sent.is_error:
                return sent
            first = _output_of(sent.content)
        return await _collect(params.session_id, first, params.yield_time_ms, params.max_output_tokens, ctx)


async def _collect(job_id: str, first: str, yield_ms: int, max_tokens: int, ctx: ToolContext) -> ToolResponse:
    """Output until the job ends or ``yield_ms`` passes, in Codex's result shape."""
    chunks = [first]
    deadline = time.monotonic() + yield_ms / 1000
    metadata: dict[str, Any] = {}
    while True:
        wait_ms = max(0, round((deadline - time.monotonic()) * 1000))
        read = await run_engine_tool("job_output", {"job_id": job_id, "wait_ms": wait_ms}, ctx)
        if read.is_error:
            return read
        metadata = read.metadata
        chunks.append(_output_of(read.content))
        if metadata.get("state") != "running" or wait_ms == 0:
            break
        await asyncio.sleep(0)
    output = "".join(chunks)
    bounded = cap_tokens(output, max_tokens)
    if metadata.get("state") == "running":
        status = f"Process running with session ID {job_id}"
    elif metadata.get("exit_code") is not None:
        status = f"Process exited with code {metadata['exit_code']}"
    else:
        status = f"Process {metadata.get('state', 'ended')}"
    lines = [status]
    if bounded.truncated:
        lines.append(f"Original token count: {estimate_tokens(output)}")
    text = "\n".join(lines) + "\nOutput:\n" + bounded.text
    return ToolResponse(text, metadata={**metadata, "session_id": job_id, "truncated": bounded.truncated})


def _output_of(report: str) -> str:
    """The program's output in a job tool's report: without the state line that ends it."""
    body, _, _status = report.rpartition(_HEADER_END)
    body = body if _status.startswith("Job ") else report
    return "" if body.strip() in _EMPTY_READS else body + ("\n" if body and not body.endswith("\n") else "")


# --- read_file, list_dir, grep_files ------------------------------------------------------------


@dataclass(frozen=True)
class ReadFileParams:
    file_path: str = param("The absolute path of the file", minLength=1)
    offset: int = param("The 1-based line number to start at", 1, minimum=1)
    limit: int = param("How many lines to read", 2000, minimum=1)


class ReadFile(ProfileTool):
    name = "read_file"
    engine = "view"
    read_only = True
    Params = ReadFileParams
    description = "Reads a file with line numbers, from the 1-based line `offset`, `limit` lines.\n"

    def to_engine(self, params: ReadFileParams) -> dict[str, Any]:
        return {"file_path": params.file_path, "offset": params.offset - 1, "limit": params.limit}

    def render(self, response: ToolResponse, params: ReadFileParams) -> ToolResponse:
        return one_based_offsets(response)


@dataclass(frozen=True)
class ListDirParams:
    dir_path: str = param("The absolute path of the directory", minLength=1)
    depth: int = param("How many levels to list", 2, minimum=1)


class ListDir(ProfileTool):
    name = "list_dir"
    engine = "ls"
    read_only = True
    Params = ListDirParams
    description = "Lists a directory as a tree to `depth` levels; respects .gitignore.\n"

    def to_engine(self, params: ListDirParams) -> dict[str, Any]:
        return {"path": params.dir_path, "depth": params.depth}


@dataclass(frozen=True)
class GrepFilesParams:
    pattern: str = param("The regular expression to search for", minLength=1)
    include: str | None = param('Only files matching this glob, e.g. "*.rs"', None)
    path: str | None = param("The directory to search (default: the working directory)", None)
    limit: int = param("At most this many files", 100, minimum=1, maximum=MAX_HEAD_LIMIT)


class GrepFiles(ProfileTool):
    name = "grep_files"
    engine = "grep"
    read_only = True
    Params = GrepFilesParams
    description = "Lists the files whose contents match `pattern`, newest first; respects .gitignore.\n"

    def to_engine(self, params: GrepFilesParams) -> dict[str, Any]:
        values = {
            "pattern": params.pattern, "include": params.include, "path": params.path,
            "output_mode": "files_with_matches", "head_limit": params.limit,
        }  # fmt: skip
        return {key: value for key, value in values.items() if value is not None}


TOOLS = [ApplyPatch(), ExecCommand(), WriteStdin(), ReadFile(), ListDir(), GrepFiles()]
