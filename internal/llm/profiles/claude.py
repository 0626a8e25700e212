"""The claude profile: the tools of Claude Code 2.1.332 (``sdk-tools.d.ts`` of npm
``@anthropic-ai/claude-agent-sdk@0.3.332``) — Read, Write, Edit, NotebookEdit, Bash and TaskStop
(claude_files.py), Glob, Grep, WebFetch, TodoWrite and AskUserQuestion (here) — with every input
property the product declares (tests/test_conformance.py compares them). Descriptions are this
project's own. A background command's output is read as the product reads it: its output file,
with Read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ...permission import Choice, Question
from ..tools.context import ToolContext
from ..tools.contract import ToolResponse
from ..tools.grep import MAX_CONTEXT_LINES, MAX_HEAD_LIMIT
from ..tools.params import param
from .base import ProfileTool, ask_questions, drop_none, fetch_for_prompt, not_supported, update_plan, with_notes
from .claude_files import TOOLS as FILE_TOOLS
from .claude_files import ClaudeTool

#: Grep shows this many entries when ``head_limit`` is not given (the product's default).
DEFAULT_HEAD_LIMIT = 250


# --- Glob, Grep ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class GlobParams:
    pattern: str = param('The glob to match, e.g. "**/*.ts" or "src/**/test_*.py"', minLength=1)
    path: str | None = param("The directory to search (default: the working directory)", None)


class Glob(ClaudeTool):
    name = "Glob"
    engine = "glob"
    read_only = True
    Params = GlobParams
    description = """Finds files by name pattern, newest first; respects .gitignore.

- Use it to find files by name; use Grep to search their contents.
- Several speculative searches are best sent together in one turn.
"""

    def to_engine(self, params: GlobParams) -> dict[str, Any]:
        return drop_none({"pattern": params.pattern, "path": params.path})


def _context_lines(description: str, alias: str | None = None) -> Any:
    return param(description, None, minimum=0, maximum=MAX_CONTEXT_LINES, alias=alias)


@dataclass(frozen=True)
class GrepParams:
    pattern: str = param("The regular expression to search for (ripgrep syntax)", minLength=1)
    path: str | None = param("The file or directory to search (default: the working directory)", None)
    glob: str | None = param('Only files matching this glob, e.g. "*.js" or "*.{ts,tsx}"', None)
    output_mode: Literal["content", "files_with_matches", "count"] = param(
        "content: matching lines; files_with_matches: file paths only; count: matches per file",
        "files_with_matches",
    )
    before: int | None = _context_lines("Lines of context before each match (content mode)", "-B")
    after: int | None = _context_lines("Lines of context after each match (content mode)", "-A")
    context_alias: int | None = _context_lines("The same as context", "-C")
    context: int | None = _context_lines("Lines of context before and after each match (content mode)")
    line_numbers: bool | None = param("Show line numbers (content mode; always shown here)", None, alias="-n")
    case_insensitive: bool = param("Ignore case", False, alias="-i")
    only_matching: bool = param("Only the matched parts (not supported here: whole lines are shown)", False,
                                alias="-o")  # fmt: skip
    type: str | None = param('Only files of this ripgrep type, e.g. "py", "js", "rust"', None, minLength=1)
    head_limit: int | None = param(
        f"Show only the first N entries (default {DEFAULT_HEAD_LIMIT}; 0: as many as one call shows, "
        f"{MAX_HEAD_LIMIT})", None, minimum=0,
    )  # fmt: skip
    offset: int = param("Skip the first N entries (to page with head_limit)", 0, minimum=0)
    multiline: bool = param("Let patterns span lines ('.' matches newlines too)", False)


class Grep(ClaudeTool):
    name = "Grep"
    engine = "grep"
    read_only = True
    Params = GrepParams
    description = f"""Searches file contents with ripgrep; respects .gitignore.

- `output_mode`: "files_with_matches" (default, paths newest first), "content" (matching lines
  with line numbers; `-A`/`-B`/`context` add context), or "count" (matches per file).
- Filter files with `glob` or `type`; `-i` ignores case; `multiline` lets a pattern span lines.
- Page with `head_limit` (default {DEFAULT_HEAD_LIMIT}; 0 for the most one call shows) and `offset`.
- Always use Grep for searching; do not run grep or rg through Bash.
"""

    async def run(self, params: GrepParams, ctx: ToolContext) -> ToolResponse:
        notes = []
        if params.only_matching:
            notes.append(not_supported("-o", "whole matching lines are shown"))
        if params.line_numbers is False:
            notes.append(not_supported("-n: false", "line numbers are always shown"))
        limit = DEFAULT_HEAD_LIMIT if params.head_limit is None else params.head_limit
        if limit == 0 or limit > MAX_HEAD_LIMIT:
            limit = MAX_HEAD_LIMIT
        context = params.context if params.context is not None else params.context_alias
        values = drop_none({
            "pattern": params.pattern, "path": params.path, "include": params.glob, "type": params.type,
            "output_mode": params.output_mode, "case_insensitive": params.case_insensitive,
            "after": params.after, "before": params.before, "context": context,
            "multiline": params.multiline, "head_limit": limit, "offset": params.offset,
        })  # fmt: skip
        return with_notes(await self.engine_call("grep", values, ctx), notes)


# --- WebFetch -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class WebFetchParams:
    url: str = param("The URL to fetch", minLength=1)
    prompt: str = param("What to find or do with the page")
    offset: int = param("The character position in the page text to read on from (the last result names it)", 0,
                        minimum=0)  # fmt: skip


class WebFetch(ClaudeTool):
    name = "WebFetch"
    engine = "fetch"
    read_only = True
    open_world = True
    Params = WebFetchParams
    description = """Fetches a URL and applies `prompt` to the page.

- Where the host offers no model for the page, the page itself (as markdown) comes back with the
  prompt restated: answer it from the page. A long page is read on with `offset`.
- Responses over 5 MB and binary content are refused.
"""

    async def run(self, params: WebFetchParams, ctx: ToolContext) -> ToolResponse:
        return await fetch_for_prompt(self, params.url, params.prompt, ctx, params.offset)


# --- TodoWrite, AskUserQuestion -----------------------------------------------------------------


@dataclass(frozen=True)
class TodoItem:
    content: str = param("What to do", minLength=1)
    status: Literal["pending", "in_progress", "completed"] = param("pending, in_progress or completed")
    active_form: str = param('The step as it is being done, e.g. "Running the tests"', alias="activeForm")


@dataclass(frozen=True)
class TodoWriteParams:
    todos: list[TodoItem] = param("The updated todo list: it replaces the one before")


class TodoWrite(ClaudeTool):
    name = "TodoWrite"
    engine = "plan"
    read_only = True
    idempotent = True
    Params = TodoWriteParams
    description = """Writes your todo list for the task; the user sees it as you work.

- Send the whole list each time. One item in_progress at a time; mark items completed as soon as
  they are done. Use it for tasks of three steps or more.
"""

    async def run(self, params: TodoWriteParams, ctx: ToolContext) -> ToolResponse:
        items = [{"content": t.content, "status": t.status, "active_form": t.active_form} for t in params.todos]
        return await update_plan(self, items, None, ctx)


@dataclass(frozen=True)
class AskOption:
    label: str = param("The choice as the user sees it (1-5 words)", minLength=1)
    description: str = param("What choosing it means")
    preview: str | None = param("Content shown when the option is focused (a mockup, a snippet)", None)


@dataclass(frozen=True)
class AskQuestion:
    question: str = param("The question, ending with a question mark", minLength=1)
    header: str = param("A very short label (at most 12 characters)")
    options: list[AskOption] = param("2-4 distinct choices ('Other' is added by the host)", minItems=2, maxItems=4)
    multi_select: bool = param("Let the user choose several options", alias="multiSelect")


@dataclass(frozen=True)
class AnswerNote:
    preview: str | None = param("The preview of the selected option", None)
    notes: str | None = param("The user's notes on their selection", None)


@dataclass(frozen=True)
class AskMetadata:
    source: str | None = param("Where the question comes from (for tracking; not shown)", None)


@dataclass(frozen=True)
class AskUserQuestionParams:
    questions: list[AskQuestion] = param("The questions (1-4)", minItems=1, maxItems=4)
    answers: dict[str, str] | None = param("Answers the host already collected, by question text", None)
    annotations: dict[str, AnswerNote] | None = param("The user's notes per question, by question text", None)
    metadata: AskMetadata | None = param("Tracking data (not shown to the user)", None)


class AskUserQuestion(ClaudeTool):
    name = "AskUserQuestion"
    engine = "question"
    read_only = True
    Params = AskUserQuestionParams
    description = """Asks the user questions with choices and waits for the answers.

- Ask when the task depends on a choice only the user can make; each question has 2-4 options
  and the user may always answer in their own words. If the host cannot ask, the result says so
  at once: then decide yourself and say what you assumed.
"""

    async def run(self, params: AskUserQuestionParams, ctx: ToolContext) -> ToolResponse:
        if params.answers and all(q.question in params.answers for q in params.questions):
            return _given_answers(params)
        questions = [  # an option's preview goes with its description: the host shows that
            Question(q.question, q.header, tuple(
                Choice(o.label, o.description + (f"\n\n{o.preview}" if o.preview else "")) for o in q.options
            ), q.multi_select)
            for q in params.questions
        ]  # fmt: skip
        return await ask_questions(self, questions, ctx)


def _given_answers(params: AskUserQuestionParams) -> ToolResponse:
    """The answers the host collected before the call (the product's ``answers``), as the model reads them."""
    assert params.answers is not None
    lines = ["The user answered:"]
    for number, q in enumerate(params.questions, 1):
        note = (params.annotations or {}).get(q.question)
        extra = f" (notes: {note.notes})" if note is not None and note.notes else ""
        lines.append(f"{number}. {q.question}\n   → {params.answers[q.question]}{extra}")
    answers = [{"question": q.question, "text": params.answers[q.question]} for q in params.questions]
    return ToolResponse("\n".join(lines), metadata={"declined": False, "answers": answers})


TOOLS: list[ProfileTool] = [
    *FILE_TOOLS[:3], Glob(), Grep(), *FILE_TOOLS[3:], WebFetch(), TodoWrite(), AskUserQuestion(),
]  # fmt: skip
