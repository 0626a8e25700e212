"""Pure-Python stand-in for rg when no binary is available: same queries, same results.

Best-effort ignore-file support (per-directory ``.gitignore``, ``.ignore`` and ``.rgignore``, with
rg's precedence between them; ``*``, ``?``, ``**``, ``/``-anchored and ``dir/`` patterns, ``!``
negation; not git's info/exclude nor the global excludes file), hidden files included, ``.git``
and symlinks skipped (as rg does without ``--follow``), binary files (a NUL in the first 8 KiB)
not searched.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
import re
from dataclasses import dataclass

from ..cancel import CancelToken
from ..errors import ToolError
from ..fsutil.paths import quote_input
from ..vocabulary import set_flag
from .query import FileQuery, Match, SearchQuery, SearchResult

BINARY_PROBE_BYTES = 8192


def glob_to_regex(glob: str) -> re.Pattern[str]:
    """gitignore-style glob → regex over a ``/``-separated relative path."""
    anchored, body = _glob_body(glob)
    prefix = "" if anchored else "(?:.*/)?"
    return re.compile(f"^{prefix}{body}$", re.DOTALL)


def _glob_body(glob: str) -> tuple[bool, str]:
    """Whether ``glob`` is anchored (a ``/`` before its end), and the regex of its body."""
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
                if body.startswith(("!", "^")):  # a negated class never matches the separator
                    body = "^/" + body[1:]
                out += "[" + body + "]"
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
    return anchored, out


@dataclass(frozen=True)
class IgnoreRule:
    regex: re.Pattern[str]
    negated: bool
    dir_only: bool
    base: str  # relative dir of the ignore file that holds it ("" for root)
    #: For an ignore file above the root: the root's path relative to that file's directory.
    above: str = ""
    #: Which file it came from: an index into IGNORE_FILES.
    source: int = 0


#: The ignore files rg reads in each directory, weakest first: a match in a stronger kind of
#: file decides, whatever the depth of the weaker one (rg: .rgignore, then .ignore, then .gitignore).
IGNORE_FILES = (".gitignore", ".ignore", ".rgignore")


class InexactRules(Exception):
    """An ignore file or glob this module is not known to read exactly as rg does (an escape, a
    ``**`` inside a name, an unusual class or alternation, bytes that are not UTF-8): the caller
    that must answer as rg would (shallow.py) lets rg answer instead."""


def parent_ignores(root: str, *, strict: bool = False) -> list[IgnoreRule]:
    """Rules of ignore files in the root's ancestors, as rg reads them (--no-require-git)."""
    rules: list[IgnoreRule] = []
    child = os.path.abspath(root)
    parts: list[str] = []
    while True:
        parent = os.path.dirname(child)
        if parent == child:
            return rules
        parts.insert(0, os.path.basename(child))
        read = read_ignore(parent, "", strict=strict)
        outer = [dataclasses.replace(rule, above="/".join(parts)) for rule in read]
        rules = outer + rules  # the nearer file's rules come later and win
        child = parent


def read_ignore(directory: str, rel: str, *, strict: bool = False) -> list[IgnoreRule]:
    """The rules of ``directory``'s ignore files (``rel``: its path from the walk's root).
    ``strict``: raise :class:`InexactRules` for a file not read exactly as rg reads it."""
    rules: list[IgnoreRule] = []
    for source, name in enumerate(IGNORE_FILES):
        path = f"{directory}/{name}"
        if not os.access(path, os.F_OK):  # most directories have none: no exception raised per file
            continue
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            if strict:
                raise InexactRules(f"{path} cannot be read") from None
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            if strict:
                raise InexactRules(f"{path} is not UTF-8") from None
            text = data.decode("utf-8", "replace")
        if strict and text.startswith("\ufeff"):
            raise InexactRules(f"{path} starts with a byte-order mark")
        for line in text.splitlines():
            line = line.rstrip()
            if not line or line.startswith("#"):
                continue
            negated = line.startswith("!")
            line = line[1:] if negated else line
            if strict and not exact_glob(line):
                raise InexactRules(f"{path}: {line!r}")
            dir_only = line.endswith("/")
            rules.append(IgnoreRule(glob_to_regex(line.rstrip("/")), negated, dir_only, rel, source=source))
    return rules


#: Characters read as themselves in every position, by rg's glob reading and by glob_to_regex.
_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-+=@%,~ #$&'();:\"<>|^!")
#: What a character class or an alternative may hold (a range's "-" between two of them).
_CLASS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._")


@functools.lru_cache(maxsize=1024)
def exact_glob(glob: str) -> bool:
    """Whether :func:`glob_to_regex` reads ``glob`` (a gitignore line without its ``!``, or an
    rg ``--glob`` without its ``!``) exactly as rg does: plain characters, ``*`` and ``?``,
    ``**`` only as a whole path component, simple classes (``[abc]``, ``[a-z]``, ``[!x]``) and
    alternations of plain words (``{a,b}``); no escapes, no empty or dot components. The
    property test tests/property/test_shallow_listing.py holds it to rg's listing."""
    body = glob.rstrip("/")
    body = body[1:] if body.startswith("/") else body
    if not body or "\\" in body:
        return False
    parts = body.split("/")
    if any(part in ("", ".", "..") or ("**" in part and part != "**") for part in parts):
        return False
    i = 0
    while i < len(body):
        char = body[i]
        if char == "[":
            end = body.find("]", i + 1)
            if end < 0 or not _simple_class(body[i + 1 : end]):
                return False
            i = end
        elif char == "{":
            end = body.find("}", i + 1)
            words = body[i + 1 : end].split(",") if end > 0 else []
            if end < 0 or not all(word and set(word) <= _CLASS for word in words):
                return False
            i = end
        elif char not in _PLAIN and char not in "*?/":
            return False
        i += 1
    return True


def _simple_class(body: str) -> bool:
    """``body`` (between ``[`` and ``]``) is a class of plain characters and ranges, perhaps
    negated with a leading ``!`` or ``^``."""
    body = body[1:] if body[:1] in ("!", "^") else body
    if not body:
        return False
    i = 0
    while i < len(body):
        if body[i] not in _CLASS:
            return False
        if body[i + 1 : i + 2] == "-":  # a range: two plain characters in order
            if i + 2 >= len(body) or body[i + 2] not in _CLASS or body[i + 2] < body[i]:
                return False
            i += 3
        else:
            i += 1
    return True


def _relative_to_rule(rule: IgnoreRule, rel: str) -> str:
    """``rel`` (relative to the walk's root) as the rule's ignore file sees it. An ignore file
    above the root sees every entry as if it were directly in the root — the root's path, then
    the entry's name — as rg 14 matches them (its ignore crate joins the root's absolute path
    to the entry's path stripped of its own directory): ``p/[!a]`` in the parent of ``p/``
    ignores ``p/a/f``, a one-letter name at any depth below ``p/``."""
    if rule.above:
        return f"{rule.above}/{rel.rpartition('/')[2]}"
    return rel[len(rule.base) + 1 :] if rule.base else rel


def ignored(rel: str, is_dir: bool, rules: list[IgnoreRule]) -> bool:
    """Per kind of ignore file the last matching rule (the nearest file's) decides; the strongest
    kind with a match decides in the end."""
    verdicts: dict[int, bool] = {}
    for rule in rules:
        if rule.dir_only and not is_dir:
            continue
        if rule.regex.match(_relative_to_rule(rule, rel)):
            verdicts[rule.source] = not rule.negated
    return verdicts[max(verdicts)] if verdicts else False


class GlobSet:
    """rg's --glob semantics, compiled once: ``!g`` excludes; any positive glob makes the set a
    whitelist (for files; directories are only ever excluded)."""

    def __init__(self, globs: tuple[str, ...]) -> None:
        # An unanchored glob without ** matches the last component alone (nothing in it matches
        # a "/"): those are one alternation tried on the name, the others on the whole path.
        names, paths = [], []
        for glob in (g[1:].rstrip("/") for g in globs if g.startswith("!")):
            anchored, body = _glob_body(glob)
            if anchored or "**" in glob:
                paths.append(f"^{'' if anchored else '(?:.*/)?'}{body}$")
            else:
                names.append(body)
        self.excluded_names = re.compile(f"^(?:{'|'.join(names)})$", re.DOTALL) if names else None
        self.excluded = re.compile("|".join(f"(?:{p})" for p in paths), re.DOTALL) if paths else None
        self.positives = [glob_to_regex(g) for g in globs if not g.startswith("!")]

    def allowed_names(self, names: list[str], is_dir: bool) -> list[str]:
        """The entries among ``names`` (single names: a directory's entries, relative to the
        root that is that directory) that :meth:`allows`, filtered a whole list at a time."""
        if self.excluded_names is not None:
            names = list(itertools.filterfalse(self.excluded_names.match, names))
        if self.excluded is not None:
            names = list(itertools.filterfalse(self.excluded.match, names))
        if is_dir or not self.positives:
            return names
        return [name for name in names if any(regex.match(name) for regex in self.positives)]

    def allows(self, rel: str, is_dir: bool) -> bool:
        if self.excluded_names is not None and self.excluded_names.match(rel.rpartition("/")[2]):
            return False
        if self.excluded is not None and self.excluded.match(rel):
            return False
        if is_dir or not self.positives:
            return True
        return any(regex.match(rel) for regex in self.positives)


#: A directory a walk has still to read: its path, its path relative to the root, the ignore
#: rules in force there, and its level (1 for the root's entries).
Pending = tuple[str, str, list[IgnoreRule], int]


def walk_start(query: FileQuery, *, strict: bool = False) -> tuple[GlobSet, list[Pending]]:
    """The globs of a walk and its first directory: the root, with its own and its ancestors'
    ignore rules (``strict``: see :func:`read_ignore`; the globs are checked too)."""
    root = str(query.root)
    if strict and not all(exact_glob(glob.removeprefix("!")) for glob in query.globs):
        raise InexactRules("an ignore glob")
    rules = parent_ignores(root, strict=strict) + read_ignore(root, "", strict=strict)
    return _glob_set(("!.git", *query.globs)), [(root, "", rules, 1)]


@functools.lru_cache(maxsize=64)
def _glob_set(globs: tuple[str, ...]) -> GlobSet:
    """Compiled once per set of globs (ls compiles the same few dozen noise globs every call)."""
    return GlobSet(globs)


def _walk(query: FileQuery, cancel: CancelToken) -> list[str]:
    globs, stack = walk_start(query)
    out: list[str] = []
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
            if ignored(rel, is_dir, rules) or not globs.allows(rel, is_dir):
                continue
            if is_dir:
                if query.max_depth is None or depth < query.max_depth:
                    stack.append((entry.path, rel, rules + read_ignore(entry.path, rel), depth + 1))
            elif entry.is_file(follow_symlinks=False):
                out.append(entry.path)
    return sorted(out)


def list_files(query: FileQuery, *, limit: int, cancel: CancelToken) -> SearchResult:
    files = _walk(query, cancel)
    return SearchResult(files=files[:limit], stopped_early=len(files) > limit)  # glob stats them itself


def search(query: SearchQuery, *, limit: int, cancel: CancelToken) -> SearchResult:
    if query.file_type:
        raise ToolError(
            "The type filter needs ripgrep, which is not available here; use include with a glob "
            '(e.g. "*.py") instead.',
            code="type_needs_rg",
        )
    flags = (re.IGNORECASE if query.case_insensitive else 0) | (re.MULTILINE | re.DOTALL if query.multiline else 0)
    try:
        regex = re.compile(re.escape(query.pattern) if query.literal else query.pattern, flags)
    except re.error as exc:
        raise ToolError(
            f"Invalid regular expression {quote_input(query.pattern)!r}: {exc.msg}. Escape special characters"
            f"{set_flag('grep', 'literal_text', ' to search for the text as written')}.",
            code="invalid_regex",
        ) from exc
    globs = (query.include,) if query.include else ()
    files = [str(query.root)] if query.root.is_file() else _walk(FileQuery(query.root, globs), cancel)
    result = SearchResult()
    records = 0
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
        texts = _lines(data)
        matched, match_count = _matching_lines(regex, data, texts, query.multiline)
        if not matched:
            continue
        if records >= limit:
            result.stopped_early = True
            return result
        if query.mode == "files_with_matches":
            result.files.append(path)
            records += 1
        elif query.mode == "count":
            result.counts[path] = match_count
            records += 1
        else:
            room = limit - records
            result.matches += _with_context(path, texts, matched[:room], query.before, query.after)
            records += min(room, len(matched))
            if len(matched) > room:
                result.stopped_early = True
                return result
    return result


def _lines(data: bytes) -> list[str]:
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    texts = [raw.decode("utf-8", "replace") for raw in lines]
    return [text[:-1] if text.endswith("\r") else text for text in texts]


def _matching_lines(regex: re.Pattern[str], data: bytes, texts: list[str], multiline: bool) -> tuple[list[int], int]:
    """1-based numbers of the lines a match touches, and the count rg -c gives (lines, or in
    multiline mode, matches)."""
    if not multiline:
        numbers = [n for n, text in enumerate(texts, start=1) if regex.search(text)]
        return numbers, len(numbers)
    whole = data.decode("utf-8", "replace")
    touched: set[int] = set()
    found = 0
    for match in regex.finditer(whole):
        if match.end() == match.start():
            continue
        found += 1
        first = whole.count("\n", 0, match.start()) + 1
        last = first + whole.count("\n", match.start(), match.end() - 1)
        touched.update(range(first, min(last, len(texts)) + 1))
    return sorted(touched), found


def _with_context(path: str, texts: list[str], matched: list[int], before: int, after: int) -> list[Match]:
    shown = set(matched)
    context: set[int] = set()
    for number in matched:
        context.update(range(max(1, number - before), min(len(texts), number + after) + 1))
    return [Match(path, n, texts[n - 1], n not in shown) for n in sorted(shown | context)]
