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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from .errors import describe_value
from .fsutil.paths import from_workspace

#: Default bound on any tool's text: lines and bytes (SPEC §2).
DEFAULT_MAX_OUTPUT_LINES = 2000
DEFAULT_MAX_OUTPUT_BYTES = 50 * 1024
#: Seconds without a tool call after which a session's language servers stop (Config.lsp_idle_s).
DEFAULT_LSP_IDLE_S = 5 * 60
#: Background jobs running at once in one session (``[bash] max_jobs``).
DEFAULT_MAX_JOBS = 16

#: Never written by a mutating tool. A bare name is protected at any depth (``sub/.git/config``
#: too); an entry with a ``/`` is a path, relative to the workspace unless absolute. ``.git``
#: holds hooks and config that run commands; ``.toolsmith`` configures language-server commands
#: and custom tools.
DEFAULT_PROTECTED_DIRS: tuple[str, ...] = (".git", ".toolsmith")

#: How long a CLI session's host process waits for a call before it exits (seconds; see
#: internal/session_host/ and docs/cli-session-host.md).
DEFAULT_SESSION_HOST_IDLE_S = 600

#: The environment variable that moves the state directory.
STATE_DIR_ENV = "TOOLSMITH_STATE_DIR"
#: The workspace's config file, relative to its root.
WORKSPACE_CONFIG = Path(".toolsmith") / "config.toml"
#: Where a workspace keeps its custom tools, relative to its root (see llm/tools/custom.py).
WORKSPACE_TOOLS_DIR = Path(".toolsmith") / "tools"


class ConfigError(ValueError):
    """A config file or a ``Config(...)`` argument is invalid. The message names where and what."""


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
            if path == root / WORKSPACE_CONFIG and not required and (refused := _take_user_only(layer, values)):
                values["workspace_refused"] = refused
            _merge(values, layer)
        values.update(overrides)
        return cls(**values)


# --- the file format --------------------------------------------------------------------------


def _expect_int(minimum: int) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _Wrong(f"an integer >= {minimum}")
        if value < minimum:
            raise _Wrong(f"an integer >= {minimum}", f"{value}")
        return value

    return check


def _expect_bool(value: Any) -> Any:
    if not isinstance(value, bool):
        raise _Wrong("true or false")
    return value


def _expect_str(value: Any) -> Any:
    if not isinstance(value, str):
        raise _Wrong("a string")
    return value


def _expect_choice(*choices: str) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if value not in choices:
            raise _Wrong(" or ".join(f'"{c}"' for c in choices), repr(value) if isinstance(value, str) else None)
        return value

    return check


def _expect_strs(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _Wrong("a list of strings")
    return list(value)


def _expect_table(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Wrong("a table")
    return dict(value)


class _Wrong(Exception):
    def __init__(self, expected: str, got: str | None = None) -> None:
        super().__init__(expected)
        self.expected = expected
        self.got = got


class _Key(NamedTuple):
    """What one TOML key sets: the Config field, how its value is checked, whether it holds paths.
    (A NamedTuple: a dataclass would cost every start-up, config file or not, half a millisecond.)"""

    field: str
    check: Callable[[Any], Any]
    #: "path" / "paths": strings made into paths, relative ones from the workspace root.
    paths: str = ""


#: Dotted TOML key → Config field. A dotted prefix of a key is a section (``[lsp]``).
CONFIG_KEYS: dict[str, _Key] = {
    "max_output_lines": _Key("max_output_lines", _expect_int(1)),
    "max_output_bytes": _Key("max_output_bytes", _expect_int(1024)),
    "confine_writes": _Key("confine_writes", _expect_bool),
    "allowed_dirs": _Key("allowed_dirs", _expect_strs, "paths"),
    "protected_dirs": _Key("protected_dirs", _expect_strs),
    "state_dir": _Key("state_dir", _expect_str, "path"),
    "rg_path": _Key("rg_path", _expect_str),
    "skill_paths": _Key("skill_paths", _expect_strs, "paths"),
    "user_agent": _Key("user_agent", _expect_str),
    "block_private_networks": _Key("block_private_networks", _expect_bool),
    "fetch_allowed_hosts": _Key("fetch_allowed_hosts", _expect_strs),
    "bash.sandbox": _Key("bash_sandbox", _expect_bool),
    "bash.network": _Key("bash_network", _expect_bool),
    "bash.max_jobs": _Key("max_jobs", _expect_int(1)),
    "tools.custom": _Key("custom_tools", _expect_bool),
    "tools.override": _Key("tools_override", _expect_strs),
    "audit.path": _Key("audit_log", _expect_str, "path"),
    "audit.redact_keys": _Key("audit_redact_keys", _expect_strs),
    "edit.syntax_gate": _Key("syntax_gate", _expect_choice("refuse", "warn", "off")),
    "mcp.token_file": _Key("mcp_token_file", _expect_str, "path"),
    "mcp.allowed_hosts": _Key("mcp_allowed_hosts", _expect_strs),
    "lsp.enabled": _Key("lsp_enabled", _expect_bool),
    "lsp.on_view": _Key("lsp_on_view", _expect_bool),
    "lsp.idle_timeout": _Key("lsp_idle_s", _expect_int(0)),
    "lsp.servers": _Key("lsp_servers", _expect_table),
    "session_host.idle_timeout": _Key("session_host_idle_s", _expect_int(1)),
}

#: Keys only the user may set (their config file, ``--config``, the API): they would let a cloned
#: repository run its own program in place of ours (a custom tool over a built-in, the rg the
#: searches run), reach beyond the workspace (more writable or readable directories, skill
#: directories, the state directory, fetch hosts past the private-network guard, an audit log
#: appended anywhere) or choose who may reach an MCP HTTP server (a token it knows, a Host name it
#: controls). A workspace's own config file that sets one is not obeyed for it; what it asked is
#: kept in ``Config.workspace_refused``, for ``--list`` and the log.
USER_ONLY_KEYS = (
    "tools.override", "rg_path", "mcp.token_file", "mcp.allowed_hosts", "allowed_dirs", "state_dir",
    "skill_paths", "fetch_allowed_hosts", "audit.path",
)  # fmt: skip
#: Keys a workspace's own config may set only to the safer value (a repository may turn the
#: sandbox on, never off): the looser one is refused like a USER_ONLY_KEYS key.
TIGHTEN_ONLY_KEYS: dict[str, bool] = {
    "confine_writes": True, "block_private_networks": True, "bash.sandbox": True, "bash.network": False,
}  # fmt: skip


def _take_user_only(layer: dict[str, Any], below: dict[str, Any]) -> dict[str, Any]:
    """What a workspace's file may not set (TOML key → value), taken out of its values: the
    USER_ONLY_KEYS, a TIGHTEN_ONLY_KEYS key set to its looser value, and the command of a language
    server (it would run a program of the repository's on the first view of a file). Protected
    directories it names are added to those already set (``below``), never put in their place."""
    refused = {key: layer.pop(CONFIG_KEYS[key].field) for key in USER_ONLY_KEYS if CONFIG_KEYS[key].field in layer}
    for key, safe in TIGHTEN_ONLY_KEYS.items():
        name = CONFIG_KEYS[key].field
        if name in layer and layer[name] != safe:
            refused[key] = layer.pop(name)
    for server, spec in list(layer.get("lsp_servers", {}).items()):
        if "command" in spec:
            refused[f"lsp.servers.{server}.command"] = spec.pop("command")
            if not spec or ("extensions" in spec and not _known_server(server)):
                del layer["lsp_servers"][server]  # a new server without its command is no server
    if "protected_dirs" in layer:
        kept = below.get("protected_dirs", list(DEFAULT_PROTECTED_DIRS))
        layer["protected_dirs"] = [*kept, *(d for d in layer["protected_dirs"] if d not in kept)]
    return refused


def _known_server(name: str) -> bool:
    from .lsp.servers import DEFAULT_SERVER_NAMES

    return name in DEFAULT_SERVER_NAMES


#: Keys of one ``[lsp.servers.NAME]`` table.
LSP_SERVER_KEYS: dict[str, Callable[[Any], Any]] = {
    "command": _expect_strs,
    "extensions": _expect_strs,
    "language_id": _expect_str,
    "root_markers": _expect_strs,
    "init_options": _expect_table,
    "settings": _expect_table,
    "per_file": _expect_bool,
    "disabled": _expect_bool,
}


def _unknown(where: str, key: str, known: list[str]) -> ConfigError:
    import difflib  # for a mistake only: a valid config does not pay for it

    close = difflib.get_close_matches(key, known, n=1)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    return ConfigError(f"{where}: unknown key '{key}'.{hint} Known keys: {', '.join(sorted(known))}.")


def _checked(where: str, key: str, check: Callable[[Any], Any], value: Any) -> Any:
    try:
        return check(value)
    except _Wrong as wrong:
        got = wrong.got or describe_value(value, "toml")
        raise ConfigError(f"{where}: '{key}' must be {wrong.expected}, got {got}.") from None


#: What a server that is not a built-in one must say, and how.
_NEW_SERVER_KEY_HELP = {"command": "a list of strings", "extensions": 'e.g. [".ml"]'}


def check_lsp_servers(raw: Any, where: str, prefix: str = "lsp.servers") -> dict[str, dict[str, Any]]:
    """Validate ``{name: {command, extensions, ...}}``: types, unknown keys, and that a server
    that is not one of the defaults says how to start it and for which files."""
    from .lsp.servers import DEFAULT_SERVER_NAMES

    table = _checked(where, prefix, _expect_table, raw)
    out: dict[str, dict[str, Any]] = {}
    for name, spec in table.items():
        spec = _checked(where, f"{prefix}.{name}", _expect_table, spec)
        entry: dict[str, Any] = {}
        for key, value in spec.items():
            if key not in LSP_SERVER_KEYS:
                raise _unknown(where, f"{prefix}.{name}.{key}", [f"{prefix}.{name}.{k}" for k in LSP_SERVER_KEYS])
            entry[key] = _checked(where, f"{prefix}.{name}.{key}", LSP_SERVER_KEYS[key], value)
        if "command" in entry and not entry["command"]:
            raise ConfigError(f"{where}: '{prefix}.{name}.command' must not be empty.")
        new_server = name not in DEFAULT_SERVER_NAMES and not entry.get("disabled", False)
        missing = [key for key in ("command", "extensions") if not entry.get(key)]
        if new_server and missing:
            needs = " and ".join(f"'{key}' ({_NEW_SERVER_KEY_HELP[key]})" for key in missing)
            raise ConfigError(
                f"{where}: '{prefix}.{name}' is not a built-in server ({', '.join(DEFAULT_SERVER_NAMES)}), so it "
                f"needs {needs}."
            )
        out[name] = entry
    return out


def read_config_file(path: Path, workspace: Path) -> dict[str, Any]:
    """Config field values set by one TOML file. Raises :class:`ConfigError`."""
    import tomllib

    where = str(path)
    try:
        with open(path, "rb") as handle:
            document = tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigError(f"{where}: config file not found.") from None
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read the config file ({exc.strerror}).") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: invalid TOML: {exc}.") from None
    values: dict[str, Any] = {}
    _read_table(document, "", where, workspace, values)
    return values


def _read_table(table: Mapping[str, Any], prefix: str, where: str, workspace: Path, out: dict[str, Any]) -> None:
    sections = {k.rsplit(".", 1)[0] for k in CONFIG_KEYS if "." in k}
    for key, value in table.items():
        dotted = f"{prefix}{key}"
        spec = CONFIG_KEYS.get(dotted)
        if spec is None and dotted in sections:
            _read_table(_checked(where, dotted, _expect_table, value), f"{dotted}.", where, workspace, out)
            continue
        if spec is None:
            known = [k for k in CONFIG_KEYS if k.startswith(prefix)] + [s for s in sections if s.startswith(prefix)]
            raise _unknown(where, dotted, known)
        checked = _checked(where, dotted, spec.check, value)
        if dotted == "lsp.servers":
            checked = check_lsp_servers(checked, where)
        elif spec.paths == "path":
            checked = from_workspace(workspace, checked)
        elif spec.paths == "paths":
            checked = [from_workspace(workspace, p) for p in checked]
        out[spec.field] = checked


def _merge(values: dict[str, Any], layer: dict[str, Any]) -> None:
    """Later layers win; server tables merge per server and per key."""
    for name, value in layer.items():
        if name == "lsp_servers" and name in values:
            merged = {server: dict(spec) for server, spec in values[name].items()}
            for server, spec in value.items():
                merged.setdefault(server, {}).update(spec)
            values[name] = merged
        else:
            values[name] = value

