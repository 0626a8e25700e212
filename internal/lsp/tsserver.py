"""tsserver's own diagnostics, asked through typescript-language-server's documented
``typescript.tsserverRequest`` command.

typescript-language-server sends no versions and nothing at all when a clean file stays clean,
and its first report after a change is often the syntactic one alone (the semantic one follows).
Asked directly, tsserver answers in order after the change, for the text just sent, with both
kinds: an answer that means this version.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..fsutil.uris import uri_to_path
from ..logs import logger
from .api import LspError
from .diagnostics import Diag
from .positions import to_char

if TYPE_CHECKING:
    from .connection import ServerConnection

log = logger("toolsmith.lsp")

TSSERVER_COMMAND = "typescript.tsserverRequest"
TSSERVER_DIAGNOSTICS = ("syntacticDiagnosticsSync", "semanticDiagnosticsSync")
TSSERVER_SEVERITY = {"error": 1, "warning": 2, "suggestion": 4, "message": 3}


def offers_tsserver_requests(capabilities: Any) -> bool:
    commands = getattr(getattr(capabilities, "execute_command_provider", None), "commands", None) or ()
    return TSSERVER_COMMAND in commands


async def tsserver_diagnostics(server: ServerConnection, uri: str, text: str, timeout: float) -> list[Diag] | None:
    """tsserver's syntactic and semantic diagnostics for ``uri`` (whose text the server has is
    ``text``) now; None when it did not answer in time or answered something else."""
    from lsprotocol import types

    path = str(uri_to_path(uri))
    deadline = time.monotonic() + timeout
    lines = text.split("\n")
    out: list[Diag] = []
    for command in TSSERVER_DIAGNOSTICS:
        params = types.ExecuteCommandParams(command=TSSERVER_COMMAND, arguments=[command, {"file": path}])
        try:
            answer = await server.call("workspace/executeCommand", params, max(deadline - time.monotonic(), 0.01))
        except LspError as exc:
            log.info("%s: %s for %s: %s", server.config.name, command, path, exc)
            return None
        body = answer.get("body") if isinstance(answer, dict) else None
        if not isinstance(body, list):
            return None
        out += [_diag(item, lines) for item in body if isinstance(item, dict)]
    return out


def _diag(item: dict[str, Any], lines: list[str]) -> Diag:
    start = item.get("start") or {}
    line, offset = int(start.get("line", 1)) - 1, int(start.get("offset", 1)) - 1
    if 0 <= line < len(lines):
        offset = to_char(lines[line], offset, "utf-16")  # tsserver counts UTF-16 units
    code = item.get("code")
    return Diag(
        line=line,
        character=offset,
        severity=TSSERVER_SEVERITY.get(str(item.get("category")), 1),
        message=str(item.get("text", "")),
        source="typescript",
        code=str(code) if code is not None else None,
    )
