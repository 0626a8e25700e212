"""The codex profile: the tools of Codex's tool specs (``codex-rs/core/src/tools/spec.rs`` of
openai/codex, at the commit pinned in testdata/conformance/codex-tools.json): apply_patch,
exec_command, write_stdin, shell and shell_command (here), read_file, list_dir, grep_files,
update_plan and request_user_input (codex_tools.py), with every input property the specs declare.

apply_patch takes the patch as one free-form string. To the OpenAI Responses API it is declared
as a custom tool whose input is constrained by :data:`PATCH_GRAMMAR` (Lark); to every other
provider as a function with one ``input`` string. exec_command and write_stdin run on the
background-job mechanism: a command that is still running after ``yield_time_ms`` keeps running
as a session (a number, as the product's) the model can write to. Their output is counted from
the whole output of the call: the token estimate and the lines left out are of what the
program printed, not of a shortened copy. As in the product, apply_patch needs no prior read.
"""

from __future__ import annotations

import os
import shlex
import time
from dataclasses import dataclass
from typing import Any, Literal

from ...shell.job import Job
from ...truncate import cap_tokens, estimate_tokens, strip_ansi
from ...vocabulary import speaking
from ..tools.command_call import start_background_job
from ..tools.context import ToolContext
from ..tools.contract import ToolResponse
from ..tools.params import param
from .base import ProfileTool, drop_none, not_supported, with_notes
from .codex_tools import TOOLS as READING_TOOLS
from .codex_tools import CodexTool

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

#: Output that pauses this long after arriving counts as a finished burst (an early return).
QUIET_S = 0.1
#: shell and shell_command: the timeout when none is given, and the most a foreground command runs.
DEFAULT_TIMEOUT_MS = 10_000
MAX_TIMEOUT_MS = 600_000


# --- apply_patch --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ApplyPatchParams:
    input: str = param("The whole patch, from '*** Begin Patch' to '*** End Patch'", minLength=1)


class ApplyPatch(CodexTool):
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
- Nothing is written if any part fails.
"""

    def to_engine(self, params: ApplyPatchParams) -> dict[str, Any]:
        return {"patch_text": params.input}


# --- exec_command and write_stdin ---------------------------------------------------------------


def _yield(description: str = "How long to wait for output before returning, in ms") -> Any:
    return param(description, DEFAULT_YIELD_MS, minimum=0, maximum=MAX_YIELD_MS)


def _max_tokens() -> Any:
    return param("At most this many tokens of output (estimated as bytes / 4)", DEFAULT_MAX_OUTPUT_TOKENS, minimum=1)


def _sandbox_permissions() -> Any:
    return param("require_escalated asks to run outside the sandbox (not honoured here)", "use_default")


def _justification() -> Any:
    return param("Why escalation is needed (with require_escalated)", None)


def _prefix_rule() -> Any:
    return param("A command prefix to allow from now on (with require_escalated)", None)


def _timeout_ms() -> Any:
    return param(f"Timeout in ms (default {DEFAULT_TIMEOUT_MS}, max {MAX_TIMEOUT_MS})", None, minimum=1,
                 maximum=MAX_TIMEOUT_MS)  # fmt: skip


@dataclass(frozen=True)
class ExecCommandParams:
    cmd: str = param("The shell command to run", minLength=1)
    workdir: str | None = param("The directory to run it in (default: the session's working directory)", None)
    shell: str | None = param("The shell to run it with (default: bash)", None)
    login: bool = param("Run the shell as a login shell (the session's environment is used here)", True)
    tty: bool = param("Run on a pseudo-terminal (REPLs, prompts, programs that check isatty)", False)
    yield_time_ms: int = _yield()
    max_output_tokens: int = _max_tokens()
    sandbox_permissions: Literal["use_default", "require_escalated"] = _sandbox_permissions()
    justification: str | None = _justification()
    prefix_rule: list[str] | None = _prefix_rule()


class ExecCommand(CodexTool):
    name = "exec_command"
    engine = "bash"
    open_world = True
    Params = ExecCommandParams
    description = """Runs a shell command and returns its output.

- Waits up to `yield_time_ms` for it to finish. A command still running then keeps running: the
  result gives its `session_id` (a number), and write_stdin reads more output or types into it
  (with `tty: true` for REPLs and prompts).
- Output over `max_output_tokens` keeps its beginning and end.
"""

    async def run(self, params: ExecCommandParams, ctx: ToolContext) -> ToolResponse:
        command = params.cmd
        if params.shell and os.path.basename(params.shell) != "bash":
            command = f"{shlex.quote(params.shell)} -c {shlex.quote(command)}"
        if params.workdir:
            command = f"cd -- {shlex.quote(params.workdir)} && {command}"
        with speaking(self.vocabulary):
            job = await start_background_job(command, ctx, tool="bash", tty=params.tty, timeout_ms=None,
                                             description=None)  # fmt: skip
        response = await _collect(job, params.yield_time_ms, params.max_output_tokens, 0)
        return with_notes(response, _escalation(params.sandbox_permissions))


def _escalation(permissions: str) -> list[str]:
    if permissions != "require_escalated":
        return []
    return [not_supported("sandbox_permissions=require_escalated", "the sandbox is the host's setting; the "
                          "command ran with the session's settings")]  # fmt: skip


@dataclass(frozen=True)
class WriteStdinParams:
    session_id: int = param("The session_id exec_command returned", minimum=0)
    chars: str = param("What to type (may be empty, to just read more output); \\n presses Enter", "")
    yield_time_ms: int = _yield()
    max_output_tokens: int = _max_tokens()


class WriteStdin(CodexTool):
    name = "write_stdin"
    engine = "job_input"
    open_world = True
    Params = WriteStdinParams
    description = """Types into a running exec_command session and returns what it printed.

- `chars` goes to the program's input as is ("\\u0003" is Ctrl-C, "\\u0004" Ctrl-D); empty
  `chars` just waits for more output.
"""

    async def run(self, params: WriteStdinParams, ctx: ToolContext) -> ToolResponse:
        job_id = f"j{params.session_id}"
        with speaking(self.vocabulary):
            job = ctx.jobs.get(job_id)
        start = job.total_bytes - job.unread()  # this call's output starts here (job_input reads some)
        if params.chars:
            sent = await self.engine_call("job_input", {"job_id": job_id, "text": params.chars, "wait_ms": 0}, ctx)
            if sent.is_error:
                return sent
        return await _collect(job, params.yield_time_ms, params.max_output_tokens, start)


def session_number(job_id: str) -> int:
    """A job's id ("j3") as the number the product calls a session id (3)."""
    return int(job_id.lstrip("j"))


async def _collect(job: Job, yield_ms: int, max_tokens: int, start: int) -> ToolResponse:
    """The job's output from byte ``start`` until it ends or ``yield_ms`` passes, in Codex's result
    shape. The estimate and the cut are made on the whole output of this call: read back from the
    job's spill file, which holds every byte (what the in-memory ring let go, and what sending the
    input read), else what the reads returned."""
    deadline = time.monotonic() + yield_ms / 1000
    while job.running:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        await job.wait_output(job.version, left, QUIET_S)
    texts = []
    while True:  # mark this call's output read; one read may not drain the ring while output arrives
        texts.append(job.read_delta().text)
        if not job.unread():
            break
    output = _spilled(job, start, job.total_bytes)
    if output is None:
        output = "".join(texts)
    bounded = cap_tokens(output, max_tokens)
    if job.running:
        status = f"Process running with session ID {session_number(job.id)}"
    elif job.exit_code is not None:
        status = f"Process exited with code {job.exit_code}"
    else:
        status = f"Process {job.state}"
    lines = [status]
    if bounded.truncated:
        lines.append(f"Original token count: {estimate_tokens(output)}")
    text = "\n".join(lines) + "\nOutput:\n" + bounded.text
    metadata = {
        "session_id": session_number(job.id), "state": job.state, "exit_code": job.exit_code,
        "truncated": bounded.truncated, "output_tokens": estimate_tokens(output),
        "full_output_path": str(job.spill_path),
    }  # fmt: skip
    return ToolResponse(text, metadata=metadata)


def _spilled(job: Job, start: int, end: int) -> str | None:
    """Bytes ``start``..``end`` of the job's output from its spill file, as a read shows them (a
    terminal's escapes removed); None when the file lacks them (unreadable, or past its cap)."""
    try:
        with open(job.spill_path, "rb") as handle:
            handle.seek(start)
            data = handle.read(end - start)
    except OSError:
        return None
    if len(data) != end - start:
        return None
    text = data.decode("utf-8", "replace")
    return strip_ansi(text.replace("\r\n", "\n")) if job.tty else text


# --- shell and shell_command ---------------------------------------------------------------------


@dataclass(frozen=True)
class ShellParams:
    command: list[str] = param('The program and its arguments, e.g. ["bash", "-lc", "ls -a"]', minItems=1)
    workdir: str | None = param("The directory to run it in", None)
    timeout_ms: int | None = _timeout_ms()
    sandbox_permissions: Literal["use_default", "require_escalated"] = _sandbox_permissions()
    justification: str | None = _justification()
    prefix_rule: list[str] | None = _prefix_rule()


class Shell(CodexTool):
    name = "shell"
    engine = "bash"
    open_world = True
    Params = ShellParams
    description = """Runs a program with its arguments (most commands as ["bash", "-lc", "<script>"]) and
returns its output. Set `workdir` rather than using cd.
"""

    async def run(self, params: ShellParams, ctx: ToolContext) -> ToolResponse:
        argv = params.command
        script = argv[2] if len(argv) == 3 and os.path.basename(argv[0]) == "bash" and argv[1] in ("-lc", "-c") \
            else shlex.join(argv)  # fmt: skip
        response = await _run_script(self, script, params.workdir, params.timeout_ms, ctx)
        return with_notes(response, _escalation(params.sandbox_permissions))


@dataclass(frozen=True)
class ShellCommandParams:
    command: str = param("The shell script to run", minLength=1)
    workdir: str | None = param("The directory to run it in", None)
    login: bool = param("Run as a login shell (the session's environment is used here)", True)
    timeout_ms: int | None = _timeout_ms()
    sandbox_permissions: Literal["use_default", "require_escalated"] = _sandbox_permissions()
    justification: str | None = _justification()
    prefix_rule: list[str] | None = _prefix_rule()


class ShellCommand(CodexTool):
    name = "shell_command"
    engine = "bash"
    open_world = True
    Params = ShellCommandParams
    description = "Runs a shell script and returns its output. Set `workdir` rather than using cd.\n"

    async def run(self, params: ShellCommandParams, ctx: ToolContext) -> ToolResponse:
        response = await _run_script(self, params.command, params.workdir, params.timeout_ms, ctx)
        return with_notes(response, _escalation(params.sandbox_permissions))


async def _run_script(tool: CodexTool, script: str, workdir: str | None, timeout_ms: int | None,
                      ctx: ToolContext) -> ToolResponse:  # fmt: skip
    command = f"cd -- {shlex.quote(workdir)} && {script}" if workdir else script
    return await tool.engine_call("bash", drop_none({"command": command, "timeout": timeout_ms or DEFAULT_TIMEOUT_MS}),
                                  ctx)  # fmt: skip


TOOLS: list[ProfileTool] = [ApplyPatch(), ExecCommand(), WriteStdin(), Shell(), ShellCommand(), *READING_TOOLS]
