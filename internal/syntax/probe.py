"""Parsing suspicious input in a child process first, so that a native crash is an error.

The syntax layer's own walks are iterative and linear at any depth (outline.py, layout.py), and
tree-sitter parses 100 000 nested brackets in a fraction of a second. What cannot be guarded from
Python is native code: the parser, a grammar's external scanner, the binding's node calls. A
crash there (a segmentation fault) ends the process — and an MCP server with it, for every
session. Deep nesting is where such code meets cases it was never tried on, so a source that
looks deeply nested (:func:`looks_deep`, a few scans of the bytes with no parse) is first parsed
and walked, as the calling tool will, by ``python -m <package>.probe_child`` in a child process:

- the child exits normally: the parse is safe here too (the same code on the same bytes), and the
  caller parses in process;
- it dies by a signal, runs past :data:`PROBE_TIMEOUT_S` or out of :data:`PROBE_MEMORY_BYTES`:
  :class:`~agent_toolsmith.errors.ParseFailed`, which outline and symbol_edit report and the syntax
  gate names in its result (the change is not judged, and not blocked).

A normal file costs the scans only: about a millisecond per MiB.
"""

from __future__ import annotations

import signal
import subprocess
import sys

from ..errors import ParseFailed
from ..nesting import brackets_nest_deeper

#: A source whose brackets nest deeper than this, or with a line indented this many columns, is
#: parsed in a child process first. Real code nests a few dozen levels at most; generated data
#: (a JSON literal, a minified bundle) rarely passes a hundred.
SUSPICIOUS_NESTING = 256
#: The child's whole run (start-up, parse, walks); its parse alone stops at MAX_PARSE_SECONDS.
PROBE_TIMEOUT_S = 20.0
#: The child's address space (RLIMIT_AS): a parse that needs more is stopped there, not here.
PROBE_MEMORY_BYTES = 2 * 1024 * 1024 * 1024
#: Exit status of a child whose parse ran past MAX_PARSE_SECONDS (the caller's parse would too).
EXIT_TOO_SLOW = 3
#: What the child prints last: a status of 0 alone is not trusted (a status another waiter took
#: reads as 0 here), the walks must have finished.
FINISHED = b"finished\n"
#: Of the child's error output, this much is looked at for the reason.
MAX_STDERR_KEPT = 2000
#: The child process, given the language as its last argument and the source on standard input.
CHILD_COMMAND = [sys.executable, "-m", f"{__package__}.probe_child"]

_DEEP_INDENTS = (b"\n" + b" " * SUSPICIOUS_NESTING, b"\n" + b"\t" * SUSPICIOUS_NESTING)


def looks_deep(source: bytes) -> bool:
    """Does ``source`` nest deeper than :data:`SUSPICIOUS_NESTING`, by a line's indentation
    (Python's nesting) or by its brackets? An estimate, in a few passes of C over the bytes:
    brackets in strings and comments count too (an overestimate costs a child process, never a
    wrong answer), and nesting by keywords alone (``begin … end``) is not seen — the walks in
    process are linear at any depth; this is for native code that might not be."""
    if any(indent in source or source.startswith(indent[1:]) for indent in _DEEP_INDENTS):
        return True
    return brackets_nest_deeper(source, SUSPICIOUS_NESTING)


def probe(source: bytes, language: str, path: str) -> bool:
    """Parse and walk ``source`` (the text of ``path``) as ``language`` in a child process: True
    when that went well, False when the parse ran past its time limit there (so would the
    caller's). Raises :class:`ParseFailed` when the child crashed or ran out of time or memory."""
    try:
        done = subprocess.run(
            [*CHILD_COMMAND, language], input=source, capture_output=True, timeout=PROBE_TIMEOUT_S, cwd="/", check=False
        )  # cwd: the package must not be found in (or shadowed from) the workspace
    except subprocess.TimeoutExpired:  # run() has killed and reaped the child
        raise ParseFailed(path, f"parsing it took longer than {PROBE_TIMEOUT_S:.0f} s") from None
    if done.returncode == 0 and done.stdout == FINISHED:
        return True
    if done.returncode == EXIT_TOO_SLOW:
        return False
    raise ParseFailed(path, _failure(done.returncode, done.stderr))


def _failure(status: int, stderr: bytes) -> str:
    if status == 0:
        return "the parser's process ended before it finished"
    if status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = f"signal {-status}"
        return f"the parser crashed on it ({name})"
    if b"MemoryError" in stderr:
        return f"parsing it needed more than {PROBE_MEMORY_BYTES // 2**30} GiB of memory"
    last = stderr[-MAX_STDERR_KEPT:].decode("utf-8", "replace").strip().splitlines()
    return f"the parser failed on it (exit status {status}{': ' + last[-1] if last else ''})"


def limit_memory() -> None:
    """In the child: cap its address space at :data:`PROBE_MEMORY_BYTES`."""
    import resource

    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = PROBE_MEMORY_BYTES if hard == resource.RLIM_INFINITY else min(PROBE_MEMORY_BYTES, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
