"""The command line: run one tool call (or a batch) and print what the model would see.

    toolsmith [--cwd DIR] [--session ID] [--config FILE] [--json] [--no-lsp] <tool> ['<json>' | -]
    toolsmith [--cwd DIR] [--profile P] --list | --schema [--format anthropic|openai|openai-chat|gemini] | --version
    toolsmith [--cwd DIR] [--session ID] --batch FILE|-
    toolsmith help TOOL | toolsmith TOOL --help | toolsmith --schema TOOL   # one tool's parameters
    toolsmith --session ID --checkpoint | --changes CHECKPOINT | --rewind CHECKPOINT [--force]
    toolsmith [--cwd DIR] --session ID --end
    toolsmith --tool NAME=PATH ... | --tool NAME= ...   # add/replace or remove a tool for this invocation

(``python -m agent_toolsmith`` and, from the repository root, ``python -m cmd.tools`` are the same.)
Exit codes: 0 the tool succeeded, 1 the tool returned an error, 2 usage or invalid parameters.
With ``--session`` the session's state (files read, shell cwd/env) is kept under the state
directory between invocations, so ``view`` then ``edit`` works from a script; the calls run in
the session's host process (internal/session_host/, docs/cli-session-host.md), which keeps
its language servers warm until it has been idle for a while or ``--end`` stops it.
"""

from __future__ import annotations

import gc
import io
import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from .cli_args import build_parser, plain_call
from .event_loop import run_without_loop

if TYPE_CHECKING:
    from .cli_args import Arguments
    from .cli_progress import TerminalProgress
    from .session import Session

EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE = 0, 1, 2
#: A reader that closed our stdout (``| head``) ends the run like SIGPIPE would.
EXIT_BROKEN_PIPE = 141
_USAGE_ERRORS = ("invalid_params", "unknown_tool", "tool_not_offered")

def _exit_code(envelope: dict[str, Any]) -> int:
    if not envelope["is_error"]:
        return EXIT_OK
    return EXIT_USAGE if envelope["metadata"].get("error") in _USAGE_ERRORS else EXIT_TOOL_ERROR


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default: this process's own); the exit code."""
    if argv is not None:
        return _command(list(argv))
    code = _command(sys.argv[1:])
    # This process ends when main returns: its objects are frozen so that the interpreter's
    # final garbage collections skip them (~5 ms, a tenth of a view). Nothing depends on them:
    # Python does not promise to collect what still exists at exit.
    gc.freeze()
    return code


def _command(words: list[str]) -> int:
    args: Arguments | None = plain_call(words)
    if args is None:
        wants_help = any(word in ("-h", "--help") for word in words)
        parser = build_parser()
        args = parser.parse_args([word for word in words if word not in ("-h", "--help")] if wants_help else words)
        if wants_help and not args.tool:
            parser.print_help()
            return EXIT_OK
        if args.tool == "help" or wants_help:
            args.schema, args.help_tool = True, args.params if args.tool == "help" else args.tool
            if not args.help_tool:
                parser.print_help()
                return EXIT_OK
    try:
        return _main(args, sys.stdin, sys.stdout)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # Whoever read our output stopped reading: no traceback, and no second error when
        # Python flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


#: Tools that never reach a language server in a one-shot process: view asks only servers that
#: already run (lsp_on_view is off here), and no server runs in a process that makes one call.
_READ_ONLY_WITHOUT_LSP = frozenset({"view", "read_many", "attach", "grep", "glob", "ls"})


def _one_shot_without_lsp(args: Arguments) -> bool:
    """One call of a tool that needs no language server, with no session state to keep: the
    call is the same without the LSP layer, which is then not even imported."""
    return not args.session and not args.batch and args.tool in _READ_ONLY_WITHOUT_LSP


def _usage(message: str) -> int:
    sys.stderr.write(f"toolsmith: {message}\n")
    return EXIT_USAGE


def _main(args: Arguments, stdin: TextIO, stdout: TextIO) -> int:
    if args.version:
        from . import __version__

        stdout.write(f"toolsmith {__version__}\n")
        return EXIT_OK
    if args.format and not args.schema:
        return _usage("--format goes with --schema")
    if args.end and not args.session:
        return _usage("--end goes with --session ID")

    from .config import Config, ConfigError

    cwd = Path(args.cwd)
    if not cwd.is_dir():
        return _usage(f"--cwd {args.cwd} is not a directory")
    try:
        # One call per process: view does not start a language server it would discard at once.
        overrides: dict[str, Any] = {"lsp_on_view": False}
        if args.no_lsp or _one_shot_without_lsp(args):
            overrides["lsp_enabled"] = False
        if args.audit_log:
            overrides["audit_log"] = Path(args.audit_log).absolute()
        if args.tool_flags:
            overrides["tool_programs"] = _tool_programs(args.tool_flags)
        config = Config.load(cwd, file=args.config, **overrides)
        if args.list or args.schema:
            return _describe_tools(args, cwd, config, stdout)
        if args.tool_flags and args.session:
            return _usage(
                "--tool sets the tools of one invocation, and a --session's calls run in its host, which keeps the "
                "tools it started with: run the call without --session, or give the tool in your own config "
                "(docs/custom-tools.md)"
            )
        session_commands = [f"--{name}" for name in ("checkpoint", "changes", "rewind") if getattr(args, name)]
        if session_commands and not args.session:
            return _usage(f"{session_commands[0]} needs --session ID (checkpoints belong to a session)")
        if args.session:
            from .state import check_session_id

            check_session_id(args.session)
    except (ConfigError, ValueError) as exc:
        return _usage(str(exc))
    checkpoint_command = args.checkpoint or args.changes or args.rewind
    if args.session and not checkpoint_command:
        from .session_host import host_enabled

        if args.end or host_enabled():
            if args.batch == "-":  # read once: a fallback to in-process must see the same lines
                stdin = io.StringIO(stdin.read())
            # The host runs the call; this side only talks to its socket, which needs no event loop.
            code = run_without_loop(_via_host(args, cwd, config, stdin, stdout))
            if code is not None:
                return code
            if args.batch == "-":
                stdin.seek(0)
    return _in_process(args, cwd, config, stdin, stdout)


def _tool_programs(flags: list[tuple[str, str]]) -> dict[str, Path | None]:
    """``--tool NAME=PATH`` / ``NAME=`` flags as Config.tool_programs (the last flag for a name wins;
    a relative PATH is taken from the current directory, as the shell would)."""
    return {name: Path(os.path.expanduser(program)).absolute() if program else None for name, program in flags}


async def _via_host(args: Arguments, cwd: Path, config: Any, stdin: TextIO, stdout: TextIO) -> int | None:
    """Run the call(s) in the session's host process; None when it cannot (then run in-process)."""
    from .session_host import (
        HostLost,
        HostMismatch,
        HostUnavailable,
        UnsafeStateDirectory,
        end_host,
        host_paths,
        run_call,
    )

    # What the host is started with, and must already serve for a call to go to it.
    spec = {
        "session": args.session,
        "cwd": os.path.realpath(cwd),
        "config": os.path.abspath(args.config) if args.config else None,
        "profile": args.profile,
        "audit_log": str(Path(args.audit_log).absolute()) if args.audit_log else None,
    }
    ran = 0
    from .cli_progress import terminal_progress

    progress = terminal_progress(sys.stderr)

    async def run(tool: str, params: Any) -> dict[str, Any]:
        nonlocal ran
        try:
            envelope = run_call(host_paths(config.state_dir, args.session), spec, {
                "tool": tool, "params": params, "no_lsp": args.no_lsp,
            }, progress=progress)  # fmt: skip
        except HostLost as exc:
            envelope = _failure(f"toolsmith: {exc}", "session_host_lost")
        except UnsafeStateDirectory as exc:  # nothing was sent, and the session's state there is not trusted
            envelope = _failure(f"toolsmith: {exc}", "unsafe_state_dir")
        finally:
            if progress is not None:
                progress.finish()
        ran += 1
        return envelope

    try:
        if args.end:
            ended = end_host(host_paths(config.state_dir, args.session))
            stdout.write(f"Session {args.session}: {'host stopped' if ended else 'no host was running'}.\n")
            return EXIT_OK
        if args.batch:
            return await _run_batch(run, args.batch, stdin, stdout)
        if not args.tool:
            return _usage("name a tool (see --list), or use --batch")
        raw = stdin.read() if args.params == "-" else (args.params if args.params is not None else "{}")
        args.params = raw  # read once: a fallback in-process run must not read stdin again
        envelope = await run(args.tool, raw)
        _print(envelope, args.json, stdout)
        return _exit_code(envelope)
    except UnsafeStateDirectory as exc:  # --end
        sys.stderr.write(f"toolsmith: {exc}\n")
        return EXIT_TOOL_ERROR
    except (HostUnavailable, HostMismatch) as exc:
        if ran:  # a batch whose earlier lines ran in the host: do not run them again
            sys.stderr.write(f"toolsmith: {exc}\n")
            return EXIT_TOOL_ERROR
        if args.end:
            return _usage(str(exc))
        if not getattr(exc, "noted", False):
            sys.stderr.write(f"toolsmith: no session host ({exc}); running this call in-process.\n")
        return None


def _in_process(args: Arguments, cwd: Path, config: Any, stdin: TextIO, stdout: TextIO) -> int:
    """The call(s) in a session of this process: under asyncio, or without an event loop when
    nothing in them waits for one (see :func:`_needs_event_loop`)."""
    from .cli_progress import terminal_progress
    from .session import Session

    progress = terminal_progress(sys.stderr)
    try:
        session = Session(cwd, session_id=args.session, config=config, profile=args.profile, progress=progress)
    except (ValueError, OSError) as exc:
        return _usage(str(exc))
    from .state import log_to_file

    # Tracebacks go to a private log file, never to the terminal the model reads.
    log_to_file(session.ctx.state.directory() / "toolsmith.log", ("toolsmith", "pygls"))
    if args.session:
        session.load_state()
    if not _needs_event_loop(args, session):
        return run_without_loop(_session_calls(session, args, stdin, stdout, progress))
    import asyncio

    return asyncio.run(_session_calls(session, args, stdin, stdout, progress))


def _needs_event_loop(args: Arguments, session: Session) -> bool:
    """Whether the call needs asyncio: one call of a tool whose run never waits for a loop
    (``Tool.needs_event_loop``, e.g. view), with no language server, runs without one."""
    if args.batch or args.checkpoint or args.changes or args.rewind or session.ctx.lsp is not None:
        return True
    if not args.tool:
        return False  # a usage error
    try:
        tool = session.ctx.tools.get(args.tool)
    except KeyError:  # answered with "Unknown tool": nothing to wait for
        return False
    return tool.needs_event_loop


async def _session_calls(
    session: Session, args: Arguments, stdin: TextIO, stdout: TextIO, progress: TerminalProgress | None = None
) -> int:
    """Run the call(s) in ``session``; then save its state (``--session``) and close it."""

    async def run(tool: str, params: Any) -> dict[str, Any]:
        try:
            return (await session.run(tool, params)).to_json()
        finally:
            if progress is not None:
                progress.finish()

    try:
        if args.checkpoint or args.changes or args.rewind:
            return await _checkpoint_command(session, args, stdout)
        if args.batch:
            return await _run_batch(run, args.batch, stdin, stdout)
        if not args.tool:
            return _usage("name a tool (see --list), or use --batch")
        raw = stdin.read() if args.params == "-" else (args.params if args.params is not None else "{}")
        envelope = await run(args.tool, raw)
        _print(envelope, args.json, stdout)
        return _exit_code(envelope)
    finally:
        if args.session:
            session.save_state()
        await session.close()
        if session.ctx.state.problem:
            sys.stderr.write(session.ctx.state.problem + "\n")


def _print(envelope: dict[str, Any], as_json: bool, stdout: TextIO) -> None:
    """The result on stdout; a call that never ran (an unknown tool, invalid parameters) is a
    usage error, on stderr like the others. ``--json`` envelopes all go to stdout."""
    if not as_json and _exit_code(envelope) == EXIT_USAGE:
        stdout.flush()
        sys.stderr.write(f"toolsmith: {_with_newline(envelope['content'])}")
        return
    stdout.write(json.dumps(envelope, ensure_ascii=False) + "\n" if as_json else _with_newline(envelope["content"]))
    stdout.flush()


def _describe_tools(args: Arguments, cwd: Path, config: Any, stdout: TextIO) -> int:
    """--list and --schema: the built-in tools and the workspace's custom tools."""
    from .llm.tools.prompt_section import first_sentence
    from .llm.tools.registry import ToolRegistry

    registry = ToolRegistry.for_workspace(Path(os.path.realpath(cwd)), config, args.profile)
    tools = [tool.info() for tool in registry.tools()]
    named = getattr(args, "help_tool", None) or (args.tool if args.schema else None)
    if named is not None:
        tools = [info for info in tools if info.name == named]
        if not tools:
            known = ", ".join(tool.name for tool in registry.tools())
            return _usage(f"unknown tool '{named}'. Tools: {known}")
        if getattr(args, "help_tool", None):
            stdout.write(tool_help(tools[0]))
            return EXIT_OK
    if args.list:
        width = max((len(info.name) for info in tools), default=0)
        for info in tools:
            stdout.write(f"{info.name:<{width}}  {first_sentence(info.description)}\n")
    elif args.format:
        from .llm.providers import DeclarationError, declarations

        try:
            declared = declarations(args.format, tools)
        except DeclarationError as exc:  # never print what the provider would refuse
            sys.stderr.write(f"toolsmith: {exc}\n")
            return EXIT_TOOL_ERROR
        stdout.write(json.dumps(declared, indent=2, ensure_ascii=False) + "\n")
    else:
        described = [{"name": i.name, "description": i.description, "parameters": i.parameters} for i in tools]
        shown: Any = described[0] if named is not None else described  # --schema TOOL: that tool alone
        stdout.write(json.dumps(shown, indent=2, ensure_ascii=False) + "\n")
    for problem in registry.problems:
        sys.stderr.write(f"toolsmith: {problem}\n")
    return EXIT_OK


def tool_help(info: Any) -> str:
    """``toolsmith help TOOL``: the description the model reads, then each parameter."""
    schema = info.parameters
    required = set(schema.get("required", []))
    lines = [f"{info.name}: {info.title}", "", info.description.rstrip(), "", "Parameters:"]
    for name, spec in schema.get("properties", {}).items():
        kind = spec.get("type", "any")
        kind = "/".join(kind) if isinstance(kind, list) else kind
        flag = "required" if name in required else "optional"
        lines.append(f"  {name} ({kind}, {flag})")
        if spec.get("description"):
            lines.append(f"      {' '.join(spec['description'].split())}")
    if not schema.get("properties"):
        lines.append("  (none)")
    lines += ["", f"Run: toolsmith {info.name} '<json>'   (the parameters as one JSON object)"]
    return "\n".join(lines) + "\n"


async def _checkpoint_command(session: Any, args: Arguments, stdout: TextIO) -> int:
    """--checkpoint / --changes / --rewind: thin over Session (the log lives in the state dir)."""
    from .errors import ToolError

    try:
        if args.checkpoint:
            stdout.write(session.checkpoint() + "\n")
            return EXIT_OK
        if args.changes:
            for change in session.changes(since=args.changes):
                stdout.write(f"{change.kind:<8} {session.ctx.display(change.path)}\n")
            return EXIT_OK
        result = await session.rewind(args.rewind, force=args.force)
    except ToolError as exc:
        sys.stderr.write(f"toolsmith: {exc}\n")
        return EXIT_TOOL_ERROR
    stdout.write(result.summary() + "\n")
    return EXIT_TOOL_ERROR if result.conflicts else EXIT_OK


def _failure(message: str, code: str, **metadata: Any) -> dict[str, Any]:
    """The envelope of a failure the CLI itself meets (a lost session host, a batch line that is
    no call): the same typed outcome, rendered by the runner, as any tool's."""
    from .errors import ToolError
    from .llm.tools.runner import error_response

    return error_response(ToolError(message, metadata, code=code)).to_json()


def _with_newline(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


async def _run_batch(
    run: Callable[[str, Any], Awaitable[dict[str, Any]]], source: str, stdin: TextIO, stdout: TextIO
) -> int:
    """One JSON envelope per input line (with the line's ``id`` echoed); the exit code is the
    worst of all calls."""
    try:
        lines = stdin.read().splitlines() if source == "-" else Path(source).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        return _usage(f"cannot read the batch file {source}: {exc}")
    worst = EXIT_OK
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        call: Any = None
        try:
            call = json.loads(line)
            if not isinstance(call, dict) or not isinstance(call.get("tool"), str):
                raise ValueError('expected an object with a "tool" string')
        except (ValueError, RecursionError) as exc:
            envelope = _failure(f"Batch line {number}: {exc}", "invalid_params", line=number)
        else:
            envelope = await run(call["tool"], call.get("params", {}))
        if isinstance(call, dict) and "id" in call:
            envelope = {"id": call["id"], **envelope}
        stdout.write(json.dumps(envelope, ensure_ascii=False) + "\n")
        stdout.flush()
        worst = max(worst, _exit_code(envelope))
    return worst
