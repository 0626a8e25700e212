"""Running one command line for a session: fresh bash, restored state, nothing left behind.

Each command runs in a new ``bash`` (no profile, no rc) in its own process group, started in the
session's last directory with its last exported environment. The directory and environment it
leaves are handed back through a pipe that we create and read (never a file the command could
replace with a FIFO or a symbolic link), so ``cd`` and ``export`` (and ``source
.venv/bin/activate``) stick across calls — also across CLI invocations, since
:class:`ShellState` is saved with the session. A fresh process per command gives exact exit
codes and a process group that can be killed whole.

What a hostile command can do to that record (state.py checks whatever arrives): the pipe is
closed while the command runs, so neither its programs nor anything they start can write to it
(bash keeps its own copy close-on-exec); the function that writes the record is read-only, and
it runs after the command returns even when the command replaced the EXIT trap (the trap covers
``exit``). The command's own shell code can still keep anything from being saved (``exec``,
``kill -9 $$``, ``trap - EXIT; exit``), and then the previous state stays.

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
import shutil
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..cancel import CancelToken
from ..proc import KILL_GRACE_S, SETTLE_AFTER_EXIT_S, ProcessSupervisor, spawn
from ..proc.launch import pipe_reader
from ..truncate import SpillingBuffer
from .state import MAX_SHELL_STATE_BYTES, STATE_END, STATE_MARK, ShellState

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
#: Variables a command's record never changes: bash's own, and the ones every command is given.
NOT_KEPT_ENV = VOLATILE_ENV | frozenset(NON_INTERACTIVE_ENV)

# $1: the command; @FD@: the state pipe's write end. The pipe is closed while the command
# runs (bash restores it afterwards, and for the EXIT trap); the record is written once, after
# the command returns or at its `exit`, with the command's exit status kept either way.
_SCRIPT = r"""
__ts_command=$1
set --
__ts_save() {
  [[ -n ${__ts_saved-} ]] && return "${1-0}"
  __ts_saved=1
  { builtin printf '@MARK@\0'; builtin pwd -P; builtin printf '\0'; command -p env -0; builtin printf '@END@\0'
  } 2>/dev/null >&@FD@
  return "${1-0}"
}
readonly -f __ts_save
trap __ts_save EXIT
eval "$__ts_command" @FD@>&-
__ts_save "$?"
""".replace("@MARK@", STATE_MARK.decode()).replace("@END@", STATE_END.decode())
#: Before the script, on its first line (which is empty, so the command's line numbers are as
#: without it): wait until the tree is set up (spawn's gate), then close the gate so the command
#: does not inherit it. No line (the start failed and the tree is being killed): exit.
_GATE = "builtin read -r -u @GATE@ __ts_go || builtin exit 125; exec @GATE@<&-; builtin unset __ts_go"
assert _SCRIPT.startswith("\n")


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


def shell_argv(state_fd: int, command: str, gate_fd: int | None = None, bash: str = "bash") -> list[str]:
    """``bash`` running ``command`` and writing its directory and environment to ``state_fd``;
    with ``gate_fd``, first waiting for a line on it (spawn's gate)."""
    script = _SCRIPT.replace("@FD@", str(state_fd))
    if gate_fd is not None:
        script = _GATE.replace("@GATE@", str(gate_fd)) + script  # on the script's empty first line
    return [bash, "--noprofile", "--norc", "-c", script, "bash", command]


#: Where the environment holds any of these, a shell is started with its tree set up in the child
#: (no gate): they can run code in the shell before its first command — the loader's (``LD_``),
#: bash's own (``BASH_ENV``, exported ``BASH_FUNC_``s, options that trace or time out a ``read``)
#: and the C library's — and code run before the gate would run outside the tree's cgroup and
#: without its mark, where a process it detached would not be found.
_BEFORE_FIRST_COMMAND_PREFIXES = ("LD_", "BASH")
_BEFORE_FIRST_COMMAND = frozenset(
    {"SHELLOPTS", "PS4", "TMOUT", "ENV", "POSIXLY_CORRECT", "POSIX_PEDANTIC", "GCONV_PATH", "GLIBC_TUNABLES", "LOCPATH"}
)


def gated_bash(env: dict[str, str]) -> str | None:
    """The bash to start behind a gate with ``env``, as the real path of the one its PATH finds,
    where ``env`` holds none of the variables above, and that file and every directory above it
    are root's and writable by no one else (else None: the start goes without a gate, as the PATH
    finds it). Started by that path, the program that runs before the gate, and what it loads
    (the C library, ``/etc/ld.so.preload``, which must not exist), only root can change — and a
    command run as root can leave its cgroup and drop its mark outright, gate or none."""
    if any(name.startswith(_BEFORE_FIRST_COMMAND_PREFIXES) or name in _BEFORE_FIRST_COMMAND for name in env):
        return None
    found = shutil.which("bash", path=env.get("PATH", os.defpath))
    if found is None or not os.path.isabs(found):  # a relative one would be found from the shell's cwd
        return None
    real = os.path.realpath(found)
    if os.path.basename(real) != "bash":  # a multi-call program chooses by the name it is started as
        return None
    return real if _only_root_changes(real) and not os.path.lexists(_LOADER_PRELOAD) else None


#: The loader's list of libraries loaded into every program (root's file).
_LOADER_PRELOAD = "/etc/ld.so.preload"


def _only_root_changes(real: str) -> bool:
    """Whether the file at ``real`` (a real path: no symlink on it) and every directory above it
    belong to root and are writable by no group or other user: no one else can replace it."""
    path = real
    while True:
        try:
            st = os.lstat(path)
        except OSError:
            return False
        if st.st_uid != 0 or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) or stat.S_ISLNK(st.st_mode):
            return False
        parent = os.path.dirname(path)
        if parent == path:
            return True
        path = parent


def environment(state: ShellState) -> dict[str, str]:
    env = dict(state.env) if state.env is not None else dict(os.environ)
    env.update(NON_INTERACTIVE_ENV)
    return env


async def run_command(
    command: str,
    *,
    state: ShellState,
    workspace: Path,
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
    started = time.monotonic()
    record_pipe: list[asyncio.BaseTransport] = []
    env = environment(state)
    # A gated start needs no fork of this process (spawn). Not for a wrapped shell: bubblewrap
    # forks the sandbox's processes before a mark given to it from here could reach them.
    bash = gated_bash(env) if wrap is None else None
    state_read, state_write = os.pipe2(os.O_CLOEXEC)  # the child gets the write end (pass_fds)
    gate_read = gate_write = None
    try:
        record_stream = await pipe_reader(state_read, record_pipe)
        if bash is not None:
            gate_read, gate_write = os.pipe2(os.O_CLOEXEC)
        argv = shell_argv(state_write, command, gate_read, bash or "bash")
        if wrap is not None:
            argv = wrap(argv, cwd)
        inherited = (state_write,) if gate_read is None else (state_write, gate_read)
        child = await spawn(argv, cwd=cwd, env=env, merge_stderr=True, owner=owner,
                            pass_fds=inherited, gate=gate_write)  # fmt: skip
    except BaseException:
        for transport in record_pipe:
            transport.close()
        raise
    finally:
        os.close(state_write)  # the shell holds it now: its exit (and its children's) ends the record
        for fd in (gate_read, gate_write):  # the gate's line is written (or the shell exits at EOF)
            if fd is not None:
                os.close(fd)
    record = asyncio.ensure_future(_read_record(record_stream))
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
        # Whatever held the pipes is gone: stop reading anyway after a bound.
        await asyncio.wait({reader, record}, timeout=KILL_GRACE_S + 1)
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
        for transport in record_pipe:
            transport.close()
        note += _keep_state(state, record)
    exit_code = child.returncode
    if exit_code is not None and exit_code < 0:
        exit_code = 128 - exit_code
    return ShellResult(
        output, exit_code, timed_out, aborted, time.monotonic() - started, state.cwd or cwd, note, stopped_background
    )


async def _read_record(stream: asyncio.StreamReader) -> bytes | None:
    """What the shell wrote to the state pipe, up to :data:`MAX_SHELL_STATE_BYTES`; None when it
    wrote more (read on to the end all the same, so the shell never blocks on a full pipe)."""
    data = bytearray()
    over = False
    while chunk := await stream.read(READ_CHUNK):
        over = over or len(data) + len(chunk) > MAX_SHELL_STATE_BYTES
        if not over:
            data += chunk
    return None if over else bytes(data)


def _keep_state(state: ShellState, record: asyncio.Future[bytes | None]) -> str:
    """Update ``state`` from the record the shell wrote; a note for the result when it was too
    large. No record (the command exec'd or was killed first, or ran past the bounds) keeps the
    previous state."""
    if not record.done() or record.cancelled() or record.exception() is not None:
        record.cancel()
        return ""
    data = record.result()
    if data is None:
        return (
            f"(The shell's exported environment is over {MAX_SHELL_STATE_BYTES // 1024} KiB, so this command's "
            "directory and environment were not kept; the next command starts where this one did.)\n"
        )
    state.update(data, not_kept=NOT_KEPT_ENV)
    return ""


async def _read(
    stream: asyncio.StreamReader, output: SpillingBuffer, on_output: Callable[[bytes], None] | None
) -> None:
    while chunk := await stream.read(READ_CHUNK):
        output.write(chunk)
        if on_output is not None:
            on_output(chunk)
