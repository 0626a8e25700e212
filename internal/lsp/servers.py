"""Language server configurations: built-in defaults, merged with the user's ``Config.lsp_servers``.

A server is used for a file when its extension matches and its command is found — in the running
interpreter's ``bin`` directory (a venv's servers), then on PATH. The first matching configured
server wins, in the order below (user entries first).
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
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


PY_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", ".git")
DEFAULT_SERVERS: tuple[ServerConfig, ...] = (
    ServerConfig(
        "basedpyright", ("basedpyright-langserver", "--stdio"), (".py", ".pyi"), "python", PY_MARKERS,
        settings={"basedpyright.analysis": {"typeCheckingMode": "standard"}},
    ),
    ServerConfig("pyright", ("pyright-langserver", "--stdio"), (".py", ".pyi"), "python", PY_MARKERS),
    ServerConfig("pylsp", ("pylsp",), (".py", ".pyi"), "python", PY_MARKERS),
    ServerConfig("ruff", ("ruff", "server"), (".py", ".pyi"), "python", PY_MARKERS),
    ServerConfig("gopls", ("gopls",), (".go",), "go", ("go.mod", ".git")),
    ServerConfig(
        "typescript", ("typescript-language-server", "--stdio"),
        (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs"), "typescript", ("tsconfig.json", "package.json", ".git"),
    ),
    ServerConfig("rust-analyzer", ("rust-analyzer",), (".rs",), "rust", ("Cargo.toml", ".git")),
    ServerConfig(
        "clangd", ("clangd",), (".c", ".h", ".cc", ".cpp", ".hpp", ".cxx"), "cpp", ("compile_commands.json", ".git"),
    ),
)  # fmt: skip

LANGUAGE_IDS = {".tsx": "typescriptreact", ".jsx": "javascriptreact", ".js": "javascript", ".c": "c", ".h": "c"}


def user_servers(raw: dict[str, dict[str, Any]]) -> list[ServerConfig]:
    """``Config.lsp_servers`` entries: ``{"name": {"command": [...], "extensions": [...], ...}}``."""
    out = []
    for name, spec in raw.items():
        command = spec.get("command")
        extensions = spec.get("extensions")
        if not command or not extensions:
            continue
        out.append(
            ServerConfig(
                name,
                tuple(command),
                tuple(e if e.startswith(".") else f".{e}" for e in extensions),
                spec.get("language_id", name),
                tuple(spec.get("root_markers", ())),
                dict(spec.get("init_options", {})),
                dict(spec.get("settings", {})),
            )
        )
    return out


def find_executable(command: str) -> str | None:
    if os.path.isabs(command):
        return command if os.access(command, os.X_OK) else None
    beside = Path(sys.executable).parent / command
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which(command)


def server_for(path: Path, raw_user: dict[str, dict[str, Any]]) -> ServerConfig | None:
    """The first configured server for ``path``'s extension whose command is installed."""
    suffix = path.suffix.lower()
    disabled = {name for name, spec in raw_user.items() if spec.get("disabled")}
    for config in (*user_servers(raw_user), *DEFAULT_SERVERS):
        if config.name in disabled or suffix not in config.extensions:
            continue
        if find_executable(config.command[0]):
            return config
    return None


def language_id(config: ServerConfig, path: Path) -> str:
    return LANGUAGE_IDS.get(path.suffix.lower(), config.language_id)


def find_root(path: Path, workspace: Path, markers: tuple[str, ...]) -> Path:
    """The nearest directory at or above ``path`` (inside the workspace) holding a root marker."""
    directory = path.parent
    while True:
        if any((directory / marker).exists() for marker in markers):
            return directory
        if directory == workspace or workspace not in directory.parents:
            return workspace
        directory = directory.parent
