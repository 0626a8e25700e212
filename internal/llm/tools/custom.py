"""Custom tools: a project's (or user's) own programs, offered to the model like the built-ins.

Every executable file in ``<workspace>/.toolsmith/tools/`` and in the user's
``$XDG_CONFIG_HOME/toolsmith/tools/`` becomes a tool named after the file without its extension
(``deploy.sh`` → ``deploy``); a project's tool replaces a user's of the same name. A companion
``<name>.md`` gives its ``description`` in YAML frontmatter and usage guidance in the body (both
shown to the model), and may set ``timeout_ms``. The tool takes one parameter, ``args``: shell
words appended to the program's path and run like a bash command — quoting, globs and pipes
work, the same refusals apply, the process group is stopped on timeout or abort, output is
bounded with a spill file. It runs from the workspace root with the session's environment,
and always asks permission (it can do anything).

A custom tool named like a built-in is refused unless ``[tools] override`` lists that name; the
refusal (or the override) is logged and kept in ``ToolRegistry.problems``.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
from dataclasses import dataclass
from pathlib import Path

from ...config import WORKSPACE_TOOLS_DIR, Config, user_tools_dir
from ...logs import logger
from ...shell.state import ShellState
from .builtins import TOOL_MODULES
from .command_call import DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS, run_command_call
from .context import ProcessServices
from .contract import Tool, ToolInfo, ToolResponse
from .params import param

log = logger("toolsmith")

#: Names every provider accepts (Anthropic and OpenAI: [A-Za-z0-9_-]{1,64}; Gemini: starts with
#: a letter or underscore) and MCP clients display.
TOOL_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
#: The guidance (the .md body) the model sees; longer bodies are cut.
MAX_GUIDANCE_CHARS = 4000


@dataclass(frozen=True)
class CustomParams:
    args: str = param("Arguments for the program, as shell words (quoting, globs and pipes work as in bash)", "")


class CustomTool(Tool):
    Params = CustomParams
    open_world = True

    def __init__(self, name: str, program: Path, doc: Path | None) -> None:
        self.name = name
        self.program = program
        self.doc = doc
        self.description = _fallback_description(name, program)
        self._timeout_ms = DEFAULT_TIMEOUT_MS
        self._doc_read = doc is None

    def info(self) -> ToolInfo:
        self._read_doc()
        return super().info()

    async def run(self, params: CustomParams, ctx: ProcessServices) -> ToolResponse:
        self._read_doc()
        command = shlex.quote(str(self.program))
        if params.args.strip():
            command += " " + params.args
        # From the workspace root, with the session's environment; a custom tool never moves the
        # session's shell (its cd or exports stay its own).
        shell = ShellState(cwd=None, env=ctx.shell.env, sandbox_problem=ctx.shell.sandbox_problem)
        return await run_command_call(
            command, ctx, tool=self.name, timeout_ms=self._timeout_ms, always_ask=True, shell=shell
        )

    def _read_doc(self) -> None:
        """The companion .md, read on first need: listing or running, not discovering."""
        if self._doc_read or self.doc is None:
            return
        self._doc_read = True
        from ...skills import parse_frontmatter

        try:
            values, body = parse_frontmatter(self.doc.read_text(encoding="utf-8", errors="replace"))
        except (OSError, ValueError) as exc:
            log.warning(
                "custom tool %s: %s is not usable (%s); using the default description", self.name, self.doc, exc
            )
            return
        description = values.get("description")
        if isinstance(description, str) and description.strip():
            text = description.strip()
            self.guidance = body.strip()[:MAX_GUIDANCE_CHARS]
            if self.guidance:
                text += "\n\n" + self.guidance
            self.description = text
        timeout = values.get("timeout_ms")
        if isinstance(timeout, int) and not isinstance(timeout, bool) and 1 <= timeout <= MAX_TIMEOUT_MS:
            self._timeout_ms = timeout


def _fallback_description(name: str, program: Path) -> str:
    return (
        f"Runs the project's `{name}` program ({program}) with `args` as its command-line arguments and "
        "returns its output and exit code."
    )


def discover_custom_tools(
    workspace: Path, config: Config, *, user_dir: Path | None = None
) -> tuple[dict[str, Tool], list[str]]:
    """Custom tools by name, and one line per program left out (and why)."""
    found: dict[str, CustomTool] = {}
    problems: list[str] = []
    for directory in (user_dir or user_tools_dir(), workspace / WORKSPACE_TOOLS_DIR):
        for name, tool in _tools_in(directory, problems).items():
            found[name] = tool  # a later directory (the project's) wins
    for name in [n for n in found if n in TOOL_MODULES]:
        program = found[name].program
        if name in config.tools_override:
            log.warning("custom tool %s (%s) replaces the built-in %s tool ([tools] override)", name, program, name)
            continue
        del found[name]
        problem = (
            f"custom tool {program} is not offered: '{name}' is a built-in tool; list it in "
            f'[tools] override = ["{name}"] to replace the built-in'
        )
        log.warning("%s", problem)
        problems.append(problem)
    return dict(found), problems


def _tools_in(directory: Path, problems: list[str]) -> dict[str, CustomTool]:
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return {}  # no such directory: no tools from it
    names = {entry.name for entry in entries}
    tools: dict[str, CustomTool] = {}
    for entry in entries:
        if entry.name.startswith(".") or entry.name.endswith(".md"):
            continue
        skipped = _not_a_program(entry)
        if skipped is not None:
            if skipped:
                problems.append(f"custom tool {entry.path} is not offered: {skipped}")
            continue
        program = Path(entry.path)
        name = program.stem if program.suffix else program.name
        if not TOOL_NAME_RE.match(name):
            problems.append(
                f"custom tool {program} is not offered: its name '{name}' must be 1-64 characters of "
                "A-Z a-z 0-9 _ -, starting with a letter or _"
            )
            continue
        if name in tools:
            problems.append(f"custom tool {program} is not offered: {tools[name].program} has the same name")
            continue
        doc = next((directory / n for n in (f"{name}.md", f"{entry.name}.md") if n in names), None)
        tools[name] = CustomTool(name, program, doc)
    return tools


def _not_a_program(entry: os.DirEntry[str]) -> str | None:
    """None for an executable file; otherwise why it is skipped ("" when silently: a directory
    or a companion file is no candidate)."""
    try:
        mode = entry.stat().st_mode  # follows a symlink to the program it names
    except OSError as exc:
        return f"it cannot be read ({exc.strerror or exc}; a broken symlink?)"
    if not stat.S_ISREG(mode):
        return ""
    if not os.access(entry.path, os.X_OK):
        return f"it is not executable (chmod +x {entry.path} to offer it)"
    return None
