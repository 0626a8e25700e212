"""skill: load a skill's instructions (SKILL.md) and show what else its directory holds."""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import ToolError
from ...fsutil.paths import quote_input
from ...fsutil.printable import printable
from ...ripgrep import FileQuery, find_rg, list_files
from ...skills import SKILL_FILE, discover
from .context import CallServices
from .contract import Tool, ToolResponse
from .params import param

#: Other files of the skill listed with its instructions.
MAX_SAMPLE_FILES = 20

DESCRIPTION = """Loads a skill: a directory of instructions (SKILL.md) and supporting files for a specific task.

- `name`: the skill's name as listed in <available_skills> (lowercase letters, digits and hyphens).
- Returns the skill's instructions (without its frontmatter), where it lives, and a sample of the
  other files in its directory (scripts, templates, references) that the instructions may mention;
  read those with view, relative to the base directory given.
- Load a skill when the task matches its description, before starting the work.
"""


@dataclass(frozen=True)
class SkillParams:
    name: str = param("The name of the skill to load", minLength=1)


class SkillTool(Tool):
    name = "skill"
    title = "Load a skill"
    description = DESCRIPTION
    Params = SkillParams
    read_only = True

    async def run(self, params: SkillParams, ctx: CallServices) -> ToolResponse:
        found = discover(ctx.workspace, list(ctx.config.skill_paths))
        skill = found.skills.get(params.name)
        if skill is None:
            names = ", ".join(sorted(found.skills)) or "(none)"
            message = f"Unknown skill {quote_input(params.name)!r}. Available skills: {names}."
            if found.invalid:
                message += "\nSkipped invalid skills:\n" + "\n".join(f"  {p}: {why}" for p, why in found.invalid)
            raise ToolError(message, code="unknown_skill")
        result = await list_files(
            FileQuery(skill.base_dir), rg=find_rg(ctx.config.rg_path), limit=MAX_SAMPLE_FILES + 2, cancel=ctx.cancel
        )
        prefix = len(str(skill.base_dir).rstrip("/")) + 1
        others = sorted(p[prefix:] for p in result.files if p[prefix:] != SKILL_FILE)
        body = skill.body.strip("\n")
        body_lines = body.split("\n") if body else []
        shown = _bounded_body(body_lines, ctx.config.max_output_lines, ctx.config.max_output_bytes)
        lines = [
            f'<skill name="{skill.name}">',
            f"Location: {skill.url}",
            f"Base directory: {skill.base_dir}",
            f"Lines: {len(body_lines)}",
            "",
            *shown,
        ]
        if len(shown) < len(body_lines):
            text = skill.location.read_text(encoding="utf-8", errors="replace").replace("\r\n", "\n")
            offset = text[: text.find(body)].count("\n")  # the 0-based line where the body starts
            lines.append(
                f"(Instructions truncated after {len(shown)} of {len(body_lines)} lines: read the rest with view "
                f"file_path={skill.location} offset={offset + len(shown)}.)"
            )
        if others:
            shown = others[:MAX_SAMPLE_FILES]
            lines += ["", "Other files in this skill (relative to the base directory):"]
            lines += [f"  {printable(p)}" for p in shown]
            if len(others) > len(shown) or result.stopped_early:
                lines.append("  ... (more files; use glob on the base directory)")
        lines.append("</skill>")
        metadata = {"name": skill.name, "location": skill.url, "base_dir": str(skill.base_dir), "files": others}
        return ToolResponse("\n".join(lines), metadata=metadata)


def _bounded_body(lines: list[str], max_lines: int, max_bytes: int) -> list[str]:
    """The leading lines that fit the output limits (never cut inside a line or a character)."""
    shown: list[str] = []
    used = 0
    for line in lines[:max_lines]:
        used += len(line.encode("utf-8", "surrogatepass")) + 1
        if used > max_bytes:
            break
        shown.append(line)
    return shown


TOOL = SkillTool()
