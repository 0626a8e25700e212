"""bash: run a shell command in the session's persistent shell state."""

from __future__ import annotations

from dataclasses import dataclass

from ...shell.command_call import DEFAULT_TIMEOUT_MS, MAX_OUTPUT_CHARS, MAX_TIMEOUT_MS, run_command_call
from .params import param
from .tools import Tool, ToolContext, ToolResponse

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
    title = "Run a shell command"
    description = DESCRIPTION
    Params = BashParams
    open_world = True

    async def run(self, params: BashParams, ctx: ToolContext) -> ToolResponse:
        return await run_command_call(
            params.command, ctx, tool=self.name, timeout_ms=params.timeout, description=params.description
        )


TOOL = BashTool()
