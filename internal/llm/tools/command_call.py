"""One command line run as a tool call: checks, permission, the run, and the model's text.

Shared by the bash tool and custom tools (internal/llm/tools/custom.py), so both refuse the
same commands, ask the same way, stop the whole process group on timeout or abort, and bound
their output the same way (the rest goes to a spill file the response names).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...config import default_state_dir
from ...errors import TimedOut, ToolError
from ...fsutil.paths import from_workspace
from ...proc import check_argument
from ...progress import OutputProgress
from ...shell import policy, sandbox
from ...shell.job import Job
from ...shell.runner import environment, run_command, start_dir
from ...shell.state import ShellState
from ...truncate import SpillingBuffer, new_spill_path
from ...vocabulary import background_hint, param_name, tool_name
from .context import ProcessServices
from .contract import ToolResponse

DEFAULT_TIMEOUT_MS = 60_000
MAX_TIMEOUT_MS = 600_000
#: Characters of output the model sees; the rest is in the full-output file.
MAX_OUTPUT_CHARS = 30_000
#: A command line is passed to bash as one argument; Linux caps one argument at 128 KiB.
MAX_COMMAND_BYTES = 100_000


async def run_command_call(
    command: str,
    ctx: ProcessServices,
    *,
    tool: str,
    timeout_ms: int,
    description: str | None = None,
    always_ask: bool = False,
    shell: ShellState | None = None,
) -> ToolResponse:
    """Run ``command`` for ``tool``. Commands outside the safe list (all of them with
    ``always_ask``) ask permission first. ``shell`` defaults to the session's shell state."""
    wrap = await authorize_command(command, ctx, tool=tool, description=description, always_ask=always_ask)
    git_before = sandbox.git_metadata(ctx.workspace) if wrap is not None else set()
    output = SpillingBuffer(MAX_OUTPUT_CHARS, lambda: new_spill_path(ctx.state, ctx.session_id, tool))
    streamed = OutputProgress(ctx.progress, tool)
    try:
        result = await run_command(
            command,
            state=shell if shell is not None else ctx.shell,
            workspace=ctx.workspace,
            timeout_s=timeout_ms / 1000,
            cancel=ctx.cancel,
            output=output,
            on_output=streamed.write,
            wrap=wrap,
            owner=ctx.processes,
        )
    finally:
        streamed.close()
    bounded = output.render()
    text = result.note + (bounded.text.rstrip("\n") if bounded.text.strip() else "no output")
    if output.spilled:
        text += (
            f"\n\n(Output was {output.total_bytes} bytes, {output.newlines} lines; the full output is in "
            f"{output.path} — read it with {tool_name('view')} and {param_name('view', 'offset')}.)"
        )
    if result.stopped_background:
        text += "\n\n" + stopped_background_note(result.stopped_background)
    if result.timed_out:
        text += (
            f"\n\nCommand timed out after {timeout_ms} ms. To let a long command (a server, a watcher, a long build) "
            f"keep running, {background_hint()}"
        )
    elif result.aborted:
        text += "\n\nCommand was aborted"
    elif result.exit_code:
        text += f"\n\nExit code {result.exit_code}"
    created_git: list[str] = []
    if wrap is not None:
        text, created_git = _sandbox_notes(text, git_before, ctx)
    metadata: dict[str, Any] = {
        "exit_code": result.exit_code,
        "duration_ms": round(result.duration_s * 1000, 3),
        "cwd": result.cwd,
        "truncated": bounded.truncated,
        "full_output_path": str(output.path) if output.path else None,
        "timed_out": result.timed_out,
        "aborted": result.aborted,
        "sandboxed": wrap is not None,
        "stopped_background": result.stopped_background,
    }
    if created_git:
        metadata["new_git_metadata"] = created_git
    if result.timed_out:
        metadata["error"] = TimedOut.code
    return ToolResponse(text, is_error=result.timed_out or result.aborted, metadata=metadata)


async def authorize_command(
    command: str, ctx: ProcessServices, *, tool: str, description: str | None = None, always_ask: bool = False
) -> Callable[[list[str], str], list[str]] | None:
    """Check ``command`` and ask permission as the policy says; the sandbox wrapper when the
    sandbox is on. Raises :class:`ToolError` when the command is refused."""
    _check_command(command)
    wrap = _sandbox(ctx) if ctx.config.bash_sandbox else None
    reason = policy.banned_reason(command)
    if reason and wrap is None:
        raise ToolError(
            f"Command refused: {reason}. Network access, privilege escalation, system package "
            "managers and global installs are not available to this tool.", code="command_refused")
    if always_ask or reason or not policy.is_safe(command):
        shown = description or command
        if reason:  # in the sandbox the list only informs whoever answers the prompt
            shown += f" (note: {reason} outside the sandbox)"
        await ctx.require_permission(tool, "execute", command, shown, {"command": command})
    return wrap


async def start_background_job(
    command: str, ctx: ProcessServices, *, tool: str, tty: bool, timeout_ms: int | None, description: str | None
) -> Job:
    """Start ``command`` as one of the session's background jobs (see jobs.py), after the same
    checks and permission as a foreground command, in the sandbox when it is on."""
    wrap = await authorize_command(command, ctx, tool=tool, description=description)
    cwd, _ = start_dir(ctx.shell, ctx.workspace)
    argv = ["bash", "--noprofile", "--norc", "-c", command]
    if wrap is not None:
        argv = wrap(argv, cwd)
    return ctx.jobs.start(
        command, argv, cwd=cwd, env=environment(ctx.shell), tty=tty,
        spill_path=lambda: new_spill_path(ctx.state, ctx.session_id, "job"),
        timeout_s=timeout_ms / 1000 if timeout_ms is not None else None,
        max_jobs=ctx.config.max_jobs, owner=ctx.processes,
    )  # fmt: skip


#: Programs that run the code they read: input to them is code, so it always asks.
INTERPRETERS = ("python", "node", "deno", "bun", "ruby", "irb", "perl", "php", "lua", "R", "julia", "ghci",
                "sqlite3", "psql", "mysql", "tclsh", "guile", "racket", "ocaml", "scala", "erl", "iex")  # fmt: skip


async def authorize_job_input(job: Job, text: str, ctx: ProcessServices, *, tool: str) -> None:
    """Input to a shell job is a command line: the bash policy applies. Input to an
    interpreter job is code: permission is asked. Anything else (a prompt's answer) passes."""
    names = {os.path.basename(words[0]) for words in policy.analyse(job.command).commands if words}
    if names & policy.SHELLS:
        for raw in text.replace("\r", "\n").split("\n"):
            line = "".join(c for c in raw if c >= " " or c == "\t")  # Ctrl-C, Ctrl-D are keys, not commands
            if line.strip():
                await authorize_command(line, ctx, tool=tool, description=f"input to job {job.id}: {line}")
    elif any(name.startswith(INTERPRETERS) for name in names):
        await ctx.require_permission(tool, "execute", text, f"code for job {job.id} ({job.command}): {text}",
                                     {"job_id": job.id, "text": text})  # fmt: skip


def stopped_background_note(count: int) -> str:
    was = "process was" if count == 1 else "processes were"
    return f"({count} background {was} stopped when the command ended; use run_in_background to keep it.)"


def _sandbox_notes(text: str, git_before: set[Path], ctx: ProcessServices) -> tuple[str, list[str]]:
    """A sandboxed command's result: why git failed (read-only metadata), and any git metadata
    the command created — reported before the host's git could trust it."""
    hint = sandbox.explain_failure(text)
    if hint:
        text += "\n\n" + hint
    created = [str(p) for p in sandbox.new_git_dirs(git_before, ctx.workspace)]
    if created:
        text += (
            "\n\nWarning: this sandboxed command created git metadata: " + ", ".join(created) + ". Its hooks "
            "and config were written by the command and would run with the host's git: inspect or delete it "
            "before running git there (the user should decide)."
        )
    return text, created


def _check_command(command: str) -> None:
    check_argument(command, "command")
    size = len(os.fsencode(command))
    if size > MAX_COMMAND_BYTES:
        raise ToolError(
            f"The command is {size} bytes, over the {MAX_COMMAND_BYTES}-byte limit for one command line. "
            f"Write it to a script file with the {tool_name('write')} tool and run the script.",
            code="command_too_large",
        )
    interactive = policy.interactive_reason(command)
    if interactive:
        raise ToolError(f"Command refused: {interactive}", code="command_refused")


def _sandbox(ctx: ProcessServices) -> Callable[[list[str], str], list[str]]:
    """The wrapper that runs a command in bubblewrap, or a clear refusal when it cannot."""
    bwrap = sandbox.find_bwrap()
    if bwrap is None:
        raise ToolError(
            "The bash sandbox is on ([bash] sandbox = true) but bubblewrap (bwrap) is not installed: nothing "
            "was run. Install it (Debian/Ubuntu: apt-get install bubblewrap) or turn the sandbox off.",
            code="sandbox_unavailable",
        )
    problem = sandbox.unavailable(bwrap)
    if problem is not None:
        raise ToolError(f"The bash sandbox is on but {problem}: nothing was run.", code="sandbox_unavailable")
    writable = [from_workspace(ctx.workspace, d) for d in ctx.config.allowed_dirs]
    # Every state directory this process may use: the session's (made now if need be: one that
    # appeared later inside the workspace would be the command's to fill), the temporary one
    # standing in for it, and the default one, which other sessions' hosts may use.
    hidden = [ctx.state.root, ctx.state.directory(), default_state_dir()]

    def wrap(argv: list[str], cwd: str) -> list[str]:
        return sandbox.wrap(
            argv, bwrap=bwrap, workspace=ctx.workspace, writable=writable, hidden=hidden, cwd=cwd,
            network=ctx.config.bash_network,
        )  # fmt: skip

    return wrap
