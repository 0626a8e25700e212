"""Per-session settings, and the config files that set them.

Every limit a tool enforces has its default here or beside its code. :meth:`Config.load` layers,
later over earlier: the defaults, the user's ``$XDG_CONFIG_HOME/toolsmith/config.toml``, the
workspace's ``.toolsmith/config.toml``, then an explicit file (the CLI's ``--config``). Files are
read with :mod:`tomllib`; an unknown key or a wrong type is a :class:`ConfigError` naming the
file, the key and what was expected — never silently ignored. A few keys grant what only the
user may grant (:data:`USER_ONLY_KEYS`): the workspace's own file cannot set them — a
cloned repository does not get to replace the built-in tools (or the ``rg`` they run) with its
own programs — and what it asked for is kept (``Config.workspace_refused``) to be named in
``--list`` and the log.

Keys mirror the fields below; sections group some of them::

    max_output_lines = 2000
    allowed_dirs = ["../shared-fixtures"]      # relative paths: from the workspace root
    [edit]
    syntax_gate = "refuse"                   # or "warn", "off"
    [lsp]
    enabled = true
    [lsp.servers.basedpyright]
    settings = { "basedpyright.analysis" = { typeCheckingMode = "strict" } }
    [lsp.servers.mylang]
    command = ["mylang-lsp", "--stdio"]
    extensions = [".ml"]
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config_file import (
    DEFAULT_PROTECTED_DIRS,
    USER_ONLY_KEYS,
    WORKSPACE_CONFIG,
    ConfigError,
    check_lsp_servers,
    merge_layer,
    read_config_file,
    take_user_only,
)

#: Default bound on any tool's text: lines and bytes (SPEC §2).
DEFAULT_MAX_OUTPUT_LINES = 2000
DEFAULT_MAX_OUTPUT_BYTES = 50 * 1024
#: Seconds without a tool call after which a session's language servers stop (Config.lsp_idle_s).
DEFAULT_LSP_IDLE_S = 5 * 60
#: Background jobs running at once in one session (``[bash] max_jobs``).
DEFAULT_MAX_JOBS = 16

#: How long a CLI session's host process waits for a call before it exits (seconds; see
#: internal/session_host/ and docs/cli-session-host.md).
DEFAULT_SESSION_HOST_IDLE_S = 600

#: The environment variable that moves the state directory.
STATE_DIR_ENV = "TOOLSMITH_STATE_DIR"
#: Where a workspace keeps its custom tools, relative to its root (see llm/tools/custom.py).
WORKSPACE_TOOLS_DIR = Path(".toolsmith") / "tools"


def default_state_dir() -> Path:
    """Where CLI sessions keep their state and tools spill full outputs.

    ``$TOOLSMITH_STATE_DIR``, else ``$XDG_STATE_HOME/toolsmith``, else ``~/.local/state/toolsmith``.
    """
    explicit = os.environ.get(STATE_DIR_ENV)
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "state"
    return base / "toolsmith"


def user_config_dir() -> Path:
    """``$XDG_CONFIG_HOME/toolsmith``, else ``~/.config/toolsmith``."""
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg) if xdg else Path.home() / ".config"
    return base / "toolsmith"


def user_config_file() -> Path:
    return user_config_dir() / "config.toml"


def user_tools_dir() -> Path:
    """The user's custom tools, offered in every workspace."""
    return user_config_dir() / "tools"


def skill_tiers(workspace: Path, extra: list[Path], home: Path | None = None) -> list[Path]:
    """The directories skills are found in, in the order skills.discover reads them (``extra``:
    the config's ``skill_paths``). Here rather than in skills.py: every call's readable roots
    include them, few calls read a skill."""
    home = home or Path.home()
    return [
        home / ".agents" / "skills",
        home / ".config" / "toolsmith" / "skills",
        workspace / ".claude" / "skills",
        workspace / ".agents" / "skills",
        *extra,
    ]


@dataclass
class Config:
    """Settings shared by all tools of a session."""

    max_output_lines: int = DEFAULT_MAX_OUTPUT_LINES
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    #: Mutating tools must stay inside the workspace (or ``allowed_dirs``) when true.
    confine_writes: bool = True
    #: Directories outside the workspace that tools may change and read without asking
    #: (relative ones are taken from the workspace root).
    allowed_dirs: list[Path] = field(default_factory=list)
    protected_dirs: list[str] = field(default_factory=lambda: list(DEFAULT_PROTECTED_DIRS))
    state_dir: Path = field(default_factory=default_state_dir)
    #: Path to an ``rg`` binary; ``None`` finds the one from the ripgrep wheel, then PATH. Only the
    #: user sets it (see USER_ONLY_KEYS): grep, glob and ls run it, in read-only sessions too.
    rg_path: str | None = None
    #: Feed language-server diagnostics back after view and edits.
    lsp_enabled: bool = True
    #: Language servers by name, merged over the defaults (see internal/lsp/servers.py).
    lsp_servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Start language servers for view too. The one-shot CLI turns this off: a process that
    #: exits after one call would start a server only to discard it (edits still start one).
    lsp_on_view: bool = True
    #: A session's language servers stop after this many seconds without a tool call, and start
    #: again on demand (0: never stopped for idleness). Long-lived front doors (MCP, embedding)
    #: would otherwise keep them running for sessions a client abandoned.
    lsp_idle_s: int = DEFAULT_LSP_IDLE_S
    #: Extra skill directories, searched after the default tiers.
    skill_paths: list[Path] = field(default_factory=list)
    #: User-Agent for fetch.
    user_agent: str = "toolsmith/0.1 (+coding-agent fetch tool)"
    #: Refuse fetches to private/loopback addresses (off by default; see README).
    block_private_networks: bool = False
    #: Hosts fetch may reach even with the guard on (a local docs server, say).
    fetch_allowed_hosts: list[str] = field(default_factory=list)
    #: Run bash commands inside bubblewrap (see internal/shell/sandbox.py).
    bash_sandbox: bool = False
    #: Let sandboxed commands use the network.
    bash_network: bool = False
    #: Background jobs (bash ``run_in_background``) running at once in one session; one more is
    #: refused with the list (see internal/shell/jobs.py, docs/jobs.md).
    max_jobs: int = DEFAULT_MAX_JOBS
    #: Offer the executables in ``<workspace>/.toolsmith/tools/`` and the user's tools directory
    #: as tools (see internal/llm/tools/custom.py).
    custom_tools: bool = True
    #: Built-in tools a custom tool of the same name may replace; any other clash is refused. Only
    #: the user sets it (their config file, ``--config``, the API): see USER_ONLY_KEYS.
    tools_override: list[str] = field(default_factory=list)
    #: What the workspace's own ``.toolsmith/config.toml`` set among USER_ONLY_KEYS (TOML key →
    #: value): never obeyed, kept so that ``--list`` and the log name the request (set by :meth:`load`).
    workspace_refused: dict[str, Any] = field(default_factory=dict)
    #: Tools set for this session by the user (the CLI's ``--tool NAME=PATH``, or the API): a
    #: name → an executable adds it as a custom tool, replacing any tool of that name, built-ins
    #: included; a name → None removes that tool (see llm/tools/custom.py).
    tool_programs: dict[str, Path | None] = field(default_factory=dict)
    #: What edit, multiedit, patch, write and symbol_edit do when a change would leave a file
    #: that parsed cleanly unparseable: "refuse", "warn" (apply and name the errors) or "off"
    #: (see docs/structure.md).
    syntax_gate: str = "refuse"
    #: Where to append one JSON line per tool call (see internal/audit.py); ``None``: no audit log.
    audit_log: Path | None = None
    #: Parameter keys whose values the audit log replaces with "[redacted]", beside the defaults.
    audit_redact_keys: list[str] = field(default_factory=list)
    #: Seconds without a call after which a CLI ``--session`` host process exits.
    session_host_idle_s: int = DEFAULT_SESSION_HOST_IDLE_S
    #: MCP over HTTP: a file holding the bearer token(s), and extra Host names clients may use
    #: (see internal/mcp_server/http_guard.py and docs/security.md).
    mcp_token_file: Path | None = None
    mcp_allowed_hosts: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.syntax_gate not in ("refuse", "warn", "off"):
            raise ConfigError(f'Config(syntax_gate=...) must be "refuse", "warn" or "off", got {self.syntax_gate!r}.')
        if self.lsp_servers:
            self.lsp_servers = check_lsp_servers(self.lsp_servers, "Config(lsp_servers=...)")

    @classmethod
    def load(
        cls,
        workspace: str | os.PathLike[str],
        *,
        file: str | os.PathLike[str] | None = None,
        user: bool = True,
        **overrides: Any,
    ) -> Config:
        """Defaults, then the user's config file, the workspace's, ``file``, then ``overrides``."""
        root = Path(os.path.realpath(workspace))
        values: dict[str, Any] = {}
        layers = [(user_config_file(), False)] if user else []
        layers.append((root / WORKSPACE_CONFIG, False))
        if file is not None:
            layers.append((Path(file), True))
        for path, required in layers:
            if not required and not path.is_file():
                continue
            layer = read_config_file(path, root)
            if path == root / WORKSPACE_CONFIG and not required and (refused := take_user_only(layer, values)):
                values["workspace_refused"] = refused
            merge_layer(values, layer)
        values.update(overrides)
        return cls(**values)


__all__ = [
    "DEFAULT_PROTECTED_DIRS", "USER_ONLY_KEYS", "WORKSPACE_CONFIG", "Config", "ConfigError", "check_lsp_servers",
    "read_config_file",
]  # fmt: skip
