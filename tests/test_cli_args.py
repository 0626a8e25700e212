"""The CLI's plain-call reading (internal/cli_args.py) against argparse's: for every command line
it takes, the same arguments; every other one is left to argparse (its help and its errors)."""

from __future__ import annotations

import pytest
from agent_toolsmith.cli_args import build_parser, plain_call

VIEW = '{"file_path": "f.txt"}'

TAKEN = [
    ["view", VIEW],
    ["view"],
    ["grep", ""],
    ["--cwd", "/tmp/ws", "view", VIEW],
    ["--cwd", "ws dir", "--json", "--no-lsp", "view", VIEW],
    ["--session", "s1", "--config", "c.toml", "--audit-log", "a.jsonl", "edit", '{"old_string": "-x"}'],
    ["--no-lsp", "--cwd", "", "bash", '{"command": "ls -la"}'],
]
LEFT_TO_ARGPARSE = [
    [],
    ["help", "view"],
    ["help"],
    ["view", "--help"],
    ["-h"],
    ["view", VIEW, "--json"],  # an option after the tool
    ["view", "--json", VIEW],
    ["view", "-"],  # parameters from stdin
    ["view", VIEW, "extra"],  # argparse: unrecognized arguments
    ["--cwd"],  # argparse: expected one argument
    ["--cwd", "-x", "view"],
    ["--cwd=/tmp", "view", VIEW],
    ["--cw", "/tmp", "view", VIEW],  # an abbreviation argparse accepts
    ["--cwd", "a", "--cwd", "b", "view"],  # given twice: argparse keeps the last
    ["--json", "--json", "view"],
    ["--list"],
    ["--profile", "claude", "Read", "{}"],
    ["--session", "s", "--checkpoint"],
    ["--", "view", VIEW],
    ["--unknown", "view"],
]


@pytest.mark.parametrize("words", TAKEN, ids=" ".join)
def test_a_plain_call_reads_as_argparse_does(words: list[str]) -> None:
    args = plain_call(words)
    assert args is not None
    assert vars(args) == vars(build_parser().parse_args(words))


@pytest.mark.parametrize("words", LEFT_TO_ARGPARSE, ids=" ".join)
def test_any_other_command_line_is_left_to_argparse(words: list[str]) -> None:
    assert plain_call(words) is None


def test_every_argument_the_parser_has_gets_its_default() -> None:
    """An option added to the parser and not to DEFAULTS would be missing from a plain call."""
    args = plain_call(["view"])
    assert args is not None
    assert vars(args) == vars(build_parser().parse_args(["view"]))
