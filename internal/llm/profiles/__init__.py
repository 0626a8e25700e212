"""Tool profiles: the tool shapes a model family was trained on, over the same engine.

``default`` is the engine's own tools (view, edit, grep, ...). ``claude``, ``codex`` and
``gemini`` offer the tools of Claude Code, Codex and Gemini CLI at the versions pinned in
docs/profiles.md, with every input property those products declare (tests/test_conformance.py
holds them to the products' own declarations): claude's Read, Edit, Bash, TodoWrite,
AskUserQuestion, ...; codex's apply_patch (a free-form grammar tool for the OpenAI Responses API),
exec_command, shell, update_plan, ...; gemini's read_file, replace, run_shell_command,
write_todos, ask_user, ....

A profile tool is a thin adapter: it validates its own parameters, maps them onto one engine
tool's, runs that tool (the same checks, permission, commit and diagnostics) and adjusts only
the wording where the family's convention differs (1-based line offsets, say). No behaviour is
forked: the file a profile's Edit leaves is the file the engine's edit leaves. A product
parameter the engine cannot honour is accepted and answered with "not supported here: ...";
messages the engine builds during a profile's call name that profile's tools (vocabulary.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the CLI's parser reads PROFILES: a call through the session host never loads the tool layer
    from ..tools.contract import Tool

PROFILES = ("default", "claude", "codex", "gemini")

__all__ = ["PROFILES", "check_profile", "profile_tools"]


def check_profile(name: str) -> str:
    if name not in PROFILES:
        raise ValueError(f"unknown profile {name!r}: use one of {', '.join(PROFILES)}")
    return name


def profile_tools(profile: str) -> dict[str, Tool]:
    """The tools of ``profile`` (not "default": the engine's own tools need no adapter)."""
    check_profile(profile)
    if profile == "claude":
        from .claude import TOOLS
    elif profile == "codex":
        from .codex import TOOLS
    elif profile == "gemini":
        from .gemini import TOOLS
    else:
        raise ValueError("the default profile is the engine's own tools")
    return {tool.name: tool for tool in TOOLS}
