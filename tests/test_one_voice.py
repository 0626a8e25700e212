"""One voice per profile: every message a profile's tools return — errors, hints, continuations,
job notices — names only that profile's tools, and content is never rewritten (a file line that
says ``offset=5`` reads back as it is). Each profile's tools are driven through their error and
notice paths in a real session; a test fails on any tool name the profile does not offer."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.llm.profiles import profile_tools
from agent_toolsmith.llm.tools.builtins import tool_names
from agent_toolsmith.session import Session

#: Every wait in these tests is bounded by this.
WAIT_S = 60.0
PROFILES = ("claude", "codex", "gemini")
LINE = "# Use offset=5 to continue reading"
NOTEBOOK = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def every_tool_name() -> set[str]:
    return {*tool_names(), *(name for profile in PROFILES for name in profile_tools(profile))}


def foreign_names(profile: str, text: str) -> list[str]:
    """Tool names in ``text`` that ``profile`` does not offer, where the text names a tool (not
    where a word like "read" or "edit" is only a verb): after use/with/call, as "the X tool", in
    call syntax, or anywhere for a name no prose has (job_output, read_file)."""
    own = set(profile_tools(profile))
    found = []
    for name in sorted(every_tool_name() - own):
        n = re.escape(name)
        patterns = [rf"\b(?:use|Use|with|call|Call)\s+(?:the\s+)?`?{n}`?\b", rf"\bthe\s+`?{n}`?\s+tool\b",
                    rf"\b{n}\s*\{{"]  # fmt: skip
        if "_" in name:
            patterns.append(rf"(?<![\w/.-]){n}(?![\w/.-])")
        if any(re.search(pattern, text) for pattern in patterns):
            found.append(name)
    return found


def foreign_params(profile: str, text: str) -> list[str]:
    """Parameters a hint tells the model to set ("set X to true", "Use X=N", "Use X below N") that
    no tool of ``profile`` takes."""
    own = {name for tool in profile_tools(profile).values() for name in tool.info().parameters["properties"]}
    named = re.findall(r"\bset (\S+) to true", text) + re.findall(r"\bUse (\w+)(?:=\d| below \d)", text)
    return [name for name in named if name not in own]


def drive(workspace: Path, profile: str, steps: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, Any]]:
    async def main() -> list[tuple[str, Any]]:
        config = Config(lsp_enabled=False, state_dir=workspace.parent / "state")
        async with Session(workspace, config=config, profile=profile) as session:
            return [(name, await session.run(name, params)) for name, params in steps]

    result: list[tuple[str, Any]] = asyncio.run(asyncio.wait_for(main(), WAIT_S))
    return result


def files(workspace: Path) -> None:
    (workspace / "long.txt").write_text("".join(f"entry {i}\n" for i in range(3000)))
    (workspace / "twice.txt").write_text("same\nsame\n")
    (workspace / "unread.txt").write_text("alpha\n")
    (workspace / "sub").mkdir()
    (workspace / "n.ipynb").write_text(json.dumps(NOTEBOOK))


BIG = "seq 1 400000"
SLOW = "sleep 5"

STEPS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "claude": [
        ("Read", {"file_path": "missing.txt"}), ("Read", {"file_path": "sub"}), ("Read", {"file_path": "long.txt"}),
        ("Read", {"file_path": "long.txt", "offset": 5000}), ("Read", {"file_path": "long.txt", "pages": "1"}),
        ("Edit", {"file_path": "unread.txt", "old_string": "alpha", "new_string": "beta"}),
        ("Write", {"file_path": "unread.txt", "content": "x\n"}),
        ("Read", {"file_path": "twice.txt"}),
        ("Edit", {"file_path": "twice.txt", "old_string": "nowhere", "new_string": "x"}),
        ("Edit", {"file_path": "twice.txt", "old_string": "same", "new_string": "x"}),
        ("Edit", {"file_path": "twice.txt", "old_string": "", "new_string": "x"}),
        ("NotebookEdit", {"notebook_path": "twice.txt", "new_source": "x"}),
        ("Bash", {"command": SLOW, "timeout": 200}), ("Bash", {"command": BIG}), ("Bash", {"command": "vim"}),
        ("TaskStop", {"task_id": "j9"}), ("Grep", {"pattern": "(", "output_mode": "content"}),
        ("Glob", {"pattern": "*", "path": "long.txt"}), ("WebFetch", {"url": "ftp://x", "prompt": "p"}),
        ("AskUserQuestion", {"questions": [{"question": "q?", "header": "h", "multiSelect": False, "options": [
            {"label": "a", "description": "A"}, {"label": "b", "description": "B"}]}]}),
    ],
    "codex": [
        ("read_file", {"file_path": "missing.txt"}), ("read_file", {"file_path": "sub"}),
        ("read_file", {"file_path": "long.txt"}), ("read_file", {"file_path": "long.txt", "offset": 5000}),
        ("apply_patch", {"input": "*** Begin Patch\n*** Update File: twice.txt\n@@\n-nowhere\n+x\n*** End Patch\n"}),
        ("apply_patch", {"input": "*** Begin Patch\n*** Add File: twice.txt\n+x\n*** End Patch\n"}),
        ("shell_command", {"command": SLOW, "timeout_ms": 200}), ("shell", {"command": ["bash", "-lc", BIG]}),
        ("shell_command", {"command": "vim"}), ("write_stdin", {"session_id": 9}),
        ("exec_command", {"cmd": BIG, "max_output_tokens": 50}),
        ("list_dir", {"dir_path": "long.txt"}), ("grep_files", {"pattern": "("}),
        ("request_user_input", {"questions": [{"id": "q", "header": "h", "question": "q?", "options": []}]}),
    ],
    "gemini": [
        ("read_file", {"file_path": "missing.txt"}), ("read_file", {"file_path": "sub"}),
        ("read_file", {"file_path": "long.txt"}), ("read_file", {"file_path": "long.txt", "start_line": 5000}),
        ("replace", {"file_path": "twice.txt", "instruction": "i", "old_string": "nowhere", "new_string": "x"}),
        ("replace", {"file_path": "twice.txt", "instruction": "i", "old_string": "same", "new_string": "x"}),
        ("replace", {"file_path": "twice.txt", "instruction": "i", "old_string": "", "new_string": "x"}),
        ("run_shell_command", {"command": BIG}), ("run_shell_command", {"command": "vim"}),
        ("list_directory", {"dir_path": "long.txt"}), ("read_many_files", {"include": ["nothing/*.zz"]}),
        ("grep_search", {"pattern": "("}), ("glob", {"pattern": "*", "dir_path": "long.txt"}),
        ("web_fetch", {"prompt": "no url here"}),
        ("ask_user", {"questions": [{"question": "q?", "header": "h", "type": "text"}]}),
    ],
}  # fmt: skip


@pytest.mark.parametrize("profile", PROFILES)
def test_a_profiles_messages_name_only_its_own_tools(workspace: Path, profile: str) -> None:
    files(workspace)
    results = drive(workspace, profile, STEPS[profile])
    noticed = 0
    for name, response in results:
        text = response.content.replace(str(workspace), "WS")
        assert foreign_names(profile, text) == [], (name, text[-600:])
        assert foreign_params(profile, text) == [], (name, text[-600:])
        noticed += response.is_error or "continue" in text or "truncated" in text or "Output was" in text
    assert noticed >= len(results) - 2, [r.content[:80] for _, r in results]  # the paths were taken


def test_the_detector_finds_what_it_should(workspace: Path) -> None:
    assert foreign_names("claude", "You must read the file before editing it. Use the view tool first.") == ["view"]
    assert foreign_names("claude", "read its output with job_output.") == ["job_output"]
    assert foreign_names("codex", "Read it again before editing.") == []  # a verb, not claude's Read
    assert foreign_names("gemini", "Use the read_file tool first.") == []
    assert foreign_params("gemini", "or set replace_all to true.") == ["replace_all"]
    assert foreign_params("gemini", "Use start_line=5 to continue reading.") == []


@pytest.mark.parametrize(("profile", "tool", "key"), [("claude", "Read", "offset"), ("codex", "read_file", "offset"),
                                                      ("gemini", "read_file", "start_line")])  # fmt: skip
def test_a_file_line_saying_offset_reads_back_verbatim(workspace: Path, profile: str, tool: str, key: str) -> None:
    (workspace / "notes.py").write_text("".join(f"{LINE}\n" if i == 2 else f"x = {i}\n" for i in range(1, 11)))
    (read,) = [r for _, r in drive(workspace, profile, [(tool, {"file_path": "notes.py", key: 1, "limit": 4}
                                                              if profile != "gemini" else
                                                              {"file_path": "notes.py", key: 1, "end_line": 4})])]
    assert f"     2|{LINE}\n" in read.content  # the file's own text, as it is
    assert read.content.rstrip().endswith(f"Use {key}=5 to continue reading.)")  # the footer: the next line, 1-based
