"""bash: run a shell command in the session's persistent shell state."""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import ToolError
from ...shell.job_report import report
from .command_call import (
    DEFAULT_TIMEOUT_MS,
    MAX_OUTPUT_CHARS,
    MAX_TIMEOUT_MS,
    run_command_call,
    start_background_job,
)
from .context import ProcessServices
from .contract import Tool, ToolResponse
from .params import param

DESCRIPTION = f"""Runs a bash command and returns its combined stdout and stderr.

- The working directory and exported environment persist between calls of this session: `cd dir`,
  `export X=1` and `source .venv/bin/activate` carry over. Shell functions and aliases do not.
- No terminal: stdin is empty and pagers/editors are disabled, so interactive programs return
  instead of waiting (use `git commit -m ...`, never an editor).
- `timeout` is in milliseconds (default {DEFAULT_TIMEOUT_MS}, max {MAX_TIMEOUT_MS}). On timeout or abort the command
  and every process it started are stopped.
- Everything a command starts is stopped when the call ends: `cmd &`, `nohup`, `setsid` and
  daemons too (the result says how many were stopped). For anything that must keep running —
  a dev server, a watcher, a REPL, a build longer than the timeout — set `run_in_background: true`:
  the call returns at once with a job id and the first output; then use job_output to read new
  output (or wait for it), job_input to type into it, and job_kill to stop it. Background jobs
  have no timeout unless you give one, and stop when the session ends.
- `tty: true` (with `run_in_background`) runs the job on a terminal, for REPLs (`python3 -i`),
  prompts and programs that behave differently without one; send keys with job_input.
- Output over {MAX_OUTPUT_CHARS} characters shows its beginning and end with `... [N lines truncated] ...`;
  the full output is saved to a file whose path is given, which you can read with view.
- Not allowed: network fetchers (curl, wget, ssh, ...; use the fetch tool), sudo/su, system package
  managers and global installs (npm -g, pip --user, cargo install). Install into the project instead.
- Do not use bash for file operations that have a dedicated tool: read files with view (not cat,
  head, tail), create files with write (not echo or heredocs), edit with edit (not sed or awk),
  find files with glob (not find or ls -R) and search with grep.
- When issuing multiple independent commands, make multiple bash tool calls in a single message
  rather than chaining them with `&&`; chain only commands that depend on each other.
- Quote paths that contain spaces: cd "path with spaces".
"""


@dataclass(frozen=True)
class BashParams:
    command: str = param("The command to run", minLength=1)
    timeout: int | None = param(
        f"Timeout in milliseconds (default {DEFAULT_TIMEOUT_MS}; background jobs: none unless given)",
        None,
        minimum=1,
        maximum=MAX_TIMEOUT_MS,
    )
    description: str | None = param("A few words saying what the command does (for the user)", None)
    run_in_background: bool = param(
        "Start the command as a background job and return at once with its job id (servers, watchers, "
        "long builds, REPLs); read it with job_output, stop it with job_kill",
        False,
    )
    tty: bool = param("With run_in_background: run the job on a pseudo-terminal (REPLs, prompts)", False)


class BashTool(Tool):
    name = "bash"
    title = "Run a shell command"
    description = DESCRIPTION
    Params = BashParams
    open_world = True

    async def run(self, params: BashParams, ctx: ProcessServices) -> ToolResponse:
        if params.tty and not params.run_in_background:
            raise ToolError(
                "tty: true needs run_in_background: true (a terminal is for a job you talk to with job_input).",
                code="tty_needs_background",
            )
        if params.run_in_background:
            return await _start_job(params, ctx)
        return await run_command_call(
            params.command,
            ctx,
            tool=self.name,
            timeout_ms=params.timeout or DEFAULT_TIMEOUT_MS,
            description=params.description,
        )


#: How long starting a job waits for its first output (or its exit) before returning.
FIRST_OUTPUT_WAIT_S = 0.3
#: Output that then pauses this long counts as the first output.
FIRST_OUTPUT_QUIET_S = 0.1


async def _start_job(params: BashParams, ctx: ProcessServices) -> ToolResponse:
    job = await start_background_job(
        params.command, ctx, tool="bash", tty=params.tty, timeout_ms=params.timeout, description=params.description
    )
    await job.wait_output(0, FIRST_OUTPUT_WAIT_S, FIRST_OUTPUT_QUIET_S)
    text, metadata = report(job, job.read_delta(), empty="(no output yet)")
    header = (
        f"Started background job {job.id} (pid {job.pid}){' on a terminal' if job.tty else ''}. Read new output with "
        f'job_output {{"job_id": "{job.id}"}}, send input with job_input, stop it with job_kill.'
    )
    return ToolResponse(f"{header}\n\n{text}", metadata=metadata)


TOOL = BashTool()
