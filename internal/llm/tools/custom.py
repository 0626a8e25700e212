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

A custom tool named like a built-in is refused unless ``[tools] override`` lists that name — in
the user's own config, never the workspace's (see config.USER_ONLY_FIELDS); the refusal (or
the override) is logged and kept in ``ToolRegistry.problems``. The user's ``--tool NAME=PATH``
(``Config.tool_programs``) adds or replaces a tool for one session, and ``--tool NAME=``
removes one.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ...config import WORKSPACE_CONFIG, WORKSPACE_TOOLS_DIR, Config, user_config_file, user_tools_dir
from ...fsutil.printable import printable
from ...logs import logger
from ...shell.state import ShellState
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
        shell = ShellState(cwd=None, env=ctx.shell.env)
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
        f"Runs the `{name}` program ({program}) with `args` as its command-line arguments and "
        "returns its output and exit code."
    )


@dataclass
class CustomTools:
    """A session's custom tools by name, the tools it must not offer (``--tool NAME=``), and one
    line per program left out or request refused (and why)."""

    tools: dict[str, CustomTool] = field(default_factory=dict)
    removed: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)


def custom_tools(workspace: Path, config: Config, builtin: Collection[str], *, discover: bool = True) -> CustomTools:
    """The custom tools of a session whose own tools are ``builtin``: the programs in the tools
    directories (``discover``), then the user's ``config.tool_programs``.

    A built-in is replaced only with the user's consent: a directory's program of a built-in's
    name only when ``config.tools_override`` (which the workspace's own config cannot set) lists
    it, or a program the user named for it. Raises ValueError for a ``tool_programs`` entry that
    names no usable program, or removes a tool that does not exist.
    """
    found = CustomTools()
    if discover:
        for directory in (user_tools_dir(), workspace / WORKSPACE_TOOLS_DIR):
            found.tools.update(_tools_in(directory, found.problems))  # a later directory (the project's) wins
    for name in [n for n in found.tools if n in builtin]:
        program = found.tools[name].program
        if name in config.tools_override:
            log.warning("custom tool %s (%s) replaces the built-in %s tool ([tools] override)", name, program, name)
            continue
        del found.tools[name]
        _problem(
            found,
            f"custom tool {printable(str(program))} is not offered: '{name}' is a built-in tool; to replace the "
            f'built-in, list it in [tools] override = ["{name}"] in your own config ({user_config_file()}) or '
            f"run with --tool {name}=PATH",
        )
    for key, value in config.workspace_refused.items():
        _problem(found, _refused_request(key, value))
    _apply_user_programs(found, config.tool_programs, builtin)
    return found


def _refused_request(key: str, value: object) -> str:
    """What to say of a USER_ONLY_KEYS setting the workspace's own config made (and was not obeyed in)."""
    if key == "tools.override" and isinstance(value, list):
        asked = ", ".join(printable(str(name)) for name in value)
        return (
            f"the workspace's {WORKSPACE_CONFIG} asks to replace built-in tools ([tools] override = {asked}); "
            "ignored: only your own config, --tool NAME=PATH or the API can replace a built-in tool"
        )
    return (
        f"the workspace's {WORKSPACE_CONFIG} sets {key} = {printable(str(value))}; ignored: only your own config "
        "or the API can set it"
    )


def _problem(found: CustomTools, problem: str) -> None:
    log.warning("%s", problem)
    found.problems.append(problem)


def _apply_user_programs(found: CustomTools, programs: Mapping[str, Path | None], builtin: Collection[str]) -> None:
    """The user's own ``name → program`` (None: remove the tool), over everything else."""
    for name, program in programs.items():
        if program is None:
            if name not in builtin and name not in found.tools:
                known = ", ".join([*builtin, *(n for n in found.tools if n not in builtin)])
                raise ValueError(f"cannot remove the tool '{printable(name)}': no tool has that name. Tools: {known}")
            found.tools.pop(name, None)
            found.removed.add(name)
            continue
        found.tools[name] = user_program_tool(name, program)
        found.removed.discard(name)
        replaced = "replaces the built-in tool" if name in builtin else "is added as a tool"
        log.info("%s (%s) %s for this session, as the user asked", name, program, replaced)


def user_program_tool(name: str, program: Path) -> CustomTool:
    """The tool the user names ``name`` for ``program`` (the CLI's ``--tool NAME=PATH``); its
    companion ``.md`` beside it as in a tools directory. ValueError when it cannot be one."""
    if not TOOL_NAME_RE.match(name):
        raise ValueError(
            f"the tool name '{printable(name)}' must be 1-64 characters of A-Z a-z 0-9 _ -, starting with a letter or _"
        )
    skipped = _not_a_program(str(program))
    if skipped is not None:
        raise ValueError(f"{printable(str(program))} cannot be the tool '{name}': {skipped or 'it is not a file'}")
    docs = (program.with_suffix(".md"), program.parent / f"{program.name}.md")
    return CustomTool(name, program, next((d for d in docs if d.is_file()), None))


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
        skipped = _not_a_program(entry.path)
        if skipped is not None:
            if skipped:
                problems.append(f"custom tool {printable(entry.path)} is not offered: {skipped}")
            continue
        program = Path(entry.path)
        name = program.stem if program.suffix else program.name
        if not TOOL_NAME_RE.match(name):
            problems.append(
                f"custom tool {printable(str(program))} is not offered: its name '{printable(name)}' must be 1-64 "
                "characters of A-Z a-z 0-9 _ -, starting with a letter or _"
            )
            continue
        if name in tools:
            same = printable(str(tools[name].program))
            problems.append(f"custom tool {printable(str(program))} is not offered: {same} has the same name")
            continue
        doc = next((directory / n for n in (f"{name}.md", f"{entry.name}.md") if n in names), None)
        tools[name] = CustomTool(name, program, doc)
    return tools


def _not_a_program(path: str) -> str | None:
    """None for an executable file; otherwise why it is skipped ("" when silently: a directory
    or a companion file is no candidate)."""
    try:
        mode = os.stat(path).st_mode  # follows a symlink to the program it names
    except FileNotFoundError:
        return "it does not exist (or is a symlink to nothing)"
    except OSError as exc:
        return f"it cannot be read ({exc.strerror or exc}; a broken symlink?)"
    if not stat.S_ISREG(mode):
        return ""
    if not os.access(path, os.X_OK):
        return f"it is not executable (chmod +x {printable(path)} to offer it)"
    return None
