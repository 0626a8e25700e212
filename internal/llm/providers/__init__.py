"""Provider formats: each tool's one schema declared the way a model API takes it, a
:class:`ToolResponse` turned into that API's tool-result block, and that API's tool call turned
into ours.

    tools = declarations("anthropic", session.tools())          # the request's "tools"
    call = parse_tool_call("anthropic", block)                   # a tool_use block
    response = await session.run(call.name, call.arguments)
    result = tool_result_for("anthropic", response, call)        # a tool_result block

Providers: ``anthropic`` (Messages API), ``openai`` (Responses API), ``openai-chat`` (Chat
Completions), ``gemini`` (Gemini API ``functionDeclarations``). :func:`check_declaration` says
what in a declaration breaks that provider's rules (the tests hold every export to it).
"""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType
from typing import Any

from ..tools.contract import ToolInfo, ToolResponse
from .calls import ToolCall

PROVIDERS = ("anthropic", "openai", "openai-chat", "gemini")


def _module(provider: str) -> ModuleType:
    from . import anthropic, gemini, openai_chat, openai_responses

    modules = {"anthropic": anthropic, "openai": openai_responses, "openai-chat": openai_chat, "gemini": gemini}
    if provider not in modules:
        raise ValueError(f"unknown provider {provider!r}: use one of {', '.join(PROVIDERS)}")
    return modules[provider]


def declarations(provider: str, tools: Iterable[ToolInfo]) -> list[dict[str, Any]]:
    """The value of the request's ``tools`` field for ``provider``."""
    result: list[dict[str, Any]] = _module(provider).declarations(list(tools))
    return result


def tool_result_for(provider: str, response: ToolResponse, call: ToolCall) -> dict[str, Any]:
    """The block that carries ``response`` back to the model as the answer to ``call``:
    Anthropic a ``tool_result`` content block, OpenAI Responses a ``function_call_output``
    item, Chat Completions a ``tool`` message, Gemini a ``functionResponse`` part."""
    result: dict[str, Any] = _module(provider).tool_result(response, call)
    return result


def parse_tool_call(provider: str, item: dict[str, Any]) -> ToolCall:
    """A provider's tool call (a ``tool_use`` block, a ``function_call`` item, one of a
    message's ``tool_calls``, a ``functionCall`` part) as a :class:`ToolCall`. ValueError when
    ``item`` is not one."""
    call: ToolCall = _module(provider).parse_call(item)
    return call


def check_declaration(provider: str, declaration: dict[str, Any]) -> list[str]:
    """What in one exported declaration breaks ``provider``'s published rules ([] when none)."""
    problems: list[str] = _module(provider).check(declaration)
    return problems


__all__ = ["PROVIDERS", "ToolCall", "check_declaration", "declarations", "parse_tool_call", "tool_result_for"]
