"""``toolsmith-mcp``: the command line that loads the config, checks what is safe to serve
(loopback or a bearer token), and serves over stdio or streamable HTTP."""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__
from .http_transport import DEFAULT_HOST, DEFAULT_PORT, HTTP_PATH, is_loopback, listen, serve_http_until_signalled
from .sdk import MISSING_SDK
from .server import MAX_SESSIONS, ONE_SHOT_IDLE_S, SESSION_IDLE_S, ToolsmithServer
from .stdio_transport import serve_stdio_until_signalled

if TYPE_CHECKING:
    from ..config import Config

#: --profile choices (llm/profiles.PROFILES).
MCP_PROFILES = ("default", "claude", "codex", "gemini")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="toolsmith-mcp", description="Serve the Toolsmith tools over MCP.")
    parser.add_argument("--cwd", default=".", help="workspace root (default: current directory)")
    parser.add_argument("--config", metavar="FILE", help="a config file read after the user's and the workspace's")
    parser.add_argument("--read-only", action="store_true", help="offer only tools that change nothing")
    # The names of llm/profiles' PROFILES, spelled out: the server imports no tool code before
    # a client's initialize (tests/test_profiles.py holds the two lists together).
    parser.add_argument(
        "--profile", choices=MCP_PROFILES, default="default", help="the tool shapes to offer (see docs/profiles.md)"
    )
    parser.add_argument("--no-lsp", action="store_true", help="do not start language servers for diagnostics")
    parser.add_argument("--audit-log", metavar="FILE", help="append one JSON line per tool call to FILE")
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"HTTP address to bind (default {DEFAULT_HOST})")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"HTTP port (default {DEFAULT_PORT}; 0: any)")
    parser.add_argument(
        "--allow-remote", action="store_true", help="allow binding a non-loopback address (requires a bearer token)"
    )
    parser.add_argument(
        "--session-idle", type=_positive_seconds, default=SESSION_IDLE_S, metavar="SECONDS",
        help=f"HTTP: close a session after this long without a call (default {SESSION_IDLE_S}; "
        f"one-shot sessions: at most {ONE_SHOT_IDLE_S})",
    )  # fmt: skip
    parser.add_argument(
        "--max-sessions", type=_at_least_one, default=MAX_SESSIONS, metavar="N",
        help=f"HTTP: at most N sessions at once (default {MAX_SESSIONS})",
    )  # fmt: skip
    parser.add_argument(
        "--token", help="bearer token every HTTP request must carry (or --token-file, or $TOOLSMITH_MCP_TOKEN)"
    )
    parser.add_argument("--token-file", metavar="FILE", help="read the bearer token from FILE")
    parser.add_argument(
        "--allowed-host", action="append", default=[], metavar="NAME",
        help="another Host name clients may use (repeatable; or $TOOLSMITH_MCP_ALLOWED_HOSTS, comma-separated)",
    )  # fmt: skip
    parser.add_argument("--version", action="store_true", help="print the version")
    return parser


def _positive_seconds(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text}")
    return value


def _at_least_one(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value



def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not args.http:
        http_only = [f"--{name}" for name in ("host", "port", "allow-remote") if _given(argv, f"--{name}")]
        if http_only:
            verb = "applies" if len(http_only) == 1 else "apply"
            options = " and ".join(http_only)
            parser.error(f"{options} {verb} only to HTTP: add --http (without it, the server speaks stdio)")
    if args.version:
        print(f"toolsmith-mcp {__version__}")
        return 0
    from ..audit import AuditLog
    from ..config import Config, ConfigError

    if MISSING_SDK is not None:
        sys.stderr.write(
            f"toolsmith-mcp: the MCP SDK is not installed in this Python ({sys.executable}; missing module "
            f"'{MISSING_SDK}'). Install the extra: pip install 'agent-toolsmith[mcp]' (a checkout's `make run` "
            "does).\n"
        )
        return 2
    workspace = Path(args.cwd)
    if not workspace.is_dir():
        sys.stderr.write(f"toolsmith-mcp: --cwd {args.cwd} is not a directory\n")
        return 2
    overrides: dict[str, Any] = {}
    if args.no_lsp:
        overrides["lsp_enabled"] = False
    try:
        config = Config.load(workspace, file=args.config, **overrides)
    except ConfigError as exc:
        sys.stderr.write(f"toolsmith-mcp: {exc}\n")
        return 2
    tokens = _tokens(args, config)
    if tokens is None:
        return 2
    if args.http and not is_loopback(args.host) and not (args.allow_remote and tokens):
        sys.stderr.write(
            f"toolsmith-mcp: refusing to listen on {args.host}: whoever reaches this server can run commands and "
            "change files. Bind 127.0.0.1 (the default), or pass --allow-remote with a bearer token (--token, "
            "--token-file, $TOOLSMITH_MCP_TOKEN or [mcp] token_file; at least 16 random characters).\n"
        )
        return 2
    audit_path = Path(args.audit_log).absolute() if args.audit_log else config.audit_log
    audit = AuditLog(audit_path, config.audit_redact_keys) if audit_path else None
    from ..state import StateDir, log_to_file

    log_to_file(StateDir(config.state_dir).directory() / "mcp.log", ("toolsmith", "mcp", "pygls"))
    server = ToolsmithServer(
        workspace, replace(config, audit_log=None), read_only=args.read_only, audit=audit,
        session_idle_s=args.session_idle, max_sessions=args.max_sessions, profile=args.profile,
    )  # fmt: skip
    try:
        if args.http:
            try:
                sock = listen(args.host, args.port)
            except OSError as exc:
                sys.stderr.write(f"toolsmith-mcp: cannot listen on {args.host}:{args.port}: {exc.strerror}\n")
                return 2
            host, port = sock.getsockname()[:2]
            shown = f"[{host}]" if ":" in host else host
            sys.stderr.write(f"toolsmith-mcp: serving {server.workspace} on http://{shown}:{port}{HTTP_PATH}\n")
            sys.stderr.flush()
            asyncio.run(
                serve_http_until_signalled(
                    server,
                    sock,
                    remote=not is_loopback(args.host),
                    tokens=tokens,
                    extra_hosts=[*args.allowed_host, *config.mcp_allowed_hosts],
                )
            )
        else:
            asyncio.run(serve_stdio_until_signalled(server))
    except KeyboardInterrupt:
        pass
    return 0


def _given(argv: list[str] | None, option: str) -> bool:
    words = sys.argv[1:] if argv is None else argv
    return any(word == option or word.startswith(option + "=") for word in words)



def _tokens(args: argparse.Namespace, config: Config) -> list[str] | None:
    """The bearer tokens from the flags, the environment or the config's ``[mcp] token_file``;
    None (after a message) when unusable."""
    from .http_guard import GuardConfigError, read_tokens

    token_file = args.token_file or (str(config.mcp_token_file) if config.mcp_token_file else None)
    try:
        if args.token or args.token_file:
            return read_tokens(args.token, token_file)
        return read_tokens(None, None) or read_tokens(None, token_file)
    except GuardConfigError as exc:
        sys.stderr.write(f"toolsmith-mcp: {exc}\n")
        return None


if __name__ == "__main__":
    sys.exit(main())
