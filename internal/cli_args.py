"""The command line's words, read into the arguments internal/cli.py acts on.

:func:`build_parser` is the whole command line (argparse: its help, its usage errors).
:func:`plain_call` reads the form a script or an agent uses most, a few options then
``TOOL 'JSON'``, without it: building the parser and importing argparse (with gettext and locale)
costs about 3 ms, a twentieth of a one-shot view. It takes only words the parser reads the
same way, and returns the same values; for anything else (help, a usage error, an option it does
not know, an abbreviation, an ``--option=value``) it returns None and the parser reads them.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

    #: What the CLI reads its arguments from: the parser's namespace, or :func:`plain_call`'s.
    Arguments = argparse.Namespace | SimpleNamespace

#: --schema --format values (see internal/llm/providers).
PROVIDER_FORMATS = ("anthropic", "openai", "openai-chat", "gemini")

#: Every argument's value when the command line does not give it, as the parser has them
#: (tests/test_cli_args.py holds the two to the same).
DEFAULTS: dict[str, object] = {
    "cwd": ".", "session": None, "end": False, "config": None, "json": False, "no_lsp": False, "list": False,
    "schema": False, "format": None, "profile": "default", "audit_log": None, "version": False, "batch": None,
    "checkpoint": False, "changes": None, "rewind": None, "force": False, "tool_flags": None, "tool": None,
    "params": None,
}  # fmt: skip
#: The options :func:`plain_call` reads: those taking a value, and flags (True when given).
_PLAIN_VALUE_OPTIONS = {"--cwd": "cwd", "--session": "session", "--config": "config", "--audit-log": "audit_log"}
_PLAIN_FLAGS = {"--json": "json", "--no-lsp": "no_lsp"}


def plain_call(words: list[str]) -> SimpleNamespace | None:
    """``[--cwd DIR] [--session ID] [--config FILE] [--audit-log FILE] [--json] [--no-lsp] TOOL
    [PARAMS]``, each option once and before the tool, no value starting with ``-``: the
    arguments, as the parser would read them. None for any other command line."""
    values = dict(DEFAULTS)
    given: set[str] = set()
    at = 0
    while at < len(words) and words[at].startswith("-"):
        word = words[at]
        if word in given:
            return None
        given.add(word)
        if word in _PLAIN_FLAGS:
            values[_PLAIN_FLAGS[word]] = True
            at += 1
        elif word in _PLAIN_VALUE_OPTIONS and at + 1 < len(words) and not words[at + 1].startswith("-"):
            values[_PLAIN_VALUE_OPTIONS[word]] = words[at + 1]
            at += 2
        else:
            return None
    positionals = words[at:]
    if not 1 <= len(positionals) <= 2 or any(word.startswith("-") for word in positionals):
        return None
    if positionals[0] == "help":  # `help TOOL`: the parser's path prints the help
        return None
    values["tool"] = positionals[0]
    values["params"] = positionals[1] if len(positionals) == 2 else None
    return SimpleNamespace(**values)


def tool_flag(text: str) -> tuple[str, str]:
    """``--tool``'s value: ``NAME=PATH`` (add or replace) or ``NAME=`` (remove), as (NAME, PATH)."""
    name, equals, program = text.partition("=")
    if not name or not equals:
        import argparse

        raise argparse.ArgumentTypeError(
            f"expected NAME=PATH (the program PATH offered as the tool NAME) or NAME= (the tool removed): {text!r}"
        )
    return name, program


def build_parser() -> argparse.ArgumentParser:
    import argparse

    from .llm.profiles import PROFILES

    parser = argparse.ArgumentParser(
        prog="toolsmith",
        description="Run one Toolsmith tool call and print its result.",
        epilog="Exit codes: 0 ok, 1 the tool returned an error, 2 usage or invalid parameters.",
        # Each add_argument makes a formatter to check the metavar, and argparse's own asks for the
        # terminal's width (importing shutil, ~2 ms): that check needs no width. Help and usage
        # errors get argparse's own formatter back below.
        formatter_class=functools.partial(argparse.HelpFormatter, width=80),
    )
    parser.add_argument("--cwd", default=".", help="workspace root (default: current directory)")
    parser.add_argument(
        "--session",
        help="session id whose state persists across invocations ([A-Za-z0-9._-], ≤ 64); its calls run "
        "in a per-session host process that keeps language servers and jobs alive between calls",
    )
    parser.add_argument(
        "--end",
        action="store_true",
        help="with --session: stop the session's host process and everything it runs (its state file stays)",
    )
    parser.add_argument("--config", metavar="FILE", help="a config file read after the user's and the workspace's")
    parser.add_argument("--json", action="store_true", help="print the whole response envelope as JSON")
    parser.add_argument(
        "--no-lsp",
        action="store_true",
        help="no language-server diagnostics for this call (with --session: this call only)",
    )
    parser.add_argument("--list", action="store_true", help="list the tools with what each does")
    parser.add_argument(
        "--schema", action="store_true", help="print every tool's (or one named tool's) description and parameters"
    )
    parser.add_argument(
        "--format",
        choices=PROVIDER_FORMATS,
        help="with --schema: the tool declarations as that provider's API takes them",
    )
    parser.add_argument(
        "--profile",
        default="default",
        choices=PROFILES,
        help="the tool shapes to offer: the engine's own (default), Claude's (Read, Edit, Grep, ...) or Codex's "
        "(apply_patch, exec_command, ...)",
    )
    parser.add_argument("--audit-log", metavar="FILE", help="append one JSON line per tool call to FILE")
    parser.add_argument("--version", action="store_true", help="print the version")
    parser.add_argument(
        "--batch", metavar="FILE", help='run a JSONL file of {"tool", "params", "id"?} calls ("-": stdin)'
    )
    parser.add_argument("--checkpoint", action="store_true", help="with --session: mark a checkpoint, print its id")
    parser.add_argument("--changes", metavar="CHECKPOINT", help="with --session: the files changed since CHECKPOINT")
    parser.add_argument(
        "--rewind", metavar="CHECKPOINT", help="with --session: put back every file changed since CHECKPOINT"
    )
    parser.add_argument("--force", action="store_true", help="with --rewind: overwrite files changed by others too")
    parser.add_argument(
        "--tool",
        dest="tool_flags",
        action="append",
        type=tool_flag,
        metavar="NAME=PATH",
        help="for this invocation, offer the program PATH as the tool NAME (it replaces any tool of that name, "
        "built-ins too); NAME= removes the tool NAME; repeatable; not with --session",
    )
    parser.add_argument("tool", nargs="?", help="tool name (help TOOL: the tool's description and parameters)")
    parser.add_argument("params", nargs="?", help="parameters as JSON, or - to read them from stdin")
    parser.formatter_class = argparse.HelpFormatter
    return parser
