"""What a session's shell remembers between commands: its directory and exported variables."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ShellState:
    """``cwd`` ``None`` means "start in the workspace"; ``env`` ``None`` means "inherit ours"."""

    cwd: str | None = None
    env: dict[str, str] | None = None
    #: Why the sandbox cannot run ("" when it can; None until probed). Not persisted.
    sandbox_problem: str | None = field(default=None, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {"cwd": self.cwd, "env": self.env}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ShellState:
        cwd = data.get("cwd")
        env = data.get("env")
        ok_env = isinstance(env, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
        return cls(cwd=cwd if isinstance(cwd, str) else None, env=dict(env) if ok_env and env else None)
