"""bash: run a shell command in the session's persistent shell state."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...errors import ToolError
from ...fsutil.paths import from_workspace
from ...proc import check_argument
from ...progress import OutputProgress
from ...shell import policy, sandbox
from ...shell.runner import run_command
from ...truncate import SpillingBuffer, new_spill_path
from .params import param
from .tools import Tool, ToolContext, ToolResponse

DEFAULT_TIMEOUT_MS = 60_000
MAX_TIMEOUT_MS = 600_000
#: Characters of output the model sees; the rest is in the full-output file.
MAX_OUTPUT_CHARS = 30_000
#: A command line is passed to bash as one argument; Linux caps one argument at 128 KiB.
MAX_COMMAND_BYTES = 100_000

DESCRIPTION = f"""Runs a bash command and returns its combined stdout and stderr.

- The working directory and exported environment persist between calls of this session: `cd dir`,
  `export X=1` and `source .venv/bin/activate` carry over. Shell functions and aliases do not.
- No terminal: stdin is empty and pagers/editors are disabled, so interactive programs return
  instead of waiting (use `git commit -m ...`, never an editor).
- `timeout` is in milliseconds (default {DEFAULT_TIMEOUT_MS}, max {MAX_TIMEOUT_MS}). On timeout or abort the command
  and every process it started are stopped. Background jobs (`&`) are stopped when the command
  returns; to keep a server running, start it with `setsid nohup CMD > log 2>&1 &`.
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
    timeout: int = param("Timeout in milliseconds", DEFAULT_TIMEOUT_MS, minimum=1, maximum=MAX_TIMEOUT_MS)
    description: str | None = param("A few words saying what the command does (for the user)", None)


class BashTool(Tool):
    name = "bash"
    description = DESCRIPTION
    Params = BashParams

    async def run(self, params: BashParams, ctx: ToolContext) -> ToolResponse:
        check_argument(params.command, "command")
        size = len(os.fsencode(params.command))
        if size > MAX_COMMAND_BYTES:
            raise ToolError(
                f"The command is {size} bytes, over the {MAX_COMMAND_BYTES}-byte limit for one command line. "
                "Write it to a script file with the write tool and run the script."
            )
        interactive = policy.interactive_reason(params.command)
        if interactive:
            raise ToolError(f"Command refused: {interactive}")
        reason = policy.banned_reason(params.command)
        wrap = _sandbox(ctx) if ctx.config.bash_sandbox else None
        if reason and wrap is None:
            raise ToolError(
                f"Command refused: {reason}. Network access, privilege escalation, system package "
                "managers and global installs are not available to this tool."
            )
        if reason or not policy.is_safe(params.command):
            description = params.description or params.command
            if reason:  # in the sandbox the list only informs whoever answers the prompt
                description += f" (note: {reason} outside the sandbox)"
            await ctx.require_permission(self.name, "execute", params.command, description, {"command": params.command})
        output = SpillingBuffer(MAX_OUTPUT_CHARS, lambda: new_spill_path(ctx.state, ctx.session_id, "bash"))
        streamed = OutputProgress(ctx.progress, self.name)
        try:
            result = await run_command(
                params.command,
                state=ctx.shell,
                workspace=ctx.workspace,
                state_dir=ctx.state.directory("shell"),
                timeout_s=params.timeout / 1000,
                cancel=ctx.cancel,
                output=output,
                on_output=streamed.write,
                wrap=wrap,
            )
        finally:
            streamed.close()
        bounded = output.render()
        text = result.note + (bounded.text.rstrip("\n") if bounded.text.strip() else "no output")
        if output.spilled:
            text += (
                f"\n\n(Output was {output.total_bytes} bytes, {output.newlines} lines; the full output is in "
                f"{output.path} — read it with view and an offset.)"
            )
        if result.timed_out:
            text += f"\n\nCommand timed out after {params.timeout} ms"
        elif result.aborted:
            text += "\n\nCommand was aborted"
        elif result.exit_code:
            text += f"\n\nExit code {result.exit_code}"
        metadata: dict[str, Any] = {
            "exit_code": result.exit_code,
            "duration_ms": round(result.duration_s * 1000, 3),
            "cwd": result.cwd,
            "truncated": bounded.truncated,
            "full_output_path": str(output.path) if output.path else None,
            "timed_out": result.timed_out,
            "aborted": result.aborted,
            "sandboxed": wrap is not None,
        }
        failed = result.timed_out or result.aborted
        return ToolResponse(text, is_error=failed, metadata=metadata)


def _sandbox(ctx: ToolContext) -> Callable[[list[str], str], list[str]]:
    """The wrapper that runs a command in bubblewrap, or a clear refusal when it cannot."""
    bwrap = sandbox.find_bwrap()
    if bwrap is None:
        raise ToolError(
            "The bash sandbox is on ([bash] sandbox = true) but bubblewrap (bwrap) is not installed: nothing "
            "was run. Install it (Debian/Ubuntu: apt-get install bubblewrap) or turn the sandbox off."
        )
    if ctx.shell.sandbox_problem is None:
        ctx.shell.sandbox_problem = sandbox.probe(bwrap) or ""
    if ctx.shell.sandbox_problem:
        raise ToolError(f"The bash sandbox is on but {ctx.shell.sandbox_problem}: nothing was run.")
    writable = [from_workspace(ctx.workspace, d) for d in ctx.config.allowed_dirs]
    state_dir = ctx.state.directory("shell")

    def wrap(argv: list[str], cwd: str) -> list[str]:
        return sandbox.wrap(
            argv, bwrap=bwrap, workspace=ctx.workspace, writable=writable, state_dir=state_dir, cwd=cwd,
            network=ctx.config.bash_network,
        )  # fmt: skip

    return wrap


TOOL = BashTool()
