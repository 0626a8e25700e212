"""The codex profile's reading, planning and asking tools: read_file, list_dir, grep_files,
update_plan and request_user_input, with the input properties of Codex's tool specs (the facts
pinned in testdata/conformance/codex-tools.json, with the commit they were read at)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ...errors import OffsetOutOfRange
from ...permission import Choice, Question
from ..tools.context import ToolContext
from ..tools.contract import ToolResponse
from ..tools.grep import MAX_HEAD_LIMIT
from ..tools.params import param
from .base import ProfileTool, ask_questions, drop_none, not_supported, update_plan, with_notes
from .vocabularies import CODEX

#: list_dir shows this many entries a call unless ``limit`` says otherwise.
DEFAULT_LIST_LIMIT = 200


class CodexTool(ProfileTool):
    vocabulary = CODEX


# --- read_file ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Indentation:
    anchor_line: int | None = param("The line to center the block on (default: offset)", None, minimum=1)
    max_levels: int | None = param("How many enclosing indentation levels to include", None, minimum=0)
    include_siblings: bool | None = param("Include blocks at the anchor's indentation", None)
    include_header: bool | None = param("Include doc comments or attributes above the block", None)
    max_lines: int | None = param("At most this many lines", None, minimum=1)


@dataclass(frozen=True)
class ReadFileParams:
    file_path: str = param("The absolute path of the file", minLength=1)
    offset: int = param("The 1-based line number to start at", 1, minimum=1)
    limit: int = param("How many lines to read", 2000, minimum=1)
    mode: Literal["slice", "indentation"] = param(
        "slice: offset and limit; indentation: the block around an anchor line (read here as a slice)", "slice"
    )
    indentation: Indentation | None = param("For mode indentation: the block to read", None)


class ReadFile(CodexTool):
    name = "read_file"
    engine = "view"
    read_only = True
    Params = ReadFileParams
    description = "Reads a file with 1-based line numbers, from line `offset`, `limit` lines.\n"

    async def run(self, params: ReadFileParams, ctx: ToolContext) -> ToolResponse:
        notes = []
        offset, limit = params.offset, params.limit
        if params.mode == "indentation":
            block = params.indentation or Indentation()
            anchor = block.anchor_line or offset
            limit = min(limit, block.max_lines or limit)
            offset = max(1, anchor - limit // 2)
            notes.append(not_supported("mode=indentation", f"lines {offset}-{offset + limit - 1} around the anchor "
                                       "are shown as a slice"))  # fmt: skip
        response = await self.engine_call("view", {"file_path": params.file_path, "offset": offset - 1,
                                                   "limit": limit}, ctx)  # fmt: skip
        return with_notes(response, notes)


# --- list_dir, grep_files -----------------------------------------------------------------------


@dataclass(frozen=True)
class ListDirParams:
    dir_path: str = param("The absolute path of the directory", minLength=1)
    offset: int = param("The 1-based entry to start listing at", 1, minimum=1)
    limit: int = param(f"How many entries to list (default {DEFAULT_LIST_LIMIT})", DEFAULT_LIST_LIMIT, minimum=1)
    depth: int = param("How many levels to list", 2, minimum=1)


class ListDir(CodexTool):
    name = "list_dir"
    engine = "ls"
    read_only = True
    Params = ListDirParams
    description = (
        "Lists a directory as a tree to `depth` levels, `limit` entries from entry `offset`; respects .gitignore.\n"
    )

    async def run(self, params: ListDirParams, ctx: ToolContext) -> ToolResponse:
        listed = await self.engine_call("ls", {"path": params.dir_path, "depth": params.depth}, ctx)
        if listed.is_error:
            return listed
        lines = listed.content.split("\n")
        entries = [i for i, line in enumerate(lines) if line.lstrip().startswith("- ")][1:]  # [0] is the root
        if params.offset > 1 and params.offset > len(entries):
            raise OffsetOutOfRange(f"offset {params.offset} is past the last entry ({len(entries)}).")
        shown = set(entries[params.offset - 1 : params.offset - 1 + params.limit])
        kept = [line for i, line in enumerate(lines) if i not in entries or i in shown]
        end = params.offset - 1 + len(shown)
        if end < len(entries):
            kept.append(f"\n(More entries: {len(entries) - end} after these. Use offset={end + 1} to list on.)")
        return ToolResponse("\n".join(kept), metadata={**listed.metadata, "entries": len(entries)})


@dataclass(frozen=True)
class GrepFilesParams:
    pattern: str = param("The regular expression to search for", minLength=1)
    include: str | None = param('Only files matching this glob, e.g. "*.rs"', None)
    path: str | None = param("The directory or file to search (default: the working directory)", None)
    limit: int = param("At most this many files", 100, minimum=1, maximum=MAX_HEAD_LIMIT)


class GrepFiles(CodexTool):
    name = "grep_files"
    engine = "grep"
    read_only = True
    Params = GrepFilesParams
    description = "Lists the files whose contents match `pattern`, newest first; respects .gitignore.\n"

    def to_engine(self, params: GrepFilesParams) -> dict[str, Any]:
        return drop_none({
            "pattern": params.pattern, "include": params.include, "path": params.path,
            "output_mode": "files_with_matches", "head_limit": params.limit,
        })  # fmt: skip


# --- update_plan, request_user_input ------------------------------------------------------------


@dataclass(frozen=True)
class PlanStep:
    step: str = param("What to do", minLength=1)
    status: Literal["pending", "in_progress", "completed"] = param("pending, in_progress or completed")


@dataclass(frozen=True)
class UpdatePlanParams:
    plan: list[PlanStep] = param("The steps: the whole plan, replacing the one before")
    explanation: str | None = param("Why the plan changed", None)


class UpdatePlan(CodexTool):
    name = "update_plan"
    engine = "plan"
    read_only = True
    idempotent = True
    Params = UpdatePlanParams
    description = """Updates the task plan the user sees: a list of steps, each with a status.

At most one step is in_progress at a time. Send the whole plan each time.
"""

    async def run(self, params: UpdatePlanParams, ctx: ToolContext) -> ToolResponse:
        items = [{"content": s.step, "status": s.status} for s in params.plan]
        return await update_plan(self, items, params.explanation, ctx)


@dataclass(frozen=True)
class InputOption:
    label: str = param("The choice as the user sees it (1-5 words)", minLength=1)
    description: str = param("What choosing it means, in one short sentence")


@dataclass(frozen=True)
class InputQuestion:
    id: str = param("A stable snake_case id for the answer", minLength=1)
    header: str = param("A short header (12 characters or fewer)")
    question: str = param("The question, in one sentence", minLength=1)
    options: list[InputOption] = param("2-3 exclusive choices, the recommended one first ('Other' is added)")


@dataclass(frozen=True)
class RequestUserInputParams:
    questions: list[InputQuestion] = param("The questions (prefer 1, at most 3)", minItems=1)


class RequestUserInput(CodexTool):
    name = "request_user_input"
    engine = "question"
    read_only = True
    Params = RequestUserInputParams
    description = """Asks the user questions with choices and waits for the answers.

If the host cannot ask, the result says so at once: then decide and say what you assumed.
"""

    async def run(self, params: RequestUserInputParams, ctx: ToolContext) -> ToolResponse:
        questions = [
            Question(q.question, q.header, tuple(Choice(o.label, o.description) for o in q.options))
            for q in params.questions
        ]
        response = await ask_questions(self, questions, ctx)
        answers = response.metadata.get("answers")
        if isinstance(answers, list):  # keyed by the ids the model gave, as the product answers
            response.metadata["answers_by_id"] = {q.id: a for q, a in zip(params.questions, answers, strict=False)}
        return response


TOOLS = [ReadFile(), ListDir(), GrepFiles(), UpdatePlan(), RequestUserInput()]
