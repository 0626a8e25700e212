"""The gemini profile's file and search tools: read_file, write_file, replace, glob, grep_search,
list_directory and read_many_files, with the input properties of Gemini CLI 0.61.0
(``@google/gemini-cli-core@0.61.0``'s declarations; the grep_search shape is the ripgrep one, a
superset of the other). Descriptions are this project's own. As in the product, replace and
write_file need no prior read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...errors import InvalidParams
from ..tools.context import ToolContext
from ..tools.contract import ToolResponse
from ..tools.grep import MAX_CONTEXT_LINES, MAX_HEAD_LIMIT
from ..tools.params import param
from .base import ProfileTool, drop_none, not_supported, with_notes
from .vocabularies import GEMINI

#: grep_search shows at most this many matches when ``total_max_matches`` is not given (the product's default).
DEFAULT_TOTAL_MATCHES = 100


class GeminiTool(ProfileTool):
    vocabulary = GEMINI


@dataclass(frozen=True)
class FileFiltering:
    respect_git_ignore: bool | None = param("Respect .gitignore (default true)", None)
    respect_gemini_ignore: bool | None = param("Respect .geminiignore (default true; no such file is read here)", None)


def _ignore_notes(git: bool | None, gemini: bool | None = None) -> list[str]:
    notes = []
    if git is False:
        notes.append(not_supported("respect_git_ignore: false", ".gitignore is always respected"))
    if gemini is False:
        notes.append(not_supported("respect_gemini_ignore: false", "no .geminiignore is read here"))
    return notes


# --- read_file, write_file, replace -------------------------------------------------------------


@dataclass(frozen=True)
class ReadFileParams:
    file_path: str = param("The path of the file to read", minLength=1)
    start_line: int | None = param("The 1-based line to start at", None, minimum=1)
    end_line: int | None = param("The 1-based line to end at (inclusive)", None, minimum=1)


class ReadFile(GeminiTool):
    name = "read_file"
    engine = "view"
    read_only = True
    Params = ReadFileParams
    description = """Reads a file with line numbers; `start_line` and `end_line` (1-based, inclusive) read a part.

Images come back as images, PDFs as text by page, notebooks cell by cell.
"""

    async def run(self, params: ReadFileParams, ctx: ToolContext) -> ToolResponse:
        start = params.start_line or 1
        if params.end_line is not None and params.end_line < start:
            raise InvalidParams(f"end_line ({params.end_line}) is before start_line ({start}).")
        limit = params.end_line - start + 1 if params.end_line is not None else None
        values = drop_none({"file_path": params.file_path, "offset": start - 1, "limit": limit})
        return await self.engine_call("view", values, ctx)


@dataclass(frozen=True)
class WriteFileParams:
    file_path: str = param("The path of the file to write", minLength=1)
    content: str = param("The whole content, without placeholders")


class WriteFile(GeminiTool):
    name = "write_file"
    engine = "write"
    idempotent = True
    Params = WriteFileParams
    description = "Writes a whole file, creating parent directories; prefer replace for changes to large files.\n"

    def to_engine(self, params: WriteFileParams) -> dict[str, Any]:
        return {"file_path": params.file_path, "content": params.content}


@dataclass(frozen=True)
class ReplaceParams:
    file_path: str = param("The path of the file to change", minLength=1)
    instruction: str = param("What the change is for, in a sentence (kept with the result)")
    old_string: str = param("The exact text to replace, with a few lines of context")
    new_string: str = param("The text to replace it with")
    allow_multiple: bool = param("Replace every occurrence (otherwise old_string must be unique)", False)


class Replace(GeminiTool):
    name = "replace"
    engine = "edit"
    Params = ReplaceParams
    description = """Replaces text in a file. `old_string` must match exactly once unless `allow_multiple`;
an empty `old_string` creates a new file. Whitespace slips are forgiven when the match stays unambiguous.
"""

    def to_engine(self, params: ReplaceParams) -> dict[str, Any]:
        return {
            "file_path": params.file_path, "old_string": params.old_string, "new_string": params.new_string,
            "replace_all": params.allow_multiple,
        }  # fmt: skip


# --- glob, grep_search, list_directory, read_many_files ------------------------------------------


@dataclass(frozen=True)
class GlobParams:
    pattern: str = param("The glob to match, e.g. '**/*.py'", minLength=1)
    dir_path: str | None = param("The directory to search (default: the working directory)", None)
    case_sensitive: bool | None = param("Match case (matching is case-sensitive here)", None)
    respect_git_ignore: bool | None = param("Respect .gitignore (default true)", None)
    respect_gemini_ignore: bool | None = param("Respect .geminiignore (default true)", None)


class Glob(GeminiTool):
    name = "glob"
    engine = "glob"
    read_only = True
    Params = GlobParams
    description = "Finds files by glob, newest first; respects .gitignore.\n"

    async def run(self, params: GlobParams, ctx: ToolContext) -> ToolResponse:
        notes = _ignore_notes(params.respect_git_ignore, params.respect_gemini_ignore)
        if params.case_sensitive is False:
            notes.append(not_supported("case_sensitive: false", "globs match case here"))
        response = await self.engine_call("glob", drop_none({"pattern": params.pattern, "path": params.dir_path}), ctx)
        return with_notes(response, notes)


def _lines(description: str) -> Any:
    return param(description, None, minimum=0, maximum=MAX_CONTEXT_LINES)


@dataclass(frozen=True)
class GrepSearchParams:
    pattern: str = param("The regular expression to search for", minLength=1)
    dir_path: str | None = param("The directory (or file) to search (default: the working directory)", None)
    include_pattern: str | None = param("Only files matching this glob, e.g. '*.{ts,tsx}'", None)
    exclude_pattern: str | None = param("Leave out lines matching this regular expression (not supported here)", None)
    names_only: bool = param("Only the paths of matching files", False)
    case_sensitive: bool = param("Match case (default: ignore case)", False)
    fixed_strings: bool = param("Treat pattern as literal text", False)
    context: int | None = _lines("Lines of context around each match")
    after: int | None = _lines("Lines of context after each match")
    before: int | None = _lines("Lines of context before each match")
    no_ignore: bool = param("Search ignored files too (not supported here: .gitignore is respected)", False)
    max_matches_per_file: int | None = param("At most this many matches per file (not supported here)", None,
                                             minimum=1)  # fmt: skip
    total_max_matches: int | None = param(f"At most this many matches (default {DEFAULT_TOTAL_MATCHES})", None,
                                          minimum=1)  # fmt: skip


class GrepSearch(GeminiTool):
    name = "grep_search"
    engine = "grep"
    read_only = True
    Params = GrepSearchParams
    description = f"""Searches file contents for a regular expression with ripgrep; respects .gitignore.

Matches are grouped by file with line numbers (at most {DEFAULT_TOTAL_MATCHES} unless `total_max_matches`);
`names_only` lists the files.
"""

    async def run(self, params: GrepSearchParams, ctx: ToolContext) -> ToolResponse:
        notes = []
        if params.exclude_pattern:
            notes.append(not_supported("exclude_pattern", "no line was left out"))
        if params.no_ignore:
            notes.append(not_supported("no_ignore", ".gitignore is respected"))
        if params.max_matches_per_file is not None:
            notes.append(not_supported("max_matches_per_file", "total_max_matches bounds the matches"))
        limit = min(params.total_max_matches or DEFAULT_TOTAL_MATCHES, MAX_HEAD_LIMIT)
        values = drop_none({
            "pattern": params.pattern, "path": params.dir_path, "include": params.include_pattern,
            "output_mode": "files_with_matches" if params.names_only else "content",
            "case_insensitive": not params.case_sensitive, "literal_text": params.fixed_strings,
            "context": params.context, "after": params.after, "before": params.before, "head_limit": limit,
        })  # fmt: skip
        return with_notes(await self.engine_call("grep", values, ctx), notes)


@dataclass(frozen=True)
class ListDirectoryParams:
    dir_path: str = param("The path of the directory to list", minLength=1)
    ignore: list[str] = param("Glob patterns to leave out", [])
    file_filtering_options: FileFiltering | None = param("Which ignore files to respect", None)


class ListDirectory(GeminiTool):
    name = "list_directory"
    engine = "ls"
    read_only = True
    Params = ListDirectoryParams
    description = "Lists the files and directories directly in a directory; respects .gitignore.\n"

    async def run(self, params: ListDirectoryParams, ctx: ToolContext) -> ToolResponse:
        filtering = params.file_filtering_options or FileFiltering()
        notes = _ignore_notes(filtering.respect_git_ignore, filtering.respect_gemini_ignore)
        values = {"path": params.dir_path, "ignore": params.ignore, "depth": 1}
        return with_notes(await self.engine_call("ls", values, ctx), notes)


@dataclass(frozen=True)
class ReadManyFilesParams:
    include: list[str] = param("Paths, directories or globs to read, e.g. ['src/**/*.ts', 'README.md']", minItems=1)
    exclude: list[str] = param("Globs to leave out (not supported here: name what to read in include)", [])
    recursive: bool = param("Search directories recursively (globs with ** do)", True)
    use_default_excludes: bool = param(
        "Leave out the usual noise (node_modules, .git, ...)", True, alias="useDefaultExcludes"
    )
    file_filtering_options: FileFiltering | None = param("Which ignore files to respect", None)


class ReadManyFiles(GeminiTool):
    name = "read_many_files"
    engine = "read_many"
    read_only = True
    Params = ReadManyFilesParams
    description = "Reads several files (paths, directories or globs) in one call, each under its path.\n"

    async def run(self, params: ReadManyFilesParams, ctx: ToolContext) -> ToolResponse:
        filtering = params.file_filtering_options or FileFiltering()
        notes = _ignore_notes(filtering.respect_git_ignore, filtering.respect_gemini_ignore)
        if params.exclude:
            notes.append(not_supported("exclude", "nothing was left out; name only what to read in include"))
        if not params.use_default_excludes:
            notes.append(not_supported("useDefaultExcludes: false", "the usual noise is left out of globs"))
        return with_notes(await self.engine_call("read_many", {"paths": params.include}, ctx), notes)


TOOLS = [ReadFile(), WriteFile(), Replace(), Glob(), GrepSearch(), ListDirectory(), ReadManyFiles()]
