"""What a session's shell remembers between commands: its directory and exported variables,
and the record the shell hands them back in (written by runner.py's script to a pipe we hold).

A record is ``STATE_MARK``, the directory (``pwd -P``'s line) and a NUL, the exported
environment as ``env -0`` prints it (``NAME=value`` entries, each ending in NUL), then
``STATE_END``. Whatever arrives is checked here before it is kept: only the first complete
record counts, the directory must be absolute, every entry must be ``NAME=value``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: The most bytes of record the runner reads from one command (the directory and every exported
#: variable). More is not kept: Linux refuses to start programs with an environment near this
#: size anyway (128 KiB per variable, a quarter of the stack limit for all of them).
MAX_SHELL_STATE_BYTES = 1 << 20
#: The record's first field and its end (see the module docstring).
STATE_MARK = b"toolsmith-shell-state"
STATE_END = b"end"


@dataclass
class ShellState:
    """``cwd`` ``None`` means "start in the workspace"; ``env`` ``None`` means "inherit ours"."""

    cwd: str | None = None
    env: dict[str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"cwd": self.cwd, "env": self.env}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ShellState:
        cwd = data.get("cwd")
        env = data.get("env")
        ok_env = isinstance(env, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
        return cls(cwd=cwd if isinstance(cwd, str) else None, env=dict(env) if ok_env and env else None)

    def update(self, record: bytes, *, not_kept: frozenset[str]) -> bool:
        """Take the directory and environment from the first complete record in ``record``
        (variables named in ``not_kept`` left out); False, and nothing changed, when there is
        none. An empty directory (it was deleted) or environment keeps the previous one."""
        parsed = parse_record(record)
        if parsed is None:
            return False
        cwd, entries = parsed
        if cwd:
            self.cwd = cwd
        env = {}
        for entry in entries:
            key, _, value = entry.partition("=")
            if key not in not_kept:
                env[key] = value
        if env:
            self.env = env
        return True


def parse_record(data: bytes) -> tuple[str, list[str]] | None:
    """The directory and the ``NAME=value`` entries of the first complete, well-formed record
    in ``data``; None when there is none."""
    start = data.find(STATE_MARK + b"\0")
    if start < 0:
        return None
    fields = data[start + len(STATE_MARK) + 1 :].split(b"\0")
    if len(fields) < 2:
        return None
    cwd = fields[0].removesuffix(b"\n").decode("utf-8", "surrogateescape")
    if cwd and not cwd.startswith("/"):
        return None
    entries: list[str] = []
    for raw in fields[1:]:
        if raw == STATE_END:
            return cwd, entries
        name, sep, _ = raw.partition(b"=")
        if not sep or not name:
            return None
        entries.append(raw.decode("utf-8", "surrogateescape"))
    return None  # no end: cut short (killed while writing, or over the cap)
