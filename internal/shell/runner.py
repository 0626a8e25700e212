"""Running one command line for a session: fresh bash, restored state, nothing left behind.

Each command runs in a new ``bash`` (no profile, no rc) in its own process group, started in the
session's last directory with its last exported environment. An EXIT trap saves the directory
and environment back, so ``cd`` and ``export`` (and ``source .venv/bin/activate``) stick across
calls — also across CLI invocations, since :class:`ShellState` is saved with the session. A
fresh process per command gives exact exit codes and a process group that can be killed whole.

stdin is ``/dev/null`` and the environment disables pagers, editors and prompts, so commands
that would wait for a terminal (``git commit`` without ``-m``, ``less``, ``read``) return instead
of hanging. When the shell exits, output still arriving is drained briefly; then anything left in
its process tree (``cmd &``, ``setsid``/``nohup`` daemons; see proc/) is terminated, and the
result counts it so the model learns to use ``run_in_background`` instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..cancel import CancelToken
from ..proc import KILL_GRACE_S, SETTLE_AFTER_EXIT_S, ProcessSupervisor, spawn
from ..truncate import SpillingBuffer
from .state import ShellState

#: After the shell exits, how long output from leftover children is still read.
DRAIN_AFTER_EXIT_S = 0.2
READ_CHUNK = 64 * 1024

#: Set for every command: nothing may wait for a human.
NON_INTERACTIVE_ENV = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "MANPAGER": "cat",
    "SYSTEMD_PAGER": "",
    "GIT_EDITOR": "true",
    "EDITOR": "true",
    "VISUAL": "true",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "",
    "SSH_ASKPASS": "",
    "DEBIAN_FRONTEND": "noninteractive",
    "TERM": "dumb",
    "NO_COLOR": "1",
}
#: Not carried from one command to the next: bash sets them itself.
VOLATILE_ENV = frozenset({"PWD", "SHLVL", "_"})

# $1: where to save state, $2: the command. The trap keeps the command's exit status.
_SCRIPT = r"""
__ts_state=$1
__ts_command=$2
set --
__ts_save() {
  { builtin pwd -P > "$__ts_state.cwd"; env -0 > "$__ts_state.env"; } 2>/dev/null
}
trap __ts_save EXIT
eval "$__ts_command"
"""


@dataclass
class ShellResult:
    output: SpillingBuffer
    exit_code: int | None
    timed_out: bool
    aborted: bool
    duration_s: float
    cwd: str
    note: str = ""
    #: Processes the command left running when its shell exited, which were stopped.
    stopped_background: int = 0


def start_dir(state: ShellState, workspace: Path) -> tuple[str, str]:
    """Where a command starts, and a note when the session's last directory is gone."""
    if state.cwd and os.path.isdir(state.cwd):
        return state.cwd, ""
    if state.cwd:
        return str(workspace), f"(The previous directory {state.cwd} no longer exists; starting in {workspace}.)\n"
    return str(workspace), ""


def shell_argv(state_base: Path, command: str) -> list[str]:
    """bash running ``command`` and saving its directory and environment to ``state_base``."""
    return ["bash", "--noprofile", "--norc", "-c", _SCRIPT, "bash", str(state_base), command]


def environment(state: ShellState) -> dict[str, str]:
    env = dict(state.env) if state.env is not None else dict(os.environ)
    env.update(NON_INTERACTIVE_ENV)
    return env


def _load_state(state: ShellState, base: Path) -> None:
    cwd_file, env_file = base.with_suffix(".cwd"), base.with_suffix(".env")
    try:
        cwd = cwd_file.read_text(encoding="utf-8", errors="surrogateescape").strip()
        if cwd:
            state.cwd = cwd
        raw = env_file.read_bytes()
        env = {}
        for item in raw.split(b"\0"):
            key, sep, value = item.decode("utf-8", "surrogateescape").partition("=")
            if sep and key and key not in VOLATILE_ENV and key not in NON_INTERACTIVE_ENV:
                env[key] = value
        if env:
            state.env = env
    except OSError:
        pass  # the command exec'd or was killed before the trap ran: keep the previous state
    finally:
        cwd_file.unlink(missing_ok=True)
        env_file.unlink(missing_ok=True)


async def run_command(
    command: str,
    *,
    state: ShellState,
    workspace: Path,
    state_dir: Path,
    timeout_s: float,
    cancel: CancelToken,
    output: SpillingBuffer,
    on_output: Callable[[bytes], None] | None = None,
    wrap: Callable[[list[str], str], list[str]] | None = None,
    owner: ProcessSupervisor | None = None,
) -> ShellResult:
    """Run ``command``; update ``state`` with the directory and environment it leaves.

    ``wrap(argv, cwd)`` may put the shell inside a sandbox (see sandbox.py).
    """
    cwd, note = start_dir(state, workspace)
    base = state_dir / f"shell-{uuid.uuid4().hex}"
    started = time.monotonic()
    argv = shell_argv(base, command)
    if wrap is not None:
        argv = wrap(argv, cwd)
    child = await spawn(argv, cwd=cwd, env=environment(state), merge_stderr=True, owner=owner)
    reader = asyncio.ensure_future(_read(child.stdout, output, on_output))
    waiter = asyncio.ensure_future(child.wait())
    stopper = asyncio.ensure_future(cancel.wait())
    timed_out = aborted = False
    stopped_background = 0
    try:
        done, _ = await asyncio.wait({waiter, stopper}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
        if waiter not in done:
            timed_out = stopper not in done
            aborted = not timed_out
            await child.tree.terminate()
        await waiter
        # The shell is gone; children may still hold the pipe. Read what they already wrote.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(reader), DRAIN_AFTER_EXIT_S)
        left = await child.tree.terminate(settle_s=SETTLE_AFTER_EXIT_S)
        if not (timed_out or aborted):
            stopped_background = left
        # Whatever held the pipe is gone: stop reading anyway after a bound.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(reader), KILL_GRACE_S + 1)
    except BaseException:
        # Task cancelled (asyncio) or anything unexpected: kill everything now, synchronously,
        # so a second cancellation cannot interrupt it; then reap within bounds.
        child.tree.kill_now()
        await asyncio.shield(child.stop(grace_s=0))
        raise
    finally:
        stopper.cancel()
        child.close()
        child.tree.release()
        reader.cancel()
        output.close()
        _load_state(state, base)
    exit_code = child.returncode
    if exit_code is not None and exit_code < 0:
        exit_code = 128 - exit_code
    return ShellResult(
        output, exit_code, timed_out, aborted, time.monotonic() - started, state.cwd or cwd, note, stopped_background
    )


async def _read(
    stream: asyncio.StreamReader, output: SpillingBuffer, on_output: Callable[[bytes], None] | None
) -> None:
    while chunk := await stream.read(READ_CHUNK):
        output.write(chunk)
        if on_output is not None:
            on_output(chunk)
