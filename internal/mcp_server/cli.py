"""``toolsmith-mcp``: the command line that loads the config, checks what is safe to serve
(loopback or a bearer token), and serves over stdio or streamable HTTP."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__
from .http_limits import MAX_DEFAULT_WORKERS, MAX_SESSIONS, ONE_SHOT_IDLE_S, SESSION_IDLE_S
from .http_transport import DEFAULT_HOST, DEFAULT_PORT, HTTP_PATH, is_loopback, listen

if TYPE_CHECKING:
    from ..config import Config
    from ..llm.tools.contract import Tool
    from .server import ToolsmithServer

#: The modules of the optional SDK (sdk.py imports them), looked for here without importing
#: them: the HTTP front, which serves no MCP itself, never loads the SDK (~40 MB, ~0.5 s).
SDK_MODULES = ("mcp_types", "mcp")

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
    parser.add_argument(
        "--tools", action="append", default=[], metavar="MODULE:ATTR",
        help="also offer your own Python functions as tools: ATTR of MODULE, a function or a list of them "
        "(repeatable; the module is looked for in the current directory first; see docs/embedding.md)",
    )  # fmt: skip
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
        "--workers", type=_at_least_one, default=None, metavar="N",
        help=f"HTTP: serve sessions from N worker processes (default: one per core, at most {MAX_DEFAULT_WORKERS}; "
        "1: all in this process)",
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



@dataclass
class Prepared:
    """The command line, checked: what serving needs."""

    args: argparse.Namespace
    config: Config
    tokens: list[str]
    #: The embedder's tools (``--tools``), loaded here: a worker process prepares the same command
    #: line, so it loads the same tools.
    tools: list[Tool] = field(default_factory=list)

    def log_to_file(self) -> None:
        from ..state import StateDir, log_to_file

        log_to_file(StateDir(self.config.state_dir).directory() / "mcp.log", ("toolsmith", "mcp", "pygls"))

    def server(self, max_sessions: int | None = None) -> ToolsmithServer:
        from ..audit import AuditLog
        from .server import ToolsmithServer

        args, config = self.args, self.config
        audit_path = Path(args.audit_log).absolute() if args.audit_log else config.audit_log
        audit = AuditLog(audit_path, config.audit_redact_keys) if audit_path else None
        self.log_to_file()
        return ToolsmithServer(
            Path(args.cwd), replace(config, audit_log=None), read_only=args.read_only, audit=audit,
            session_idle_s=args.session_idle, max_sessions=max_sessions or args.max_sessions, profile=args.profile,
            tools=self.tools,
        )  # fmt: skip

    @property
    def extra_hosts(self) -> list[str]:
        return [*self.args.allowed_host, *self.config.mcp_allowed_hosts]


def prepare(argv: list[str] | None) -> Prepared | int:
    """Parse and check the command line and the config; an exit status when it cannot serve."""
    parser = _parser()
    args = parser.parse_args(argv)
    if not args.http:
        http_only = [f"--{name}" for name in ("host", "port", "allow-remote", "workers") if _given(argv, f"--{name}")]
        if http_only:
            verb = "applies" if len(http_only) == 1 else "apply"
            options = " and ".join(http_only)
            parser.error(f"{options} {verb} only to HTTP: add --http (without it, the server speaks stdio)")
    if args.version:
        print(f"toolsmith-mcp {__version__}")
        return 0
    from ..config import Config, ConfigError

    missing = _missing_sdk()
    if missing is not None:
        sys.stderr.write(
            f"toolsmith-mcp: the MCP SDK is not installed in this Python ({sys.executable}; missing module "
            f"'{missing}'). Install the extra: pip install 'agent-toolsmith[mcp]' (a checkout's `make run` "
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
    tools = _function_tools(args.tools)
    if tools is None:
        return 2
    if args.http and not is_loopback(args.host) and not (args.allow_remote and tokens):
        sys.stderr.write(
            f"toolsmith-mcp: refusing to listen on {args.host}: whoever reaches this server can run commands and "
            "change files. Bind 127.0.0.1 (the default), or pass --allow-remote with a bearer token (--token, "
            "--token-file, $TOOLSMITH_MCP_TOKEN or [mcp] token_file; at least 16 random characters).\n"
        )
        return 2
    return Prepared(args, config, tokens, tools)


def main(argv: list[str] | None = None) -> int:
    prepared = prepare(argv)
    if isinstance(prepared, int):
        return prepared
    try:
        if prepared.args.http:
            return _serve_http(prepared, argv)
        from .stdio_transport import serve_stdio_until_signalled

        asyncio.run(serve_stdio_until_signalled(prepared.server()))
    except KeyboardInterrupt:
        pass
    return 0


def _serve_http(prepared: Prepared, argv: list[str] | None) -> int:
    from .http_transport import serve_http, serve_http_workers, until_signalled

    args = prepared.args
    try:
        sock = listen(args.host, args.port)
    except OSError as exc:
        sys.stderr.write(f"toolsmith-mcp: cannot listen on {args.host}:{args.port}: {exc.strerror}\n")
        return 2
    workers = min(args.workers or min(os.cpu_count() or 1, MAX_DEFAULT_WORKERS), args.max_sessions)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    where = Path(os.path.realpath(args.cwd))
    sys.stderr.write(f"toolsmith-mcp: serving {where} on http://{shown}:{port}{HTTP_PATH}\n")
    sys.stderr.flush()
    remote = not is_loopback(args.host)
    if workers == 1:
        server = prepared.server()
        asyncio.run(until_signalled(lambda stop: serve_http(
            server, sock, remote=remote, stop=stop, tokens=prepared.tokens, extra_hosts=prepared.extra_hosts,
        )))  # fmt: skip
        return 0
    prepared.log_to_file()
    spec = {"argv": sys.argv[1:] if argv is None else argv, "tokens": prepared.tokens, "host": host,
            "remote": remote, "total": args.max_sessions}  # fmt: skip
    asyncio.run(until_signalled(lambda stop: serve_http_workers(
        sock, spec, workers=workers, total=args.max_sessions, stop=stop,
    )))  # fmt: skip
    return 0


def worker_main(fd: str) -> int:
    """A worker process of ``toolsmith-mcp --http`` (http_workers): its spec, from the front on
    descriptor ``fd``, is the front's command line and what the front resolved (tokens, its share)."""
    from .http_transport import worker_app
    from .http_workers import read_spec, serve_from_front

    sock, spec = read_spec(int(fd))
    prepared = prepare(list(spec["argv"]))
    if isinstance(prepared, int):
        return prepared
    index, share = int(spec["index"]), int(spec["share"])
    server = prepared.server(max_sessions=share)
    worker = worker_app(
        server, str(spec["host"]), index=index, share=share, total=int(spec["total"]), remote=bool(spec["remote"]),
        tokens=list(spec["tokens"]), extra_hosts=prepared.extra_hosts,
    )  # fmt: skip
    worker.hand_back.workers = int(spec["workers"])
    serve_from_front(worker, sock)
    return 0


def _missing_sdk() -> str | None:
    import importlib.util

    for name in SDK_MODULES:
        try:
            if importlib.util.find_spec(name) is None:
                return name
        except (ImportError, ValueError):  # a module set to None in sys.modules cannot be imported
            return name
    return None


def _given(argv: list[str] | None, option: str) -> bool:
    words = sys.argv[1:] if argv is None else argv
    return any(word == option or word.startswith(option + "=") for word in words)



def _function_tools(specs: list[str]) -> list[Tool] | None:
    """The tools ``--tools`` names (function_tools.load_tools), imported before serving; None
    (after a message) when one cannot be loaded. A worker process loads them the same way from
    the same command line."""
    if not specs:
        return []
    from ..llm.tools.function_tools import load_tools

    tools: list[Tool] = []
    for spec in specs:
        try:
            tools += load_tools(spec)
        except (ValueError, TypeError) as exc:
            sys.stderr.write(f"toolsmith-mcp: {exc}\n")
            return None
        except Exception as exc:  # the module's own code failed while it was imported
            sys.stderr.write(f"toolsmith-mcp: --tools {spec!r}: importing it raised {type(exc).__name__}: {exc}\n")
            return None
    names = [tool.name for tool in tools]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        sys.stderr.write(f"toolsmith-mcp: --tools: two tools are named {twice[0]!r}\n")
        return None
    return tools


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
