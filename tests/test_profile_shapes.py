"""What the products' parameters do here: each profile tool driven as a model would, through a
real Session (real processes, a real HTTP server on 127.0.0.1)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.permission import Answer, Answers, QuestionRequest
from agent_toolsmith.session import Session
from agent_toolsmith.truncate import estimate_tokens

#: Every wait in these tests is bounded by this.
WAIT_S = 30.0
PAGE = "# Releases\n\n" + "".join(f"- release {i}: notes\n" for i in range(3000))


class Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_GET(self) -> None:
        body = PAGE.encode() if self.path == "/releases" else f"page {self.path}\n".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/markdown")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def calls(workspace: Path, profile: str, *steps: tuple[str, dict[str, Any]], **options: Any) -> list[Any]:
    """Run ``steps`` in one session of ``profile``; their responses, in order."""

    async def main() -> list[Any]:
        config = Config(lsp_enabled=False, state_dir=workspace.parent / "state")
        async with Session(workspace, config=config, profile=profile, **options) as session:
            return [await session.run(name, params) for name, params in steps]

    result: list[Any] = asyncio.run(asyncio.wait_for(main(), WAIT_S))
    return result


# --- claude -------------------------------------------------------------------------------------


def test_claude_background_output_is_read_from_its_file_with_read(workspace: Path) -> None:
    async def main() -> tuple[Any, Any, Any]:
        config = Config(lsp_enabled=False, state_dir=workspace.parent / "state")
        async with Session(workspace, config=config, profile="claude") as session:
            started = await session.run("Bash", {"command": "echo first; sleep 30", "run_in_background": True})
            output_file = started.metadata["output_file"]
            read = await session.run("Read", {"file_path": output_file})
            for _ in range(600):  # the job writes when it runs: read again until it has (bounded, no sleep)
                if "     1|first" in read.content:
                    break
                await asyncio.sleep(0.05)
                read = await session.run("Read", {"file_path": output_file})
            stopped = await session.run("TaskStop", {"shell_id": "j1"})
            return started, read, stopped

    started, read, stopped = asyncio.run(asyncio.wait_for(main(), WAIT_S))
    assert not started.is_error and "Command running in background with ID: j1" in started.content
    assert f"Output is being written to: {started.metadata['output_file']}" in started.content
    assert not read.is_error and "     1|first" in read.content, read.content
    assert not stopped.is_error and stopped.metadata["state"] != "running"


def test_claude_grep_takes_every_product_option(workspace: Path) -> None:
    (workspace / "a.py").write_text("".join(f"value_{i} = {i}\n" for i in range(400)))
    unlimited, default, noted = calls(workspace, "claude",
        ("Grep", {"pattern": "value_", "output_mode": "content", "head_limit": 0}),
        ("Grep", {"pattern": "value_", "output_mode": "content"}),
        ("Grep", {"pattern": "VALUE_1 ", "-i": True, "-o": True, "-n": False, "context": 1, "output_mode": "content"}),
    )  # fmt: skip
    assert not unlimited.is_error and "Line 400: value_399" in unlimited.content
    assert "Line 250: value_249" in default.content and "Line 251:" not in default.content  # the product's 250
    assert noted.content.startswith("(not supported here: -o — whole matching lines are shown)")
    assert "Line 2: value_1 = 1" in noted.content and "Line 1- value_0" in noted.content  # -i and context


def test_claude_bash_says_what_it_cannot_honour(workspace: Path) -> None:
    sandboxed, too_long = calls(workspace, "claude",
        ("Bash", {"command": "echo ok", "dangerouslyDisableSandbox": True}),
        ("Bash", {"command": "echo ok", "timeout": 700_000}),
    )  # fmt: skip
    assert "not supported here: dangerouslyDisableSandbox" in sandboxed.content and "ok" in sandboxed.content
    assert too_long.is_error and "set run_in_background" in too_long.content


def test_claude_read_allow_large_reads_past_the_page_size(workspace: Path) -> None:
    (workspace / "big.txt").write_text("".join(f"{i:06d} " + "x" * 90 + "\n" for i in range(1500)))  # ~146 KB
    normal, large = calls(workspace, "claude",
        ("Read", {"file_path": "big.txt"}), ("Read", {"file_path": "big.txt", "allow_large": True}),
    )  # fmt: skip
    assert "001499 " not in normal.content and "001499 " in large.content


def test_webfetch_restates_the_prompt_and_reads_on_with_offset(workspace: Path, server: str) -> None:
    first, = calls(workspace, "claude", ("WebFetch", {"url": f"{server}/releases", "prompt": "Which is newest?"}))
    assert not first.is_error and first.content.startswith("Prompt: Which is newest?")
    assert "release 0: notes" in first.content and first.metadata["prompt_applied"] is False
    offset = int(first.content.rsplit("offset=", 1)[1].split(" ")[0].rstrip("."))
    assert offset < len(PAGE)
    rest, = calls(workspace, "claude", ("WebFetch", {"url": f"{server}/releases", "prompt": "x", "offset": offset}))
    assert "release 2999: notes" in rest.content and "offset=" not in rest.content.split("\n")[-1]


def test_webfetch_and_web_fetch_use_the_hosts_model_when_given(workspace: Path, server: str) -> None:
    seen: list[tuple[str, str, str]] = []

    async def model(prompt: str, url: str, page: str) -> str:
        seen.append((prompt, url, page))
        return f"{len(page)} characters read"

    claude, = calls(workspace, "claude", ("WebFetch", {"url": f"{server}/releases", "prompt": "newest?"}),
                    web_prompt=model)  # fmt: skip
    gemini, = calls(workspace, "gemini", ("web_fetch", {"prompt": f"Compare {server}/a and {server}/b."}),
                    web_prompt=model)  # fmt: skip
    assert claude.content == f"{len(PAGE)} characters read" and seen[0][2] == PAGE
    assert seen[1][1] == f"{server}/a {server}/b" and "page /a" in seen[1][2] and "page /b" in seen[1][2]
    assert not gemini.is_error


def test_ask_user_question_reaches_the_host_or_uses_the_given_answers(workspace: Path) -> None:
    asked: list[QuestionRequest] = []

    async def host(request: QuestionRequest) -> Answers:
        asked.append(request)
        return Answers((Answer(("Vitest",)),))

    question = {"question": "Which test runner?", "header": "Runner", "multiSelect": False, "options": [
        {"label": "Vitest", "description": "fast", "preview": "vitest run"}, {"label": "Jest", "description": "old"}]}
    asked_now, given = calls(workspace, "claude",
        ("AskUserQuestion", {"questions": [question]}),
        ("AskUserQuestion", {"questions": [question], "answers": {"Which test runner?": "Jest"},
                             "annotations": {"Which test runner?": {"notes": "we have jest configs"}}}),
        ask_user=host,
    )  # fmt: skip
    assert "→ Vitest" in asked_now.content and len(asked) == 1  # the given answers were not asked again
    assert asked[0].questions[0].choices[0].description == "fast\n\nvitest run"
    assert "→ Jest (notes: we have jest configs)" in given.content


# --- codex --------------------------------------------------------------------------------------


def test_codex_counts_from_the_whole_output(workspace: Path) -> None:
    done, = calls(workspace, "codex", ("exec_command", {"cmd": "seq 1 50000", "max_output_tokens": 200}))
    whole = "".join(f"{i}\n" for i in range(1, 50001))
    assert f"Original token count: {estimate_tokens(whole)}" in done.content  # ≈ 72 000, not of a 30 000-char cut
    shown = done.content.split("Output:\n", 1)[1]
    dropped = int(shown.split("... [", 1)[1].split(" lines truncated", 1)[0])
    kept = len([line for line in shown.split("\n") if line.isdigit()])
    assert dropped + kept == 50000


def test_codex_sessions_are_numbers_and_apply_patch_needs_no_read(workspace: Path) -> None:
    (workspace / "a.txt").write_text("one\n")
    started, answered, refused, patched = calls(workspace, "codex",
        ("exec_command", {"cmd": "read x; echo got $x", "yield_time_ms": 200}),
        ("write_stdin", {"session_id": 1, "chars": "hi\n", "yield_time_ms": 5000}),
        ("write_stdin", {"session_id": "j1"}),
        ("apply_patch", {"input": "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+two\n*** End Patch\n"}),
    )  # fmt: skip
    assert "Process running with session ID 1" in started.content and started.metadata["session_id"] == 1
    assert "got hi" in answered.content and "Process exited with code 0" in answered.content
    assert refused.is_error and "'session_id' must be an integer" in refused.content
    assert not patched.is_error and (workspace / "a.txt").read_text() == "two\n"


def test_codex_shells_plan_and_escalation(workspace: Path) -> None:
    (workspace / "sub").mkdir()
    shell, shell_command, escalated, plan = calls(workspace, "codex",
        ("shell", {"command": ["bash", "-lc", "pwd"], "workdir": "sub"}),
        ("shell_command", {"command": "echo $((6*7))"}),
        ("shell_command", {"command": "true", "sandbox_permissions": "require_escalated", "justification": "x"}),
        ("update_plan", {"explanation": "start", "plan": [{"step": "read", "status": "in_progress"}]}),
    )  # fmt: skip
    assert shell.content.strip().endswith("/sub") and "42" in shell_command.content
    assert "not supported here: sandbox_permissions=require_escalated" in escalated.content
    assert plan.metadata["plan"] == [{"content": "read", "status": "in_progress"}]


def test_codex_list_dir_pages_entries(workspace: Path) -> None:
    for name in "abcde":
        (workspace / f"{name}.txt").write_text("x")
    first, second = calls(workspace, "codex",
        ("list_dir", {"dir_path": str(workspace), "limit": 2}),
        ("list_dir", {"dir_path": str(workspace), "offset": 3, "limit": 2}),
    )  # fmt: skip
    assert "a.txt" in first.content and "b.txt" in first.content and "c.txt" not in first.content
    assert "Use offset=3" in first.content
    assert "c.txt" in second.content and "d.txt" in second.content and "a.txt" not in second.content


# --- gemini -------------------------------------------------------------------------------------


def test_gemini_tools_take_the_products_shapes(workspace: Path) -> None:
    (workspace / "m.py").write_text("".join(f"line {i}\n" for i in range(1, 21)))
    read, replaced, found, todos, listed = calls(workspace, "gemini",
        ("read_file", {"file_path": "m.py", "start_line": 5, "end_line": 6}),
        ("replace", {"file_path": "m.py", "instruction": "rename", "old_string": "line 7\n", "new_string": "LINE 7\n"}),
        ("grep_search", {"pattern": "LINE 7", "names_only": True}),
        ("write_todos", {"todos": [{"description": "wait for review", "status": "blocked"}]}),
        ("list_directory", {"dir_path": ".", "file_filtering_options": {"respect_git_ignore": False}}),
    )  # fmt: skip
    assert "     5|line 5\n     6|line 6\n</file>" in read.content
    assert not replaced.is_error  # no read_file of line 7 needed first, as in the product
    assert "m.py" in found.content  # case-insensitive by default, as the product
    assert "not supported here: status blocked" in todos.content and todos.metadata["plan"][0]["status"] == "pending"
    assert "not supported here: respect_git_ignore: false" in listed.content and "m.py" in listed.content


def test_gemini_background_command_and_missing_url(workspace: Path) -> None:
    started, no_url = calls(workspace, "gemini",
        ("run_shell_command", {"command": "echo up; sleep 30", "is_background": True, "delay_ms": 2000}),
        ("web_fetch", {"prompt": "summarize the docs"}),
    )  # fmt: skip
    assert "moved to the background" in started.content and "up" in started.content
    assert no_url.is_error and "names no URL" in no_url.content
