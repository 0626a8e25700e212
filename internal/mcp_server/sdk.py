"""The optional ``mcp`` SDK (the ``mcp`` extra), imported in one place: ``MISSING_SDK`` names the
missing module when it is not installed, so the command line can say how to install it instead
of failing at import."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import mcp_types as types
    from mcp.server import Server, ServerRequestContext
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    MISSING_SDK: str | None
else:
    try:
        import mcp_types as types
        from mcp.server import Server, ServerRequestContext
        from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
    except ModuleNotFoundError as missing:  # the optional `mcp` extra; main() says how to install it
        MISSING_SDK = missing.name
        # The modules that import these names use them only when serving, which main() never
        # reaches without the SDK; at import they appear in annotations alone (not evaluated).
        types = Server = ServerRequestContext = HANDSHAKE_PROTOCOL_VERSIONS = None
    else:
        MISSING_SDK = None

__all__ = ["HANDSHAKE_PROTOCOL_VERSIONS", "MISSING_SDK", "Server", "ServerRequestContext", "types"]
