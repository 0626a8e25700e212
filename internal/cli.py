"""The command line: run one tool call (or a batch) and print what the model would see.

    python -m cmd.tools [--cwd DIR] [--session ID] [--json] <tool> ['<json>' | -]
    python -m cmd.tools --list | --schema
    python -m cmd.tools [--cwd DIR] [--session ID] --batch FILE|-

Exit codes: 0 the tool succeeded, 1 the tool returned an error, 2 usage or invalid parameters.
With ``--session`` the session's state (files read, shell cwd/env) is kept under the state
directory between invocations, so ``view`` then ``edit`` works from a script.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from pathlib import Path
from typing import Any, TextIO

EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE = 0, 1, 2
_USAGE_ERRORS = ("invalid_params", "unknown_tool")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolsmith",
        description="Run one Toolsmith tool call and print its result.",
        epilog="Exit codes: 0 ok, 1 the tool returned an error, 2 usage or invalid parameters.",
    )
    parser.add_argument("--cwd", default=".", help="workspace root (default: current directory)")
    parser.add_argument("--session", help="session id whose state persists across invocations")
    parser.add_argument("--json", action="store_true", help="print the whole response envelope as JSON")
    parser.add_argument("--no-lsp", action="store_true", help="do not start language servers for diagnostics")
    parser.add_argument("--list", action="store_true", help="list the tools with one-line descriptions")
    parser.add_argument("--schema", action="store_true", help="print every tool's parameter schema as JSON")
    parser.add_argument("--batch", metavar="FILE", help='run a JSONL file of {"tool", "params"} calls ("-": stdin)')
    parser.add_argument("tool", nargs="?", help="tool name")
    parser.add_argument("params", nargs="?", help="parameters as JSON, or - to read them from stdin")
    return parser


def _configure_logging(state_dir: Path) -> None:
    """Tracebacks go to a log file, never to the terminal the model reads."""
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        handler: logging.Handler = logging.FileHandler(state_dir / "toolsmith.log", delay=True)
    except OSError:
        handler = logging.NullHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger("toolsmith")
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    root.propagate = False


def _first_line(text: str) -> str:
    for line in text.strip().splitlines():
        if line.strip():
            return line.strip()
    return ""


def _exit_code(envelope: dict[str, Any]) -> int:
    if not envelope["is_error"]:
        return EXIT_OK
    return EXIT_USAGE if envelope["metadata"].get("error") in _USAGE_ERRORS else EXIT_TOOL_ERROR


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return asyncio.run(_main(args, sys.stdin, sys.stdout))
    except KeyboardInterrupt:
        return 130


async def _main(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    from internal.llm.tools.tools import all_tools

    if args.list:
        for tool in all_tools():
            stdout.write(f"{tool.name:<10} {_first_line(tool.description)}\n")
        return EXIT_OK
    if args.schema:
        schemas = {t.name: t.info().parameters for t in all_tools()}
        stdout.write(json.dumps(schemas, indent=2) + "\n")
        return EXIT_OK

    from internal.session import Session

    cwd = Path(args.cwd)
    if not cwd.is_dir():
        sys.stderr.write(f"toolsmith: --cwd {args.cwd} is not a directory\n")
        return EXIT_USAGE
    from internal.config import Config

    session = Session(cwd, session_id=args.session, config=Config(lsp_enabled=not args.no_lsp))
    _configure_logging(session.ctx.config.state_dir)
    if args.session:
        session.load_state()
    try:
        if args.batch:
            return await _run_batch(session, args.batch, stdin, stdout)
        if not args.tool:
            sys.stderr.write("toolsmith: name a tool (see --list), or use --batch\n")
            return EXIT_USAGE
        raw = stdin.read() if args.params == "-" else (args.params if args.params is not None else "{}")
        response = await session.run(args.tool, raw)
        envelope = response.to_json()
        stdout.write(json.dumps(envelope, ensure_ascii=False) + "\n" if args.json else _with_newline(response.content))
        return _exit_code(envelope)
    finally:
        if args.session:
            session.save_state()
        await session.close()


def _with_newline(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


async def _run_batch(session: Any, source: str, stdin: TextIO, stdout: TextIO) -> int:
    """One JSON envelope per input line; the exit code is the worst of all calls."""
    lines = stdin.read().splitlines() if source == "-" else Path(source).read_text(encoding="utf-8").splitlines()
    worst = EXIT_OK
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            call = json.loads(line)
            if not isinstance(call, dict) or not isinstance(call.get("tool"), str):
                raise ValueError('expected an object with a "tool" string')
        except ValueError as exc:
            envelope: dict[str, Any] = {
                "content": f"Batch line {number}: {exc}",
                "is_error": True,
                "metadata": {"error": "invalid_params", "line": number},
            }
        else:
            envelope = (await session.run(call["tool"], call.get("params", {}))).to_json()
        stdout.write(json.dumps(envelope, ensure_ascii=False) + "\n")
        stdout.flush()
        worst = max(worst, _exit_code(envelope))
    return worst
