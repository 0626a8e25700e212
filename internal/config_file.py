"""The config file format: which TOML keys exist, how each is checked, how a file is read and
layered over the one before, and what a workspace's own file may not set (see config.py for
the settings themselves and docs/config.md for every key)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from .errors import describe_value
from .fsutil.paths import from_workspace

#: Never written by a mutating tool. A bare name is protected at any depth (``sub/.git/config``
#: too); an entry with a ``/`` is a path, relative to the workspace unless absolute. ``.git``
#: holds hooks and config that run commands; ``.toolsmith`` configures language-server commands
#: and custom tools.
DEFAULT_PROTECTED_DIRS: tuple[str, ...] = (".git", ".toolsmith")

#: The workspace's config file, relative to its root.
WORKSPACE_CONFIG = Path(".toolsmith") / "config.toml"


class ConfigError(ValueError):
    """A config file or a ``Config(...)`` argument is invalid. The message names where and what."""



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


def take_user_only(layer: dict[str, Any], below: dict[str, Any]) -> dict[str, Any]:
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


def merge_layer(values: dict[str, Any], layer: dict[str, Any]) -> None:
    """Later layers win; server tables merge per server and per key."""
    for name, value in layer.items():
        if name == "lsp_servers" and name in values:
            merged = {server: dict(spec) for server, spec in values[name].items()}
            for server, spec in value.items():
                merged.setdefault(server, {}).update(spec)
            values[name] = merged
        else:
            values[name] = value

