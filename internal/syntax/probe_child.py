"""The child process of :mod:`.probe`: ``python -m <package>.probe_child LANGUAGE`` with the
source on standard input. It parses the source as the caller would, then walks the tree the ways
the caller's tools will (every node with a cursor, the outline, the syntax errors), prints
:data:`~.probe.FINISHED` and exits 0 — or exits :data:`~.probe.EXIT_TOO_SLOW` when the parse ran
past its time limit. A crash ends this process only; the caller sees the signal in the exit
status."""

from __future__ import annotations

import sys

from .outline import SYMBOL_KINDS, outline
from .parse import Parsed, parse_in_process
from .probe import EXIT_TOO_SLOW, FINISHED, limit_memory


def main(argv: list[str]) -> int:
    limit_memory()
    language = argv[1]
    source = sys.stdin.buffer.read()
    parsed = parse_in_process(source, language)
    if parsed is None:
        return EXIT_TOO_SLOW
    visit_every_node(parsed)
    if language in SYMBOL_KINDS:
        outline(parsed)
    parsed.errors()
    sys.stdout.buffer.write(FINISHED)
    return 0


def visit_every_node(parsed: Parsed) -> int:
    """Go to every node of the tree with a cursor, reading what the walks read; the count."""
    cursor = parsed.tree.walk()
    visited = 0
    while True:
        node = cursor.node
        if node is not None:
            visited += 1
            _ = (node.type, node.is_named, node.has_error, node.start_point, node.end_point)
        if cursor.goto_first_child() or cursor.goto_next_sibling():
            continue
        while True:
            if not cursor.goto_parent():
                return visited
            if cursor.goto_next_sibling():
                break


if __name__ == "__main__":
    sys.exit(main(sys.argv))
