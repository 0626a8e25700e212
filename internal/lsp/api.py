"""The LSP layer's seam for the lsp tool: what a session's diagnostics source must offer so the
tool can ask it about a file (on-demand diagnostics, navigation, rename).

A session's ``lsp`` is a DiagnosticsSource (diagnostics after view and edits). The lsp tool asks
more of it, and checks for that with ``isinstance(source, NavigationSource)``: the built-in
:class:`~.manager.LspManager` is one; an embedder's own source that offers only diagnostics is
not, and the tool says so instead of claiming language servers are disabled.

Light on purpose: the types used here are imported only for type checking, so checking a source
never loads pygls or lsprotocol.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from .diagnostics import Outcome
    from .servers import ServerConfig


class DiagnosticsSource(Protocol):
    """What tools need from the LSP layer. ``""`` means nothing worth appending."""

    async def after_view(self, path: Path) -> str: ...

    async def after_change(self, paths: list[Path]) -> str:
        """Errors in ``paths`` after a change, and in other files that gained errors with it."""
        ...

    async def close(self) -> None: ...

    def to_json(self) -> dict[str, Any]:
        """What to keep across CLI invocations (which servers are unavailable, until when)."""
        ...

    def load_json(self, data: Any) -> None: ...


@runtime_checkable
class KeepsOldTexts(Protocol):
    """A source that wants each changed file's content from before a commit (the session hands
    it over as the commit is made): what other files' diagnostics before the change are taken
    from, whatever the disk says by the time the change is diagnosed."""

    def remember_old_texts(self, changes: Mapping[Path, tuple[bytes | None, bytes]]) -> None:
        """``changes``: each written file's content before the commit (None: it is new) and after."""
        ...


class LspError(Exception):
    """A language server could not answer; the message says why, for the model to read.
    ``code`` is the JSON-RPC error code when the server answered with an error."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class NavigationServer(Protocol):
    """A running server that the lsp tool's requests go to (:class:`~.client.LspClient` is one)."""

    @property
    def config(self) -> ServerConfig: ...

    @property
    def encoding(self) -> str:
        """How the server counts columns: "utf-16" (the protocol's default), "utf-32" or "utf-8"."""
        ...

    @property
    def texts(self) -> dict[str, str]:
        """The text last sent to the server for each open document, by URI."""
        ...

    def supports(self, operation: str) -> bool:
        """Does the server offer ``operation`` (an lsp tool operation: definition, rename …)?"""
        ...

    def sync(self, path: Path, text: str, language_id: str) -> int:
        """Open ``path`` or send its new full text; returns the document version now current."""
        ...


ServerT = TypeVar("ServerT", bound=NavigationServer)


@runtime_checkable
class NavigationSource(Protocol[ServerT]):
    """What the lsp tool calls: a source of diagnostics that can also answer queries about a file.

    Failures to answer raise :class:`LspError` (the tool reports "The language server failed: …").
    """

    def servers_for(self, path: Path) -> list[ServerConfig]:
        """The servers configured and installed for ``path`` (none: the tool explains why)."""
        ...

    def missing_for(self, path: Path) -> list[str]:
        """Notes naming configured servers for ``path`` whose command is not installed."""
        ...

    async def diagnostics(self, path: Path) -> Outcome:
        """Every diagnostic for ``path`` now, waiting longer than after an edit."""
        ...

    async def navigate(self, path: Path, operation: str) -> tuple[ServerT, list[str]]:
        """A running server for ``path`` that supports ``operation``, synced with the file, and
        notes on the servers that are unavailable."""
        ...

    async def request(self, server: ServerT, name: str, params: Any) -> Any:
        """A request (``text_document_definition`` …, lsprotocol params) to ``server``."""
        ...
