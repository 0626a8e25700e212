"""Language server configurations: built-in defaults, merged with the user's ``Config.lsp_servers``.

A server is used for a file when its extension matches and its command is found — in the running
interpreter's ``bin`` directory (a venv's servers), then on PATH. Every such server runs for the
file (a type checker and a linter side by side: basedpyright and ruff), except that servers of
one ``group`` are alternatives: only the first installed one runs (basedpyright, else pyright,
else pylsp). User-defined servers come first and belong to no group.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ServerConfig:
    name: str
    command: tuple[str, ...]
    extensions: tuple[str, ...]
    language_id: str
    root_markers: tuple[str, ...] = ()
    init_options: dict[str, Any] = field(default_factory=dict)
    #: Answers to workspace/configuration, by section ("" for the whole configuration).
    settings: dict[str, Any] = field(default_factory=dict)
    #: Servers sharing a group are alternatives: the first installed one runs.
    group: str | None = None
    #: False for servers known to stay silent when a file's (empty) diagnostics do not change.
    republishes_unchanged: bool = True
    #: True for linters whose diagnostics for a file depend on that file alone: a change never
    #: moves another file's, so an edit does not wait for other files' publishes from them.
    per_file: bool = False
    #: Root markers in tiers, searched tier by tier up the tree: the nearest directory with a
    #: first-tier marker wins over a nearer one with a later tier's (tsconfig.json before
    #: package.json). Empty: ``root_markers`` as one tier. A user's ``root_markers`` replace it.
    root_tiers: tuple[tuple[str, ...], ...] = ()


PY_MARKERS = ("pyrightconfig.json", "pyproject.toml", "setup.cfg", "setup.py", "requirements.txt", ".git")
PY_TIERS = (("pyrightconfig.json", "pyproject.toml", "setup.cfg", "setup.py"), ("requirements.txt",), (".git",))
TS_TIERS = (("tsconfig.json", "jsconfig.json"), ("package.json",), (".git",))
GO_TIERS = (("go.work",), ("go.mod",), (".git",))
DEFAULT_SERVERS: tuple[ServerConfig, ...] = (
    ServerConfig(
        "basedpyright", ("basedpyright-langserver", "--stdio"), (".py", ".pyi"), "python", PY_MARKERS,
        settings={"basedpyright.analysis": {"typeCheckingMode": "standard"}}, group="python", root_tiers=PY_TIERS,
    ),
    ServerConfig(
        "pyright", ("pyright-langserver", "--stdio"), (".py", ".pyi"), "python", PY_MARKERS, group="python",
        root_tiers=PY_TIERS,
    ),
    ServerConfig("pylsp", ("pylsp",), (".py", ".pyi"), "python", PY_MARKERS, group="python", per_file=True,
                 root_tiers=PY_TIERS),
    ServerConfig("ruff", ("ruff", "server"), (".py", ".pyi"), "python", PY_MARKERS, per_file=True, root_tiers=PY_TIERS),
    ServerConfig("gopls", ("gopls",), (".go",), "go", ("go.work", "go.mod", ".git"), root_tiers=GO_TIERS),
    ServerConfig(
        "typescript", ("typescript-language-server", "--stdio"),
        (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs"), "typescript",
        ("tsconfig.json", "jsconfig.json", "package.json", ".git"),
        republishes_unchanged=False, root_tiers=TS_TIERS,
    ),
    ServerConfig("rust-analyzer", ("rust-analyzer",), (".rs",), "rust", ("Cargo.toml", ".git")),
    ServerConfig(
        "clangd", ("clangd",), (".c", ".h", ".cc", ".cpp", ".hpp", ".cxx"), "cpp", ("compile_commands.json", ".git"),
    ),
)  # fmt: skip

LANGUAGE_IDS = {".tsx": "typescriptreact", ".jsx": "javascriptreact", ".js": "javascript", ".c": "c", ".h": "c"}


DEFAULT_SERVER_NAMES: tuple[str, ...] = tuple(config.name for config in DEFAULT_SERVERS)


def _normalised_extensions(extensions: list[str]) -> tuple[str, ...]:
    return tuple(e.lower() if e.startswith(".") else f".{e.lower()}" for e in extensions)


def configured_servers(raw: dict[str, dict[str, Any]]) -> list[ServerConfig]:
    """User entries (validated by ``config.check_lsp_servers``) merged with the defaults.

    An entry named like a default changes only the keys it gives (``settings`` alone, say); a
    new name is a new server. User-only servers come first, then the defaults in their order.
    Disabled servers are left out.
    """
    defaults = {config.name: config for config in DEFAULT_SERVERS}
    out: list[ServerConfig] = []
    for name, spec in raw.items():
        if name in defaults or spec.get("disabled"):
            continue
        out.append(_apply(ServerConfig(name, (), (), spec.get("language_id", name)), spec))
    for config in DEFAULT_SERVERS:
        spec = raw.get(config.name, {})
        if not spec.get("disabled"):
            out.append(_apply(config, spec))
    return out


def _apply(config: ServerConfig, spec: dict[str, Any]) -> ServerConfig:
    changes: dict[str, Any] = {}
    if "command" in spec:
        changes["command"] = tuple(spec["command"])
    if "extensions" in spec:
        changes["extensions"] = _normalised_extensions(spec["extensions"])
    if "language_id" in spec:
        changes["language_id"] = spec["language_id"]
    if "root_markers" in spec:
        changes["root_markers"] = tuple(spec["root_markers"])
        changes["root_tiers"] = ()
    if "init_options" in spec:
        changes["init_options"] = {**config.init_options, **spec["init_options"]}
    if "settings" in spec:
        changes["settings"] = {**config.settings, **spec["settings"]}
    if "per_file" in spec:
        changes["per_file"] = spec["per_file"]
    return replace(config, **changes) if changes else config


def find_executable(command: str) -> str | None:
    if os.path.isabs(command):
        return command if os.access(command, os.X_OK) else None
    beside = Path(sys.executable).parent / command
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which(command)


def servers_for(path: Path, raw_user: dict[str, dict[str, Any]]) -> list[ServerConfig]:
    """Every configured, installed server for ``path``'s extension (one per group)."""
    suffix = path.suffix.lower()
    out: list[ServerConfig] = []
    groups: set[str] = set()
    for config in configured_servers(raw_user):
        if suffix not in config.extensions or (config.group is not None and config.group in groups):
            continue
        if find_executable(config.command[0]):
            out.append(config)
            if config.group is not None:
                groups.add(config.group)
    return out


def missing_servers(path: Path, raw_user: dict[str, dict[str, Any]]) -> list[ServerConfig]:
    """Servers the user configured (in ``raw_user``) for ``path``'s extension whose command is not
    installed: named in results, never ignored silently. Defaults that are absent are not news."""
    suffix = path.suffix.lower()
    return [
        config
        for config in configured_servers(raw_user)
        if config.name in raw_user
        and "command" in raw_user[config.name]
        and suffix in config.extensions
        and config.command
        and not find_executable(config.command[0])
    ]


def language_id(config: ServerConfig, path: Path) -> str:
    return LANGUAGE_IDS.get(path.suffix.lower(), config.language_id)


def find_root(path: Path, workspace: Path, markers: tuple[str, ...], tiers: tuple[tuple[str, ...], ...] = ()) -> Path:
    """The project root that owns ``path``: for each tier in turn, the nearest directory at or
    above ``path`` (inside the workspace) holding one of its markers; else the workspace.

    A tsconfig.json found this way yields to an ancestor tsconfig.json that lists it in its
    ``references`` (a solution-style root: one server for the whole project)."""
    for tier in tiers or (markers,):
        found = _nearest(path.parent, workspace, tier)
        if found is not None:
            return _referencing_root(found, workspace) if "tsconfig.json" in tier else found
    return workspace


def _ancestors(directory: Path, workspace: Path) -> list[Path]:
    out = []
    while True:
        out.append(directory)
        if directory == workspace or workspace not in directory.parents:
            return out
        directory = directory.parent


def _nearest(directory: Path, workspace: Path, markers: tuple[str, ...]) -> Path | None:
    for candidate in _ancestors(directory, workspace):
        if any((candidate / marker).exists() for marker in markers):
            return candidate
        if candidate == workspace or workspace not in candidate.parents:
            return None
    return None


def _referencing_root(found: Path, workspace: Path) -> Path:
    root = found
    for ancestor in _ancestors(found, workspace)[1:]:
        references = _tsconfig_references(ancestor / "tsconfig.json")
        if any(_same_project(ancestor / ref, root) for ref in references):
            root = ancestor
    return root


def _same_project(reference: Path, directory: Path) -> bool:
    target = reference.parent if reference.suffix == ".json" else reference
    try:
        return target.resolve() == directory.resolve()
    except OSError:
        return False


def _tsconfig_references(config: Path) -> list[str]:
    """The ``references[].path`` of a tsconfig.json (JSON with comments and trailing commas)."""
    import json
    import re

    try:
        text = config.read_text(encoding="utf-8")
    except OSError:
        return []
    text = re.sub(r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/', lambda m: m.group(1) or "", text, flags=re.DOTALL)
    text = re.sub(r",(\s*[}\]])", r"\1", text)
    try:
        data = json.loads(text)
    except ValueError:
        return []
    refs = data.get("references") if isinstance(data, dict) else None
    if not isinstance(refs, list):
        return []
    return [str(ref["path"]) for ref in refs if isinstance(ref, dict) and isinstance(ref.get("path"), str)]
