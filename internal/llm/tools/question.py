"""question: ask the user one to a few questions through the host, and wait for the answers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...permission import Answers, Choice, Question, QuestionRequest
from .context import UserServices
from .contract import Tool, ToolResponse
from .params import param

#: One call asks at most this many questions, each with at most this many choices.
MAX_QUESTIONS = 4
MAX_CHOICES = 8
#: A choice's label is at most this long (characters): hosts show them as buttons.
MAX_LABEL_CHARS = 200

DESCRIPTION = f"""Asks the user questions and waits for the answers.

- Ask when the task depends on a choice only the user can make (which approach, which of two
  readings of the request), not for things you can find out yourself.
- Each question has `question` (a full sentence), an optional short `header`, and `options` to
  choose from (each a `label` and a `description` of what it means); the user may always answer
  in their own words instead. No options: the answer is free text. `multi_select` lets the user
  pick several.
- At most {MAX_QUESTIONS} questions per call, {MAX_CHOICES} options each. If the host cannot ask,
  the call says so at once: then decide yourself and say what you assumed.
"""


@dataclass(frozen=True)
class ChoiceParams:
    label: str = param("The choice as the user sees it (a few words)", minLength=1, maxLength=MAX_LABEL_CHARS)
    description: str = param("What choosing it means", "")


@dataclass(frozen=True)
class QuestionItemParams:
    question: str = param("The question, as a full sentence", minLength=1)
    header: str = param("A very short label for it (e.g. 'Database')", "")
    options: list[ChoiceParams] = param(
        "The answers to choose from (none: a free-text answer)", [], maxItems=MAX_CHOICES
    )
    multi_select: bool = param("Let the user choose several options", False)


@dataclass(frozen=True)
class QuestionParams:
    questions: list[QuestionItemParams] = param(
        "The questions, asked together", minItems=1, maxItems=MAX_QUESTIONS
    )


class QuestionTool(Tool):
    name = "question"
    title = "Ask the user"
    description = DESCRIPTION
    Params = QuestionParams
    read_only = True  # changes nothing; it waits for a person
    idempotent = False

    async def run(self, params: QuestionParams, ctx: UserServices) -> ToolResponse:
        questions = tuple(
            Question(q.question, q.header, tuple(Choice(c.label, c.description) for c in q.options), q.multi_select)
            for q in params.questions
        )
        answers = await ctx.ask_user(QuestionRequest(self.name, questions))
        return answers_response(questions, answers)


def answers_response(questions: tuple[Question, ...], answers: Answers) -> ToolResponse:
    """The answers as the model reads them, and as data in the metadata."""
    if answers.declined:
        text = (
            "The user declined to answer. Do not ask the same again; go on with your best judgement, or stop "
            "and explain what you need."
        )
        return ToolResponse(text, metadata={"declined": True, "answers": []})
    lines = ["The user answered:"]
    listed: list[dict[str, Any]] = []
    for index, question in enumerate(questions):
        answer = answers.answers[index] if index < len(answers.answers) else None
        said = [*answer.selected, *([answer.text] if answer.text else [])] if answer else []
        lines.append(f"{index + 1}. {question.text}\n   → {', '.join(said) if said else '(no answer)'}")
        listed.append({
            "question": question.text, "selected": list(answer.selected) if answer else [],
            "text": answer.text if answer else "",
        })  # fmt: skip
    return ToolResponse("\n".join(lines), metadata={"declined": False, "answers": listed})


TOOL = QuestionTool()
