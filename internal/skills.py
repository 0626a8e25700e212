"""Agent Skills: directories holding a ``SKILL.md`` with ``name``/``description`` frontmatter.

Tiers are searched from the most general to the most specific, and a later tier's skill replaces
an earlier one of the same name: user-wide skills, then the project's, then ``Config.skill_paths``:

1. ``~/.agents/skills``  2. ``~/.config/toolsmith/skills``  3. ``<workspace>/.claude/skills``
4. ``<workspace>/.agents/skills``  5. each of ``Config.skill_paths``

so a project can override a user's skill of the same name. Invalid skills are reported with the
reason and skipped, never fatal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import skill_tiers

MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024
NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
SKILL_FILE = "SKILL.md"


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    location: Path  # the SKILL.md file
    body: str

    @property
    def base_dir(self) -> Path:
        return self.location.parent

    @property
    def url(self) -> str:
        return self.location.as_uri()


@dataclass
class Discovery:
    skills: dict[str, Skill] = field(default_factory=dict)
    invalid: list[tuple[Path, str]] = field(default_factory=list)


_FENCE = re.compile(r"^---[ \t]*$", re.M)


def parse_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """The YAML frontmatter (between whole ``---`` lines at the top) and the body after it.

    Agent Skills frontmatter is YAML — lists such as ``allowed-tools``, nested ``metadata``,
    comments, block scalars — so it is parsed with ``yaml.safe_load`` (no tags, no code).
    Raises ValueError saying what is wrong.
    """
    import yaml  # lazy: only skills read YAML

    text = text.lstrip("\ufeff").replace("\r\n", "\n")
    opening = _FENCE.match(text)
    if opening is None:
        raise ValueError("no frontmatter: the file must start with a '---' line")
    closing = _FENCE.search(text, opening.end() + 1)
    if closing is None:
        raise ValueError("frontmatter is not closed by a '---' line")
    block = text[opening.end() + 1 : closing.start()]
    rest = text[closing.end() :]
    body = rest[1:] if rest.startswith("\n") else rest
    try:
        values = yaml.safe_load(block)
    except yaml.YAMLError as exc:
        raise ValueError(f"frontmatter is not valid YAML: {' '.join(str(exc).split())}") from None
    if values is None:
        values = {}
    if not isinstance(values, dict):
        raise ValueError("frontmatter must be a mapping of keys to values")
    return {str(k): v for k, v in values.items()}, body


def load_skill(skill_file: Path) -> Skill:
    """Parse and validate one SKILL.md; ValueError says what is wrong."""
    values, body = parse_frontmatter(skill_file.read_text(encoding="utf-8", errors="replace"))
    name = values.get("name", "")
    description = values.get("description", "")
    if not isinstance(name, str):
        raise ValueError(f"'name' must be a string, not {type(name).__name__}")
    if not isinstance(description, str):
        raise ValueError(f"'description' must be a string, not {type(description).__name__}")
    description = description.strip()
    if not name:
        raise ValueError("frontmatter has no 'name'")
    if len(name) > MAX_NAME_CHARS or not NAME_RE.match(name):
        raise ValueError(f"name {name!r} must be 1-{MAX_NAME_CHARS} characters of a-z, 0-9 and single hyphens")
    if name != skill_file.parent.name:
        raise ValueError(f"name {name!r} does not match its directory {skill_file.parent.name!r}")
    if not description:
        raise ValueError("frontmatter has no 'description'")
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise ValueError(f"description is {len(description)} characters, over {MAX_DESCRIPTION_CHARS}")
    return Skill(name, description, skill_file.resolve(), body)


def discover(workspace: Path, extra: list[Path], home: Path | None = None) -> Discovery:
    found = Discovery()
    for tier in skill_tiers(workspace, extra, home):
        try:
            candidates = sorted(p for p in tier.iterdir() if (p / SKILL_FILE).is_file())
        except OSError:
            continue
        for directory in candidates:
            try:
                skill = load_skill(directory / SKILL_FILE)
            except (ValueError, OSError) as exc:
                found.invalid.append((directory / SKILL_FILE, str(exc)))
                continue
            found.skills[skill.name] = skill
    return found


def available_skills_xml(workspace: Path, extra: list[Path] | None = None, home: Path | None = None) -> str:
    """The ``<available_skills>`` block for a system prompt, with ``file://`` locations."""
    skills = discover(workspace, extra or [], home).skills
    items = [
        "  <skill>\n"
        f"    <name>{_escape(s.name)}</name>\n"
        f"    <description>{_escape(s.description)}</description>\n"
        f"    <location>{_escape(s.url)}</location>\n"
        "  </skill>"
        for s in sorted(skills.values(), key=lambda s: s.name)
    ]
    return "<available_skills>\n" + "".join(item + "\n" for item in items) + "</available_skills>"


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
