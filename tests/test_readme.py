"""The README's and docs/'s examples, run: every Python block executes, every JSON block parses,
every TOML block is a valid config file, the CLI tour runs, and every error code is documented."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.config_file import read_config_file
from agent_toolsmith.llm.providers import declarations
from agent_toolsmith.llm.tools.registry import ToolRegistry

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
PAGES = {"README.md": README} | {
    f"docs/{page.name}": page.read_text() for page in sorted((ROOT / "docs").glob("*.md"))
}
#: The README is the front page: what it is, install, a tour and links; detail lives in docs/.
README_MAX_BYTES = 20_000
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)


def code_after(marker: str, language: str, text: str | None = None) -> str:
    texts = [text] if text is not None else list(PAGES.values())
    for page in texts:
        if marker in page:
            found = re.compile(rf"```{language}\n(.*?)```", re.S).search(page, page.index(marker))
            assert found is not None, marker
            return found.group(1)
    raise AssertionError(f"no page has {marker!r}")


def blocks(language: str) -> list[tuple[str, int, str]]:
    """(page, block number, code) of every ``language`` block in the README and docs/."""
    found = []
    for name, text in PAGES.items():
        for number, match in enumerate(m for m in BLOCK.finditer(text) if m.group(1) == language):
            found.append((name, number, match.group(2)))
    return found


def _ids(items: list[tuple[str, int, str]]) -> list[str]:
    return [f"{name}#{number}" for name, number, _ in items]


def test_the_readme_is_a_front_page() -> None:
    assert len(README.encode()) <= README_MAX_BYTES
    for link in re.findall(r"\]\((docs/[\w.-]+\.md)", README):
        assert (ROOT / link).exists() or link in OTHERS_PAGES, link


#: Pages other changes add; the README links them already.
OTHERS_PAGES = {
    "docs/jobs.md", "docs/search.md", "docs/lsp.md", "docs/security.md", "docs/structure.md",
    "docs/notebooks-and-pdfs.md", "docs/cli-session-host.md",
}  # fmt: skip


def test_every_docs_page_says_what_it_is_part_of() -> None:
    for name, text in PAGES.items():
        if name != "README.md":
            assert text.startswith("# ") and "../README.md" in text.split("\n\n")[1], name


PYTHON = blocks("python")


#: A print whose line ends with this comment states the line it prints.
PRINTS = re.compile(r"print\(.*#\s*prints:\s*(.*?)\s*$", re.M)


@pytest.mark.parametrize(("page", "number", "code"), PYTHON, ids=_ids(PYTHON))
def test_every_python_example_runs_and_prints_what_it_says(
    page: str, number: int, code: str, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    namespace: dict[str, Any] = {"__name__": "docs_example"}
    previous = os.getcwd()
    os.chdir(workspace)
    try:
        exec(compile(code, f"{page} block {number}", "exec"), namespace)
    finally:
        os.chdir(previous)
    said = PRINTS.findall(code)
    printed = iter(capsys.readouterr().out.splitlines())
    for expected in said:  # in order, each a whole line of the output
        assert any(line.rstrip() == expected for line in printed), (expected, page)


def test_the_readme_names_every_built_in_tool_once() -> None:
    from agent_toolsmith.llm.tools.builtins import tool_names

    intro = README.split("\n\n")[1]
    listed = re.search(r"`([a-z_ \n]+)`, plus a project's own custom tools", intro)
    assert listed is not None
    assert sorted(listed.group(1).split()) == sorted(tool_names())
    table = README[README.index("## Tools") :].split("\n\n")[1]
    rows = [line.split("|")[1].strip() for line in table.splitlines()[2:]]
    named = [name for row in rows for name in row.split(" / ") if not name.startswith("*")]
    assert len(named) == len(set(named)) and set(named) <= set(tool_names()), named


#: Prose that counts the tools goes stale with the next tool: counts come from the registry.
TOOL_COUNT = re.compile(r"\b(?:all\s+)?(?:\d+|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
                        r"thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty)\s+tools\b", re.I)


def test_no_page_counts_the_tools_in_prose() -> None:
    described = (ROOT / "pyproject.toml").read_text()
    found = {name: TOOL_COUNT.findall(text) for name, text in {**PAGES, "pyproject.toml": described}.items()}
    assert {name: hits for name, hits in found.items() if hits} == {}


JSON = blocks("json")


@pytest.mark.parametrize(("page", "number", "code"), JSON, ids=_ids(JSON))
def test_every_json_example_parses(page: str, number: int, code: str) -> None:
    json.loads(code)


TOML = blocks("toml")


@pytest.mark.parametrize(("page", "number", "code"), TOML, ids=_ids(TOML))
def test_every_toml_example_is_a_valid_config(page: str, number: int, code: str, workspace: Path) -> None:
    path = workspace / "example.toml"
    path.write_text(code)
    Config(**read_config_file(path, workspace))


def test_the_cli_tour_runs(tmp_path: Path) -> None:
    tour = code_after("<!-- cli-tour -->", "sh", README).replace("/tmp/demo", str(tmp_path / "demo"))
    tour = tour.replace("cd /tmp &&", f"cd {tmp_path} &&")
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        ["bash", "-e", "-c", tour], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "demo" / "app.py").read_text() == 'greeting = "hi"\n'
    assert done.stdout.rstrip().endswith(f"{tmp_path}\n1")


def test_the_agent_loop_runs_every_scripted_call(workspace: Path) -> None:
    namespace: dict[str, Any] = {"__name__": "readme_example"}
    exec(compile(code_after("<!-- agent-loop -->", "python"), "docs/embedding.md", "exec"), namespace)
    answer, messages = asyncio.run(namespace["agent"](str(workspace), "Write hello.sh and run it."))
    assert answer == "hello.sh is written and prints its greeting."
    assert (workspace / "hello.sh").read_text() == "echo hello from the agent\n"
    turns = [m["content"] for m in messages if m["role"] == "user" and isinstance(m["content"], list)]
    results = [block for turn in turns for block in turn]
    assert [r["tool_use_id"] for r in results] == ["toolu_1", "toolu_2"]
    assert not any(r.get("is_error") for r in results)
    assert results[1]["content"][0]["text"] == "hello from the agent"


def test_the_openai_declaration_shown_is_what_the_export_gives(tmp_path: Path) -> None:
    shown = json.loads(code_after("The `grep` tool as `--format openai` declares it", "json"))
    (grep,) = [t.info() for t in ToolRegistry.for_workspace(tmp_path, Config()).tools() if t.name == "grep"]
    (exported,) = declarations("openai", [grep])
    assert exported["description"].startswith(shown["description"].removesuffix(" …"))
    assert {**exported, "description": shown["description"]} == shown


def test_the_mcp_client_snippet_is_valid_json() -> None:
    snippet = json.loads(code_after("Add it to an MCP client's configuration", "json", README))
    assert snippet["mcpServers"]["toolsmith"]["command"] == "toolsmith-mcp"


def test_every_error_code_the_source_sets_is_documented() -> None:
    codes: set[str] = set()
    for source in (ROOT / "internal").rglob("*.py"):
        text = source.read_text()
        codes |= set(re.findall(r"""error=["']([a-z][a-z0-9_]*)["']""", text))
        codes |= set(re.findall(r"""["']error["']\s*:\s*["']([a-z][a-z0-9_]*)["']""", text))
        codes |= set(re.findall(r"""^\s+code = ["']([a-z][a-z0-9_]*)["']""", text, re.MULTILINE))  # errors.py
        codes |= set(re.findall(r"""\bcode=["']([a-z][a-z0-9_]*)["']""", text))  # ToolError(..., code="x")
    documented = (ROOT / "docs" / "error-codes.md").read_text()
    missing = sorted(code for code in codes if f"`{code}`" not in documented)
    assert codes and not missing, f"add these codes to docs/error-codes.md: {missing}"
