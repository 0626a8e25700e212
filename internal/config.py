"""Per-session settings. Every limit a tool enforces has its default here or beside its code."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Default bound on any tool's text: lines and bytes (SPEC §2).
DEFAULT_MAX_OUTPUT_LINES = 2000
DEFAULT_MAX_OUTPUT_BYTES = 50 * 1024

#: Directories no mutating tool may write into, relative to the workspace or absolute.
DEFAULT_PROTECTED_DIRS: tuple[str, ...] = (".git",)


def default_state_dir() -> Path:
    """Where CLI sessions keep their state and tools spill full outputs.

    ``$TOOLSMITH_STATE_DIR``, else ``$XDG_STATE_HOME/toolsmith``, else ``~/.local/state/toolsmith``.
    """
    explicit = os.environ.get("TOOLSMITH_STATE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "state"
    return base / "toolsmith"


@dataclass
class Config:
    """Settings shared by all tools of a session."""

    max_output_lines: int = DEFAULT_MAX_OUTPUT_LINES
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    #: Mutating tools must stay inside the workspace (or ``allowed_dirs``) when true.
    confine_writes: bool = True
    allowed_dirs: list[Path] = field(default_factory=list)
    protected_dirs: list[str] = field(default_factory=lambda: list(DEFAULT_PROTECTED_DIRS))
    state_dir: Path = field(default_factory=default_state_dir)
    #: Path to an ``rg`` binary; ``None`` finds the one from the ripgrep wheel, then PATH.
    rg_path: str | None = None
    #: Feed language-server diagnostics back after view and edits.
    lsp_enabled: bool = True
    #: Language servers by name, merged over the defaults (see internal/lsp).
    lsp_servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Extra skill directories, searched after the default tiers.
    skill_paths: list[Path] = field(default_factory=list)
    #: User-Agent for fetch.
    user_agent: str = "toolsmith/0.1 (+coding-agent fetch tool)"
    #: Refuse fetches to private/loopback addresses (off by default; see README).
    block_private_networks: bool = False
