"""bashlex with its LALR tables built once per machine, not once per process.

bashlex builds its parser when ``bashlex.parser`` is imported: its bundled yacc computes the LALR
tables from the grammar every time (~100 ms, most of a first bash call) and never reads the
``parsetab.py`` it ships. Here the import goes through :func:`import_bashlex`, which lets bashlex
run its own yacc with one part swapped: the table computation. The action and goto tables are
read from a cache file when one matches, else computed by bashlex's own code and saved.

The cache is only ever an accelerator. Its file name carries a key over everything the tables
depend on (the grammar's productions and precedence, bashlex's yacc source, the Python version),
its header a digest of its body; a file that is missing, stale, truncated, corrupt or out of
range for the grammar is ignored and the tables are built as without a cache. It is written to a
temporary file and renamed into place, so readers see a whole file or none; any error reading or
writing it costs only the rebuild.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

#: Changes when the file layout below changes (older files are then ignored).
CACHE_FORMAT = 1
#: Where the table cache lives when no directory is given: the user's cache directory.
CACHE_DIR_ENV = "XDG_CACHE_HOME"

#: How the last :func:`import_bashlex` got its tables: "cache", "built", or "" (bashlex was
#: already imported elsewhere, or is not installed).
tables_source = ""

Tables = tuple[dict[int, dict[str, Any]], dict[int, dict[str, int]]]


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/toolsmith``, else ``~/.cache/toolsmith``."""
    xdg = os.environ.get(CACHE_DIR_ENV)
    return (Path(xdg) if xdg else Path.home() / ".cache") / "toolsmith"


def import_bashlex(directory: Path | None = None) -> ModuleType:
    """The ``bashlex`` module, its parser built from cached tables when they match.

    Should the swap itself fail (a bashlex whose yacc no longer looks as expected), bashlex is
    imported the ordinary way: the cache may cost time, never the parser.
    """
    if "bashlex" in sys.modules:
        return sys.modules["bashlex"]
    try:
        return _import_with_table_cache(directory)
    except Exception:
        _forget_bashlex()
        return importlib.import_module("bashlex")


def _import_with_table_cache(directory: Path | None) -> ModuleType:
    spec = importlib.util.find_spec("bashlex")
    if spec is None or spec.loader is None:
        raise ImportError("bashlex is not installed")
    package = importlib.util.module_from_spec(spec)
    sys.modules["bashlex"] = package
    try:
        # The package's __init__ imports bashlex.parser, which builds the parser at once: the
        # table class must be swapped in before that, so yacc is imported first, on its own.
        yacc: Any = importlib.import_module("bashlex.yacc")
        original = yacc.LRTable
        yacc.LRTable = _cached_table_class(original, yacc, directory)
        try:
            spec.loader.exec_module(package)
        finally:
            yacc.LRTable = original
    except BaseException:
        _forget_bashlex()
        raise
    return package


def _forget_bashlex() -> None:
    for name in [name for name in sys.modules if name == "bashlex" or name.startswith("bashlex.")]:
        del sys.modules[name]


def _cached_table_class(base: type, yacc: ModuleType, directory: Path | None) -> type:
    """A stand-in for bashlex's ``LRTable``: the same attributes, tables from the cache or built."""

    class CachedLRTable(base):  # type: ignore[misc]
        lr_action: dict[int, dict[str, Any]]
        lr_goto: dict[int, dict[str, int]]
        sr_conflicts: list[Any]
        rr_conflicts: list[Any]

        def __init__(self, grammar: Any, log: Any = None) -> None:
            global tables_source
            path: Path | None = None
            tables: Tables | None = None
            with contextlib.suppress(Exception):  # no home, an unreadable source: no cache
                path = (directory or cache_dir()) / f"bashlex-tables-{_key(grammar, yacc)}.json"
                tables = read_tables(path, grammar)
            if tables is None:
                super().__init__(grammar, log)
                tables_source = "built"
                # Saved now: bashlex's parser module patches the tables once it has them.
                if path is not None:
                    with contextlib.suppress(Exception):
                        write_tables(path, self.lr_action, self.lr_goto)
                return
            tables_source = "cache"
            self.grammar = grammar
            self.lr_productions = grammar.Productions
            self.lr_action, self.lr_goto = tables
            self.sr_conflicts, self.rr_conflicts = [], []

    return CachedLRTable


def _key(grammar: Any, yacc: ModuleType) -> str:
    """A digest of everything the tables are computed from."""
    digest = hashlib.sha256(f"{CACHE_FORMAT}\n{sys.implementation.cache_tag}\n{sys.version}\n".encode())
    if yacc.__file__:
        digest.update(Path(yacc.__file__).read_bytes())
    for production in grammar.Productions:
        digest.update(f"{production}|{production.prec}\n".encode())
    digest.update(json.dumps(sorted(grammar.Precedence.items())).encode())
    return digest.hexdigest()[:32]


def write_tables(path: Path, action: dict[int, dict[str, Any]], goto: dict[int, dict[str, int]]) -> None:
    """Save the tables atomically: a header line with the body's digest, then the body."""
    states = len(action)
    if sorted(action) != list(range(states)) or sorted(goto) != list(range(states)):
        return  # not the dense state numbering read_tables expects: nothing to save
    body = json.dumps({"action": [action[s] for s in range(states)], "goto": [goto[s] for s in range(states)]})
    header = json.dumps({"format": CACHE_FORMAT, "sha256": hashlib.sha256(body.encode()).hexdigest()})
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(header + "\n" + body)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def read_tables(path: Path, grammar: Any) -> Tables | None:
    """The tables saved at ``path`` when the file is whole and fits ``grammar``, else None."""
    try:
        header_line, _, body = path.read_text(encoding="utf-8").partition("\n")
        header = json.loads(header_line)
        if header.get("format") != CACHE_FORMAT or header.get("sha256") != hashlib.sha256(body.encode()).hexdigest():
            return None
        saved = json.loads(body)
        action = dict(enumerate(saved["action"]))
        goto = dict(enumerate(saved["goto"]))
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    return (action, goto) if _fits(action, goto, grammar) else None


def _fits(action: dict[int, Any], goto: dict[int, Any], grammar: Any) -> bool:
    """Every entry names a symbol of the grammar and a state or production that exists."""
    states, productions = len(action), len(grammar.Productions)
    terminals = set(grammar.Terminals) | {"$end"}
    nonterminals = set(grammar.Nonterminals)
    if states == 0 or len(goto) != states:
        return False
    for row in action.values():
        if not isinstance(row, dict):
            return False
        for symbol, move in row.items():
            if symbol not in terminals or not (move is None or (type(move) is int and -productions < move < states)):
                return False
    for row in goto.values():
        if not isinstance(row, dict):
            return False
        for symbol, state in row.items():
            if symbol not in nonterminals or type(state) is not int or not 0 <= state < states:
                return False
    return True
