"""The gemini profile: the tools of Gemini CLI 0.61.0 (``@google/gemini-cli-core@0.61.0``'s
declarations) — read_file, write_file, replace, glob, grep_search, list_directory and
read_many_files (gemini_files.py), run_shell_command, web_fetch, write_todos and ask_user (here) —
with every input property the product declares (tests/test_conformance.py compares them).
Descriptions are this project's own.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Literal

from ...errors import InvalidParams
from ...permission import Choice, Question
from ...vocabulary import speaking
from ..tools.command_call import start_background_job
from ..tools.context import ToolContext
from ..tools.contract import ToolResponse
from ..tools.params import param
from .base import ProfileTool, ask_questions, drop_none, not_supported, page_text, update_plan, with_notes
from .gemini_files import TOOLS as FILE_TOOLS
from .gemini_files import GeminiTool

#: web_fetch reads at most this many URLs of its prompt (the product's limit).
MAX_FETCH_URLS = 20
#: A page shown by web_fetch without the host's model is cut at this many characters.
MAX_PAGE_CHARS = 50_000
#: run_shell_command with ``is_background``: how long to wait for the first output by default.
DEFAULT_DELAY_MS = 500
MAX_DELAY_MS = 10_000

_URL = re.compile(r"https?://[^\s<>\"'`)\]]+")


# --- run_shell_command --------------------------------------------------------------------------


@dataclass(frozen=True)
class FileSystemAccess:
    read: list[str] | None = param("More absolute paths to read", None)
    write: list[str] | None = param("More absolute paths to write", None)


@dataclass(frozen=True)
class Permissions:
    network: bool | None = param("Network access for the command", None)
    file_system: FileSystemAccess | None = param("More file system access", None, alias="fileSystem")


@dataclass(frozen=True)
class RunShellCommandParams:
    command: str = param("The bash command to run (as bash -c <command>)", minLength=1)
    description: str | None = param("A short description of the command for the user", None)
    dir_path: str | None = param("The directory to run it in (default: the project root)", None)
    is_background: bool = param("Run it in the background (servers, watchers)", False)
    delay_ms: int | None = param(f"With is_background: wait this long for first output (default {DEFAULT_DELAY_MS})",
                                 None, minimum=0, maximum=MAX_DELAY_MS)  # fmt: skip
    additional_permissions: Permissions | None = param("Ask for more sandbox access (not supported here)", None)


class RunShellCommand(GeminiTool):
    name = "run_shell_command"
    engine = "bash"
    open_world = True
    Params = RunShellCommandParams
    description = """Runs a bash command and returns its output and exit code.

- `is_background` starts a long-running program (a server, a watcher) and returns after
  `delay_ms` with its first output, its PID and the file its output is written to (read it with
  read_file; stop it with `kill <PID>`).
- Use read_file, replace and grep_search instead of cat, sed and grep.
"""

    async def run(self, params: RunShellCommandParams, ctx: ToolContext) -> ToolResponse:
        notes = [not_supported("additional_permissions", "the sandbox is the host's setting")] \
            if params.additional_permissions is not None else []  # fmt: skip
        command = f"cd -- {shlex.quote(params.dir_path)} && {params.command}" if params.dir_path else params.command
        if not params.is_background:
            values = drop_none({"command": command, "description": params.description})
            return with_notes(await self.engine_call("bash", values, ctx), notes)
        with speaking(self.vocabulary):
            job = await start_background_job(command, ctx, tool="bash", tty=False, timeout_ms=None,
                                             description=params.description)  # fmt: skip
        delay = (params.delay_ms if params.delay_ms is not None else DEFAULT_DELAY_MS) / 1000
        await job.wait_output(0, delay, delay)
        first = job.read_delta().text.rstrip("\n")
        text = (
            f"Command moved to the background (PID {job.pid}). Its output is written to {job.spill_path}: read it "
            f"with read_file. Stop it with run_shell_command `kill {job.pid}`.\n\nOutput so far:\n{first or '(none)'}"
        )
        response = ToolResponse(text, metadata={"pid": job.pid, "job_id": job.id, "output_file": str(job.spill_path)})
        return with_notes(response, notes)


# --- web_fetch ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class WebFetchParams:
    prompt: str = param(f"What to do, with the URLs (up to {MAX_FETCH_URLS}, starting with http:// or https://)",
                        minLength=1)  # fmt: skip


class WebFetch(GeminiTool):
    name = "web_fetch"
    engine = "fetch"
    read_only = True
    open_world = True
    Params = WebFetchParams
    description = f"""Fetches the URLs named in `prompt` (up to {MAX_FETCH_URLS}) and applies the prompt to them.

Where the host offers no model for pages, the pages themselves (as markdown) come back with the
prompt restated: answer it from them.
"""

    async def run(self, params: WebFetchParams, ctx: ToolContext) -> ToolResponse:
        urls = list(dict.fromkeys(u.rstrip(".,;:") for u in _URL.findall(params.prompt)))
        if not urls:
            raise InvalidParams("The prompt names no URL: include each page's full URL, starting with http:// or "
                                "https://.")  # fmt: skip
        notes = [f"(Only the first {MAX_FETCH_URLS} URLs were fetched.)"] if len(urls) > MAX_FETCH_URLS else []
        pages: list[tuple[str, str]] = []
        for url in urls[:MAX_FETCH_URLS]:
            fetched = await self.engine_call("fetch", {"url": url, "format": "markdown"}, ctx)
            pages.append((url, page_text(fetched) if not fetched.is_error else f"(not fetched: {fetched.content})"))
        if ctx.web_prompt is not None:
            joined = "\n\n".join(f"--- {url} ---\n{text}" for url, text in pages)
            answer = await ctx.web_prompt(params.prompt, " ".join(u for u, _ in pages), joined)
            return with_notes(ToolResponse(answer, metadata={"urls": urls, "prompt_applied": True}), notes)
        parts = [f"Prompt: {params.prompt}\n(No model runs inside this tool here: below are the pages themselves. "
                 "Answer the prompt from them.)"]  # fmt: skip
        for url, text in pages:
            cut = text if len(text) <= MAX_PAGE_CHARS else text[:MAX_PAGE_CHARS] + "\n... (the page goes on)"
            parts.append(f"--- {url} ---\n{cut}")
        return with_notes(ToolResponse("\n\n".join(parts), metadata={"urls": urls, "prompt_applied": False}), notes)


# --- write_todos, ask_user ----------------------------------------------------------------------


@dataclass(frozen=True)
class Todo:
    description: str = param("The task", minLength=1)
    status: Literal["pending", "in_progress", "completed", "cancelled", "blocked"] = param("The task's status")


@dataclass(frozen=True)
class WriteTodosParams:
    todos: list[Todo] = param("The whole todo list: it replaces the one before")


class WriteTodos(GeminiTool):
    name = "write_todos"
    engine = "plan"
    read_only = True
    idempotent = True
    Params = WriteTodosParams
    description = """Writes your todo list for the task; the user sees it as you work.

Send the whole list each time; keep one task in_progress; mark tasks completed when done.
"""

    async def run(self, params: WriteTodosParams, ctx: ToolContext) -> ToolResponse:
        blocked = [t.description for t in params.todos if t.status == "blocked"]
        items = [{"content": t.description, "status": "pending" if t.status == "blocked" else t.status}
                 for t in params.todos]  # fmt: skip
        notes = [not_supported("status blocked", f"kept as pending: {', '.join(blocked)}")] if blocked else []
        return with_notes(await update_plan(self, items, None, ctx), notes)


@dataclass(frozen=True)
class AskOption:
    label: str = param("The choice as the user sees it (1-5 words)", minLength=1)
    description: str = param("What choosing it means")


@dataclass(frozen=True)
class AskQuestion:
    question: str = param("The question, ending with a question mark", minLength=1)
    header: str = param("A very short label, e.g. 'Database'")
    type: Literal["choice", "text", "yesno"] = param("choice (options), text (free text) or yesno", "choice")
    options: list[AskOption] = param("For choice: 2-4 options ('Other' is added)", [])
    multi_select: bool = param("For choice: let the user choose several", False, alias="multiSelect")
    placeholder: str | None = param("A hint for the answer field", None)


@dataclass(frozen=True)
class AskUserParams:
    questions: list[AskQuestion] = param("The questions (1-4)", minItems=1, maxItems=4)


class AskUser(GeminiTool):
    name = "ask_user"
    engine = "question"
    read_only = True
    Params = AskUserParams
    description = """Asks the user questions and waits for the answers: choices, free text or yes/no.

If the host cannot ask, the result says so at once: then decide and say what you assumed.
"""

    async def run(self, params: AskUserParams, ctx: ToolContext) -> ToolResponse:
        questions = []
        for q in params.questions:
            text = f"{q.question} ({q.placeholder})" if q.placeholder else q.question
            if q.type == "yesno":
                options: tuple[Choice, ...] = (Choice("Yes"), Choice("No"))
            elif q.type == "text":
                options = ()
            else:
                options = tuple(Choice(o.label, o.description) for o in q.options)
            questions.append(Question(text, q.header, options, q.multi_select and q.type == "choice"))
        return await ask_questions(self, questions, ctx)


TOOLS: list[ProfileTool] = [*FILE_TOOLS, RunShellCommand(), WebFetch(), WriteTodos(), AskUser()]
