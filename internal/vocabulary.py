"""The words a call's messages use: the tool and parameter names of the shapes the model sees.

A profile (llm/profiles) offers the engine's tools under a product's names: claude's ``Read`` is
the engine's ``view`` with a 1-based ``offset``. Whatever builds a message the model reads (an
error, a hint, a footer, a job notice) asks this module for the names instead of writing
``view`` into prose: ``tool_name("view")`` is ``Read`` while a claude tool runs and ``view``
otherwise. The profile tool sets its :class:`Vocabulary` around the engine call (a context
variable, so concurrent calls of two sessions never see each other's words); the engine's own
words are the default. Content is never rewritten afterwards: a file line that mentions
``offset=5`` reads back as it is.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

__all__ = [
    "ENGINE", "Vocabulary", "background_hint", "current", "edits_need_read", "has_tool", "line_number", "param_name",
    "set_flag", "speaking", "tool_name",
]  # fmt: skip


@dataclass(frozen=True)
class Vocabulary:
    """One profile's words. ``tools`` maps an engine tool to the profile's tool that offers it
    (absent: the profile has no such tool); ``params`` maps (engine tool, engine parameter) to
    the profile's parameter; ``one_based`` names the (engine tool, parameter) pairs whose values
    the profile counts from 1 where the engine counts from 0 (view's ``offset``)."""

    name: str = "default"
    tools: Mapping[str, str] | None = None
    params: Mapping[tuple[str, str], str] = field(default_factory=dict)
    one_based: frozenset[tuple[str, str]] = frozenset()
    #: False where the product never asks for a read before an edit (Codex's apply_patch, Gemini
    #: CLI's replace): the change pipeline then treats an unread file like one read just now.
    edits_need_read: bool = True
    #: Engine parameters the profile's tools do not offer (claude's Grep has no literal_text).
    lacks: frozenset[tuple[str, str]] = frozenset()
    #: How this profile keeps a long command running and reads its output (see background_hint),
    #: where its tools do it another way than a flag and a job reader.
    background: str | None = None


#: The engine's own words (no profile).
ENGINE = Vocabulary()

_CURRENT: ContextVar[Vocabulary] = ContextVar("toolsmith_vocabulary", default=ENGINE)


def current() -> Vocabulary:
    return _CURRENT.get()


@contextmanager
def speaking(vocabulary: Vocabulary) -> Iterator[None]:
    """Messages built inside this block use ``vocabulary``'s words."""
    token = _CURRENT.set(vocabulary)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def has_tool(engine_tool: str) -> bool:
    """Whether the model sees a tool that does what ``engine_tool`` does."""
    tools = current().tools
    return tools is None or engine_tool in tools


def tool_name(engine_tool: str) -> str:
    """The name the model knows ``engine_tool`` by (the engine's name when it has no other)."""
    tools = current().tools
    return engine_tool if tools is None else tools.get(engine_tool, engine_tool)


def param_name(engine_tool: str, param: str) -> str:
    return current().params.get((engine_tool, param), param)


def set_flag(engine_tool: str, param: str, purpose: str = "") -> str:
    """", or set P to true<purpose>" when the model's tool has the engine's flag ``param``; ""
    when it does not (the hint would name a parameter the model cannot send)."""
    if (engine_tool, param) in current().lacks:
        return ""
    return f", or set {param_name(engine_tool, param)} to true{purpose}"


def line_number(engine_tool: str, param: str, value: int) -> int:
    """``value`` (the engine's count, from 0) as the model's tool counts it."""
    return value + 1 if (engine_tool, param) in current().one_based else value


def edits_need_read() -> bool:
    return current().edits_need_read


def background_hint() -> str:
    """How the model keeps a long command running and reads it, in its tools' words: the end of a
    sentence ("To let a long command keep running, ...")."""
    words = current()
    if words.background is not None:
        return words.background
    flag = param_name("bash", "run_in_background")
    return f"start it with {flag}: true and read its output with {tool_name('job_output')}."
