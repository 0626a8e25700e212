from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.skills import available_skills_xml, discover, parse_frontmatter

from tests.conftest import make_session


def write_skill(root: Path, name: str, description: str, body: str = "Do the thing.\n", **extra: str) -> Path:
    directory = root / name
    directory.mkdir(parents=True, exist_ok=True)
    head = f"---\nname: {name}\ndescription: {description}\n" + "".join(f"{k}: {v}\n" for k, v in extra.items())
    (directory / "SKILL.md").write_text(head + "---\n" + body, encoding="utf-8")
    return directory


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


def test_tiers_project_overrides_user_and_extra_overrides_all(workspace: Path, home: Path, tmp_path: Path) -> None:
    write_skill(home / ".agents" / "skills", "deploy", "user version")
    write_skill(home / ".config" / "toolsmith" / "skills", "lint", "user lint")
    write_skill(workspace / ".claude" / "skills", "deploy", "claude project version")
    write_skill(workspace / ".agents" / "skills", "deploy", "project version")
    write_skill(tmp_path / "extra", "lint", "extra lint")
    found = discover(workspace, [tmp_path / "extra"])
    assert found.skills["deploy"].description == "project version"
    assert found.skills["lint"].description == "extra lint"


def test_invalid_skills_reported_and_skipped(workspace: Path, home: Path) -> None:
    root = workspace / ".agents" / "skills"
    write_skill(root, "good", "fine")
    write_skill(root, "Bad_Name", "x")
    (root / "mismatch").mkdir()
    (root / "mismatch" / "SKILL.md").write_text("---\nname: other\ndescription: d\n---\n")
    (root / "nofront").mkdir()
    (root / "nofront" / "SKILL.md").write_text("just text\n")
    write_skill(root, "long", "d" * 1025)
    found = discover(workspace, [])
    assert set(found.skills) == {"good"}
    reasons = {path.parent.name: why for path, why in found.invalid}
    assert "a-z" in reasons["Bad_Name"]
    assert "does not match its directory" in reasons["mismatch"]
    assert "no frontmatter" in reasons["nofront"]
    assert "over 1024" in reasons["long"]
    r = asyncio.run(make_session(workspace).run("skill", {"name": "nope"}))
    assert r.is_error and "Available skills: good." in r.content and "Bad_Name" in r.content


def test_frontmatter_bom_crlf_quotes_and_blocks() -> None:
    text = '\ufeff---\r\nname: "my-skill"\r\ndescription: >\r\n  folded\r\n  text\r\n---\r\nBody\r\n'
    values, body = parse_frontmatter(text)
    assert values == {"name": "my-skill", "description": "folded text\n"}  # YAML's folded scalar
    assert body == "Body\n"


def test_frontmatter_is_yaml_and_fences_are_whole_lines() -> None:
    text = (
        "---\n"
        "# a comment\n"
        "name: pdf-tools\n"
        "description: |\n  Extract text.\n  Fill forms.\n"
        "allowed-tools: [bash, view]\n"
        "metadata:\n  version: 2\n  owners:\n    - docs-team\n"
        "note: ---not a fence\n"
        "---\n"
        "Body line\n---more is body text\n"
    )
    values, body = parse_frontmatter(text)
    assert values["description"] == "Extract text.\nFill forms.\n"
    assert values["allowed-tools"] == ["bash", "view"]
    assert values["metadata"] == {"version": 2, "owners": ["docs-team"]}
    assert body == "Body line\n---more is body text\n"
    with pytest.raises(ValueError, match="must start with a '---' line"):
        parse_frontmatter("---x\nname: a\n---\n")
    with pytest.raises(ValueError, match="not closed"):
        parse_frontmatter("---\nname: a\n---not-a-fence\n")
    with pytest.raises(ValueError, match="not valid YAML"):
        parse_frontmatter("---\nname: [unclosed\n---\n")
    with pytest.raises(ValueError, match="must be a mapping"):
        parse_frontmatter("---\n- a list\n---\n")


def test_xml_escapes_and_uses_file_urls(workspace: Path, home: Path) -> None:
    spaced = workspace / "my proj ü"
    spaced.mkdir()
    write_skill(spaced / ".agents" / "skills", "esc", 'Use <b> & "quotes"')
    xml = available_skills_xml(spaced)
    assert '<description>Use &lt;b&gt; &amp; "quotes"</description>' in xml
    assert "<location>file:///" in xml and "my%20proj%20%C3%BC/.agents/skills/esc/SKILL.md</location>" in xml


def test_skill_tool_returns_body_header_and_hidden_files(workspace: Path, home: Path) -> None:
    directory = write_skill(workspace / ".agents" / "skills", "build", "builds", body="Step 1\nStep 2\n")
    (directory / "scripts").mkdir()
    (directory / "scripts" / "run.sh").write_text("echo\n")
    (directory / ".env.example").write_text("A=1\n")
    r = asyncio.run(make_session(workspace, config=Config(lsp_enabled=False)).run("skill", {"name": "build"}))
    assert not r.is_error, r.content
    assert "Location: file://" in r.content and f"Base directory: {directory}" in r.content
    assert "Lines: 2" in r.content and "Step 1\nStep 2" in r.content
    assert "---" not in r.content.split("Lines: 2")[1]
    assert "  .env.example" in r.content and "  scripts/run.sh" in r.content
    assert r.metadata["files"] == [".env.example", "scripts/run.sh"]


def test_long_instructions_are_bounded_with_a_pointer_to_the_rest(workspace: Path, home: Path) -> None:
    body = "".join(f"step {i}: do something useful\n" for i in range(5000))
    directory = write_skill(workspace / ".agents" / "skills", "huge", "big", body=body)
    r = asyncio.run(make_session(workspace).run("skill", {"name": "huge"}))
    assert not r.is_error and len(r.content.encode()) < 60_000
    assert "step 0: do something useful" in r.content and "step 4999" not in r.content
    pointer = r.content.split("read the rest with view ")[1]
    offset = int(pointer.split("offset=")[1].split(".)")[0])
    lines = (directory / "SKILL.md").read_text().split("\n")
    last_shown = [line for line in r.content.split("\n") if line.startswith("step ")][-1]
    assert lines[offset - 1] == last_shown and lines[offset].startswith("step ")
