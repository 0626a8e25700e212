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


class DeclarationError(ValueError):
    """Tools that cannot be declared to a provider: its own check (:func:`check_declaration`)
    rejects what the export would print. The message names each tool and what breaks the rule."""


def declarations(provider: str, tools: Iterable[ToolInfo], *, strict: bool = False) -> list[dict[str, Any]]:
    """The value of the request's ``tools`` field for ``provider``. ``strict`` (Anthropic) marks
    each tool whose schema strict tool use can express ``strict: true`` (see anthropic_strict.py;
    OpenAI's strict mode is chosen per tool always). Raises :class:`DeclarationError` rather than
    return a declaration the provider's rules reject."""
    module = _module(provider)
    result: list[dict[str, Any]] = (
        module.declarations(list(tools), strict=strict) if provider == "anthropic" else module.declarations(list(tools))
    )
    problems = [problem for declared in result for problem in _named(declared, module.check(declared))]
    if problems:
        raise DeclarationError(
            f"these tools cannot be declared to {provider}: " + "; ".join(problems) + ". Offer them with another "
            "profile (the default profile's tools declare to every provider), or leave these tools out."
        )
    return result


def _named(declared: dict[str, Any], problems: list[str]) -> list[str]:
    """``problems`` each prefixed with the tool's name where the check did not name it."""
    name = declared.get("name") or (declared.get("function") or {}).get("name")
    return [problem if not name or problem.startswith(f"{name}:") else f"{name}: {problem}" for problem in problems]


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


__all__ = [
    "PROVIDERS", "DeclarationError", "ToolCall", "check_declaration", "declarations", "parse_tool_call",
    "tool_result_for",
]  # fmt: skip
