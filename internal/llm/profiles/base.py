"""What every profile tool is: a thin adapter over the engine's tools (see the package docstring),
and what the profiles share: notes for what a product's parameter asks and the engine cannot do,
the plan, questions, and a fetched page for a product tool that runs a model on it."""

from __future__ import annotations

from typing import Any, ClassVar

from ...errors import OffsetOutOfRange
from ...permission import Question
from ...vocabulary import Vocabulary, speaking
from ..tools.context import ToolContext
from ..tools.contract import Tool, ToolResponse
from ..tools.runner import run_engine_tool

__all__ = [
    "ProfileTool", "ask_questions", "drop_none", "fetch_for_prompt", "not_supported", "page_text",
    "update_plan", "with_notes",
]  # fmt: skip

#: A page fetched for a prompt (WebFetch, web_fetch) shows at most this many characters a call;
#: WebFetch's ``offset`` reads on from there.
WEB_PAGE_CHARS = 50_000


class ProfileTool(Tool):
    """A profile's tool: its own name, description and ``Params``. By default it runs the engine
    tool ``engine`` with the parameters :meth:`to_engine` makes; a tool that needs more overrides
    :meth:`run` and calls :meth:`engine_call`. Every engine call speaks the profile's
    ``vocabulary`` (vocabulary.py), so its messages name this profile's tools."""

    engine: ClassVar[str]
    vocabulary: ClassVar[Vocabulary]

    def to_engine(self, params: Any) -> dict[str, Any]:
        raise NotImplementedError

    def render(self, response: ToolResponse, params: Any) -> ToolResponse:
        """The engine's response in this family's conventions (unchanged by default)."""
        return response

    async def engine_call(self, engine: str, params: dict[str, Any], ctx: ToolContext) -> ToolResponse:
        with speaking(self.vocabulary):
            return await run_engine_tool(engine, params, ctx)

    async def run(self, params: Any, ctx: ToolContext) -> ToolResponse:
        response = await self.engine_call(self.engine, self.to_engine(params), ctx)
        return self.render(response, params)


def drop_none(values: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


def not_supported(parameter: str, why: str) -> str:
    """The one way a profile says that a product's parameter asks for what the engine cannot do."""
    return f"(not supported here: {parameter} — {why})"


def with_notes(response: ToolResponse, notes: list[str]) -> ToolResponse:
    """``response`` with ``notes`` before its text (and listed in the metadata)."""
    if not notes:
        return response
    metadata = {**response.metadata, "profile_notes": notes}
    return ToolResponse("\n".join(notes) + "\n\n" + response.content, response.is_error, metadata, response.images)


# --- the plan and questions, as the engine's plan and question tools take them ---------------------


async def update_plan(tool: ProfileTool, items: list[dict[str, Any]], explanation: str | None,
                      ctx: ToolContext) -> ToolResponse:  # fmt: skip
    """Replace the session's plan with ``items`` (the engine plan tool's item shape)."""
    return await tool.engine_call("plan", drop_none({"todos": items, "explanation": explanation}), ctx)


async def ask_questions(tool: ProfileTool, questions: list[Question], ctx: ToolContext) -> ToolResponse:
    """Put ``questions`` to the user through the engine's question tool."""
    asked = [
        {
            "question": q.text, "header": q.header, "multi_select": q.multi_select,
            "options": [{"label": c.label, "description": c.description} for c in q.choices],
        }
        for q in questions
    ]  # fmt: skip
    return await tool.engine_call("question", {"questions": asked}, ctx)


# --- a page for a prompt: the host's model applies it, or the page comes back with it restated ------


async def fetch_for_prompt(
    tool: ProfileTool, url: str, prompt: str, ctx: ToolContext, offset: int = 0, *, offset_param: str = "offset"
) -> ToolResponse:
    """The page at ``url`` for ``prompt``. With the host's ``web_prompt`` (``Session(web_prompt=
    ...)``) its answer is the result; without, the page text from ``offset`` (a character
    position), with the prompt restated so the model applies it itself."""
    fetched = await tool.engine_call("fetch", {"url": url, "format": "markdown"}, ctx)
    if fetched.is_error:
        return fetched
    page = page_text(fetched)
    if ctx.web_prompt is not None:
        answer = await ctx.web_prompt(prompt, url, page)
        return ToolResponse(answer, metadata={**fetched.metadata, "prompt_applied": True})
    if offset > len(page):
        raise OffsetOutOfRange(f"{offset_param}={offset} is past the end of the page text ({len(page)} characters).")
    shown = page[offset : offset + WEB_PAGE_CHARS]
    header = (
        f"Prompt: {prompt}\n(No model runs inside this tool here: below is the page itself from {url}. "
        "Answer the prompt from it.)\n\n"
    )
    end = offset + len(shown)
    footer = f"\n\n(Page text continues: {len(page) - end} more characters. Use {offset_param}={end} to read on.)"
    text = header + shown + (footer if end < len(page) else "")
    return ToolResponse(text, metadata={**fetched.metadata, "prompt_applied": False, "page_chars": len(page)})


def page_text(fetched: ToolResponse) -> str:
    """The fetched page's whole text: the spill file when the response was cut, else the text."""
    path = fetched.metadata.get("full_output_path")
    if path:
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                return handle.read()
        except OSError:
            pass
    return fetched.content
