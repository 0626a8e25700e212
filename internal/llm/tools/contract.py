"""The tool contract: what a tool is and what it returns.

A tool module defines one :class:`Tool` subclass (``name``, ``description``, ``Params``, ``run``)
and ``TOOL``; front doors describe it with :class:`ToolInfo` and get a :class:`ToolResponse`
back. What a call gets is :class:`~.context.ToolContext` (context.py); which tools a session
offers is the registry (builtins.py, registry.py); running one is runner.py.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from ...lsp.api import DiagnosticsSource
from .params import schema_for

__all__ = [
    "DiagnosticsSource", "FileAttachment", "ImageAttachment", "Progress", "Tool", "ToolInfo", "ToolResponse", "ToolSet",
]  # fmt: skip


@dataclass(frozen=True)
class ImageAttachment:
    media_type: str
    data_base64: str


@dataclass(frozen=True)
class FileAttachment:
    """A file handed to the user (the attach tool): a document or a log. Its content rides
    along when small enough — ``text`` for a text file (decoded), ``data_base64`` for a PDF —
    and otherwise it is a link (``uri``) alone. Images travel as :class:`ImageAttachment`."""

    name: str
    media_type: str
    #: The file's ``file://`` URI (on the machine the tools run on).
    uri: str
    size: int
    text: str | None = None
    data_base64: str | None = None

    @property
    def embedded(self) -> bool:
        return self.text is not None or self.data_base64 is not None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "media_type": self.media_type, "uri": self.uri, "size": self.size}
        if self.text is not None:
            out["text"] = self.text
        if self.data_base64 is not None:
            out["data"] = self.data_base64
        return out


@dataclass
class ToolResponse:
    """``content`` is what the model reads; ``metadata`` is for UIs and logs; ``images`` and
    ``files`` are attachments (each front door carries them as its format allows)."""

    content: str
    is_error: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    images: list[ImageAttachment] = field(default_factory=list)
    files: list[FileAttachment] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"content": self.content, "is_error": self.is_error, "metadata": self.metadata}
        if self.images:
            out["images"] = [{"media_type": i.media_type, "data": i.data_base64} for i in self.images]
        if self.files:
            out["files"] = [f.to_json() for f in self.files]
        return out


@dataclass(frozen=True)
class ToolInfo:
    """What a front door declares about a tool: the model's name, description and JSON Schema,
    and hints for hosts (MCP's tool annotations)."""

    name: str
    description: str
    parameters: dict[str, Any]
    read_only: bool
    title: str = ""
    #: Reaches beyond the workspace: the network (fetch), or any program (bash, custom tools).
    open_world: bool = False
    #: May overwrite or delete what is there (only meaningful when not read-only).
    destructive: bool = False
    #: Calling again with the same arguments changes nothing more.
    idempotent: bool = False
    #: A Lark grammar for the tool's one free-form input (its single string parameter), for
    #: providers that take free-form tools (OpenAI Responses ``custom`` tools); None for most.
    grammar: str | None = None


Progress = Callable[[str, dict[str, Any]], None]


class ToolSet(Protocol):
    """The tools a session offers, by name (registry.ToolRegistry; builtins.BuiltinTools)."""

    def names(self) -> list[str]: ...

    def get(self, name: str) -> Tool:
        """The tool called ``name``; ``KeyError`` when the session offers none."""
        ...

    def tools(self) -> list[Tool]: ...


class Tool(ABC):
    """A tool module defines one subclass: ``name``, ``description``, ``Params`` and ``run``.
    (Custom tools set ``name`` and ``description`` per instance; function tools, see
    function_tools.py, ``Params`` and ``read_only`` too.)"""

    name: str
    description: str
    #: A short human label (MCP hosts show it); defaults to the name.
    title: str = ""
    Params: type
    read_only: bool = False
    #: How to use the tool, beyond its description's first paragraph: a custom tool's ``.md``
    #: body, a function's docstring after its summary (``Session.prompt_section`` shows it).
    guidance: str = ""
    #: Offered in read-only sessions although it can write (lsp: navigation, and rename): its
    #: writes ask for action "write", which read-only sessions refuse.
    offered_read_only: ClassVar[bool] = False
    #: Reaches beyond the workspace (the network, or any program): MCP's ``openWorldHint``.
    open_world: ClassVar[bool] = False
    #: Calling again with the same arguments changes nothing more; None: as ``read_only`` says (a
    #: read-only tool whose calls consume something, like job_output's delta, sets False).
    idempotent: ClassVar[bool | None] = None
    #: See ToolInfo.grammar.
    grammar: ClassVar[str | None] = None
    #: False when ``run`` never waits for an event loop, given no language server: its blocking
    #: work goes through ``cancel.in_thread``, which runs it in place when no loop runs. The CLI
    #: then runs one call of it without importing asyncio (event_loop.py).
    needs_event_loop: ClassVar[bool] = True

    def in_read_only_sessions(self) -> bool:
        return self.read_only or self.offered_read_only

    def info(self) -> ToolInfo:
        return ToolInfo(
            self.name,
            self.description,
            schema_for(self.Params),
            self.read_only,
            title=self.title or self.name,
            open_world=self.open_world,
            destructive=not self.read_only,
            idempotent=self.read_only if self.idempotent is None else self.idempotent,
            grammar=self.grammar,
        )

    @abstractmethod
    async def run(self, params: Any, ctx: Any) -> ToolResponse:
        """Run one call. ``ctx`` is the session's :class:`~.context.ToolContext`; a tool names in
        its own signature the narrow part of it that it uses (see context.py)."""
