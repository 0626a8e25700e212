"""Pure-Python stand-in for rg when no binary is available: same queries, same results.

Best-effort .gitignore support (per-directory files; ``*``, ``?``, ``**``, ``/``-anchored and
``dir/`` patterns, ``!`` negation), hidden files included, ``.git`` and symlinks skipped (as rg
does without ``--follow``), binary files (a NUL in the first 8 KiB) not searched.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ..cancel import CancelToken
from ..errors import ToolError
from ..fsutil.paths import quote_input
from .query import FileQuery, Match, SearchQuery, SearchResult

BINARY_PROBE_BYTES = 8192


def glob_to_regex(glob: str) -> re.Pattern[str]:
    """gitignore-style glob → regex over a ``/``-separated relative path."""
    anchored = "/" in glob.rstrip("/")
    glob = glob.lstrip("/")
    out = ""
    i = 0
    while i < len(glob):
        c = glob[i]
        if glob.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
            continue
        if glob.startswith("**", i):
            out += ".*"
            i += 2
            continue
        if c == "*":
            out += "[^/]*"
        elif c == "?":
            out += "[^/]"
        elif c == "[":
            end = glob.find("]", i + 1)
            if end < 0:
                out += re.escape(c)
            else:
                body = glob[i + 1 : end].replace("\\", "\\\\")
                out += "[" + ("^" + body[1:] if body.startswith("!") else body) + "]"
                i = end
        elif c == "{":
            end = glob.find("}", i + 1)
            if end < 0:
                out += re.escape(c)
            else:
                out += "(?:" + "|".join(re.escape(p) for p in glob[i + 1 : end].split(",")) + ")"
                i = end
        else:
            out += re.escape(c)
        i += 1
    prefix = "" if anchored else "(?:.*/)?"
    return re.compile(f"^{prefix}{out}$", re.DOTALL)


@dataclass(frozen=True)
class _Rule:
    regex: re.Pattern[str]
    negated: bool
    dir_only: bool
    base: str  # relative dir of the .gitignore that holds it ("" for root)


def _read_ignore(directory: str, rel: str) -> list[_Rule]:
    rules: list[_Rule] = []
    try:
        with open(os.path.join(directory, ".gitignore"), encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return rules
    for line in lines:
        line = line.rstrip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        line = line[1:] if negated else line
        dir_only = line.endswith("/")
        rules.append(_Rule(glob_to_regex(line.rstrip("/")), negated, dir_only, rel))
    return rules


def _ignored(rel: str, is_dir: bool, rules: list[_Rule]) -> bool:
    verdict = False
    for rule in rules:
        if rule.dir_only and not is_dir:
            continue
        sub = rel[len(rule.base) + 1 :] if rule.base else rel
        if rule.regex.match(sub):
            verdict = not rule.negated
    return verdict


def _globs_allow(rel: str, is_dir: bool, globs: tuple[str, ...]) -> bool:
    """rg's --glob semantics: ``!g`` excludes; any positive glob makes the set a whitelist."""
    positives = [g for g in globs if not g.startswith("!")]
    for glob in globs:
        if glob.startswith("!") and glob_to_regex(glob[1:].rstrip("/")).match(rel):
            return False
    if is_dir or not positives:
        return True
    return any(glob_to_regex(g).match(rel) for g in positives)


def _walk(query: FileQuery, cancel: CancelToken) -> list[str]:
    root = str(query.root)
    globs = ("!.git", *query.globs)
    out: list[str] = []
    stack: list[tuple[str, str, list[_Rule], int]] = [(root, "", _read_ignore(root, ""), 1)]
    while stack:
        cancel.raise_if_cancelled()
        directory, rel_dir, rules, depth = stack.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if entry.is_symlink():
                continue
            is_dir = entry.is_dir(follow_symlinks=False)
            if _ignored(rel, is_dir, rules) or not _globs_allow(rel, is_dir, globs):
                continue
            if is_dir:
                if query.max_depth is None or depth < query.max_depth:
                    stack.append((entry.path, rel, rules + _read_ignore(entry.path, rel), depth + 1))
            elif entry.is_file(follow_symlinks=False):
                out.append(entry.path)
    return sorted(out)


def list_files(query: FileQuery, *, limit: int, cancel: CancelToken) -> SearchResult:
    files = _walk(query, cancel)
    return SearchResult(files=files[:limit], stopped_early=len(files) > limit)  # glob stats them itself


def search(query: SearchQuery, *, limit: int, cancel: CancelToken) -> SearchResult:
    try:
        regex = re.compile(re.escape(query.pattern) if query.literal else query.pattern)
    except re.error as exc:
        raise ToolError(
            f"Invalid regular expression {quote_input(query.pattern)!r}: {exc.msg}. Escape special characters, or "
            "set literal_text to true to search for the text as written."
        ) from exc
    globs = (query.include,) if query.include else ()
    files = [str(query.root)] if query.root.is_file() else _walk(FileQuery(query.root, globs), cancel)
    result = SearchResult()
    for path in files:
        cancel.raise_if_cancelled()
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            result.partial = True
            continue
        if b"\0" in data[:BINARY_PROBE_BYTES]:
            continue
        lines = data.split(b"\n")
        if lines and not lines[-1]:
            lines.pop()
        for number, raw in enumerate(lines, start=1):
            text = raw.decode("utf-8", "replace")
            if regex.search(text):
                if len(result.matches) >= limit:
                    result.stopped_early = True
                    return result
                result.matches.append(Match(path, number, text[:-1] if text.endswith("\r") else text))
    return result
