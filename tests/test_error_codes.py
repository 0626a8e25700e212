"""docs/error-codes.md held by real calls, both ways: one failing call per code the table lists
(through ``Session.run``, checking the code and that the table's "where" column names the tool),
and every code a call produced is in the table. A code this test cannot produce without the
machinery of another suite (an MCP HTTP server, a language server, a session host) must be
asserted by name in that suite (a test file quotes it)."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.errors import ToolError
from agent_toolsmith.llm.tools.builtins import tool_names
from agent_toolsmith.permission import Decision, PermissionRequest, ToolPolicy
from agent_toolsmith.session import Session

ROOT = Path(__file__).resolve().parent.parent
MARKER_SERVER = ROOT / "testdata" / "lsp" / "marker_server.py"
TABLE = (ROOT / "docs" / "error-codes.md").read_text()
#: code → its "where" column.
ROWS = dict(re.findall(r"^\| `([a-z_]+)` \| ([^|]+) \|", TABLE, re.MULTILINE))
WRITERS = {"write", "edit", "multiedit", "patch", "notebook_edit", "symbol_edit", "lsp"}
#: The table's words for groups of tools.
GROUPS = {
    "the writing tools": WRITERS, "the editing tools": WRITERS - {"write", "lsp"},
    "every tool": set(tool_names()), "every tool taking a path": set(tool_names()),
    "every tool that asks": set(tool_names()), "every front door": set(tool_names()),
}  # fmt: skip

#: Codes a call of this file cannot produce; the suite that does (a file quoting the code).
ELSEWHERE = {
    "no_session": "tests/integration",
    "session_host_lost": "tests", "unsafe_state_dir": "tests/reliability",
    "search_timed_out": "tests", "type_needs_rg": "tests", "modified_while_saving": "tests",
    "pdf_too_complex": "tests/reliability/test_document_bombs.py", "parse_failed": "tests/syntax",
    "checkpoint_log_unusable": "tests/test_checkpoints.py", "cannot_ask": "tests/tools/test_plan_question.py",
    "no_answer": "tests/tools/test_plan_question.py", "function_error": "tests/tools/test_function_tools.py",
    "rename_nothing": "tests/integration", "rename_file_operation": "tests", "rename_not_file": "tests",
    "rename_out_of_range": "tests", "rename_stale": "tests/integration", "rename_overlapping_edits": "tests",
}  # fmt: skip
#: Documented codes no test produces, and why (each is set where the fact is found).
UNPRODUCED = {
    "permission_denied": "the tests run as root here, whom file modes do not stop",
    "no_space": "a full disk", "read_only_file_system": "a read-only mount", "os_error": "any other OS error",
    "path_too_long": "resolve() refuses an over-long path first (invalid_path)",
    "job_not_started": "the OS refusing to start a process (out of PIDs or memory)",
    "conversion_failed": "the page-conversion child process dying",
    "too_many_sessions": "a backstop: the initialize past --max-sessions is refused first (HTTP 503, which "
                         "tests/reliability/test_mcp_http_abuse.py checks)",
    "input_required": "never a client's: the MCP server answers it with an InputRequiredResult "
                      "(tests/integration/test_mcp_user.py drives that round trip)",
}  # fmt: skip


@dataclass
class Case:
    code: str
    tool: str
    params: dict[str, Any]
    setup: Callable[[Path], None] = lambda _ws: None
    #: Calls made first (views, a job started), in the same session.
    before: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    session: dict[str, Any] = field(default_factory=dict)


def _files(files: dict[str, str | bytes]) -> Callable[[Path], None]:
    def make(ws: Path) -> None:
        for name, content in files.items():
            path = ws / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content if isinstance(content, bytes) else content.encode())

    return make


async def _deny_writes(request: PermissionRequest) -> Decision:
    return Decision.DENY if request.action == "write" else Decision.ALLOW_ONCE


def _nested_notebook(ws: Path) -> None:
    (ws / "deep.ipynb").write_text("[" * 100_000 + "]" * 100_000)


def _read_only(ws: Path) -> None:
    (ws / "ro.py").write_text("x = 1\n")
    os.chmod(ws / "ro.py", 0o444)


VIEW_A = [("view", {"file_path": "a.py"})]
CASES = [
    Case("invalid_params", "view", {}),
    Case("unknown_tool", "nope", {}),
    Case("not_found", "view", {"file_path": "missing.txt"}),
    Case("invalid_path", "view", {"file_path": "a\0b"}),
    Case("is_directory", "view", {"file_path": "."}),
    Case("offset_out_of_range", "view", {"file_path": "a.py", "offset": 100}, _files({"a.py": "x = 1\n"})),
    Case("not_regular_file", "view", {"file_path": "fifo"}, lambda ws: os.mkfifo(ws / "fifo")),
    Case("file_too_large", "view", {"file_path": "big.png"}, _files({"big.png": b"\x89PNG" + b"\0" * (6 << 20)})),
    Case("not_read", "edit", {"file_path": "a.py", "old_string": "1", "new_string": "2"}, _files({"a.py": "x = 1\n"})),
    Case("no_match", "edit", {"file_path": "a.py", "old_string": "zzz", "new_string": "2"}, _files({"a.py": "x = 1\n"}),
         VIEW_A),
    Case("ambiguous_match", "edit", {"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"},
         _files({"a.py": "x = 1\nx = 1\n"}), VIEW_A),
    Case("syntax_error", "edit", {"file_path": "a.py", "old_string": "x = 1", "new_string": "x = (1"},
         _files({"a.py": "x = 1\n"}), VIEW_A),
    Case("file_exists", "edit", {"file_path": "a.py", "old_string": "", "new_string": "y = 2\n"},
         _files({"a.py": "x\n"})),
    Case("no_change", "write", {"file_path": "a.py", "content": "x = 1\n"}, _files({"a.py": "x = 1\n"}), VIEW_A),
    Case("denied", "write", {"file_path": "a.py", "content": "y = 2\n"}, _files({"a.py": "x = 1\n"}), VIEW_A,
         session={"asker": _deny_writes}),
    Case("tool_not_offered", "write", {"file_path": "a.py", "content": "y\n"}, session={"tool_policy": "read_only"}),
    Case("outside_workspace", "write", {"file_path": "/tmp/toolsmith-error-codes-outside.txt", "content": "x\n"}),
    Case("protected_path", "write", {"file_path": ".git/config", "content": "x\n"}),
    Case("read_only_file", "edit", {"file_path": "ro.py", "old_string": "1", "new_string": "2"}, _read_only,
         [("view", {"file_path": "ro.py"})]),
    Case("binary_file", "outline", {"path": "blob.py"}, _files({"blob.py": b"\0\1\2\3" * 100})),
    Case("too_large", "outline", {"path": "big.py"}, _files({"big.py": "x = 1\n" * 700_000})),
    Case("unsupported_language", "outline", {"path": "notes.txt"}, _files({"notes.txt": "hello\n"})),
    Case("symbol_not_found", "symbol_edit", {"file_path": "a.py", "symbol": "nope", "action": "delete"},
         _files({"a.py": "def f():\n    pass\n"}), VIEW_A),
    Case("ambiguous_symbol", "symbol_edit", {"file_path": "a.py", "symbol": "m", "action": "delete"},
         _files({"a.py": "class A:\n    def m(self): pass\n\n\nclass B:\n    def m(self): pass\n"}), VIEW_A),
    Case("not_a_notebook", "notebook_edit", {"file_path": "a.py", "new_source": "x"}, _files({"a.py": "x\n"})),
    Case("invalid_source", "notebook_edit", {"file_path": "n.ipynb", "new_source": "\ud800"}),
    Case("notebook_too_deep", "view", {"file_path": "deep.ipynb"}, _nested_notebook),
    Case("invalid_regex", "grep", {"pattern": "("}),
    Case("unknown_type", "grep", {"pattern": "x", "type": "nosuchtype"}),
    Case("offset_out_of_range", "grep", {"pattern": "x", "offset": 500}, _files({"a.py": "x\n"})),
    Case("not_a_directory", "glob", {"pattern": "*", "path": "a.py"}, _files({"a.py": "x\n"})),
    Case("too_many_paths", "read_many", {"paths": [f"f{i}" for i in range(101)]}),
    Case("nothing_read", "read_many", {"paths": ["missing.txt"]}),
    Case("unknown_job", "job_output", {"job_id": "j99"}),
    Case("tty_needs_background", "bash", {"command": "true", "tty": True}),
    Case("timed_out", "bash", {"command": "sleep 30", "timeout": 1000}),
    Case("command_refused", "bash", {"command": "vim notes.txt"}),
    Case("command_too_large", "bash", {"command": "#" * 100_001}),
    Case("invalid_command", "bash", {"command": "echo \0"}),
    Case("too_many_jobs", "bash", {"command": "sleep 30", "run_in_background": True},
         before=[("bash", {"command": "sleep 30", "run_in_background": True})], config={"max_jobs": 1}),
    Case("input_too_large", "job_input", {"job_id": "j1", "text": "x" * (64 * 1024 + 1)},
         before=[("bash", {"command": "cat", "run_in_background": True})]),
    Case("job_ended", "job_input", {"job_id": "j1", "text": "x"},
         before=[("bash", {"command": "true", "run_in_background": True}),
                 ("job_output", {"job_id": "j1", "wait_ms": 10_000})]),
    Case("invalid_url", "fetch", {"url": "ftp://example.com/x"}),
    Case("fetch_failed", "fetch", {"url": "http://127.0.0.1:1/"}),
    Case("private_address", "fetch", {"url": "http://127.0.0.1:1/"}, config={"block_private_networks": True}),
    Case("unknown_skill", "skill", {"name": "nope"}),
    Case("lsp_unavailable", "lsp", {"file_path": "a.py"}, _files({"a.py": "x = 1\n"})),
    Case("position_and_symbol", "lsp", {"file_path": "a.py", "operation": "hover", "symbol": "x", "line": 1,
                                        "character": 1}, _files({"a.py": "x = 1\n"}), config={"lsp_enabled": True}),
    Case("missing_new_name", "lsp", {"file_path": "a.py", "operation": "rename", "line": 1, "character": 1},
         _files({"a.py": "x = 1\n"}), config={"lsp_enabled": True}),
    Case("symlink_loop", "view", {"file_path": "loop"}, lambda ws: (os.symlink("loop2", ws / "loop"),
                                                                  os.symlink("loop", ws / "loop2"))),
    Case("unreadable_file", "view", {"file_path": "/proc/self/mem"}),
    Case("search_failed", "grep", {"pattern": "x", "include": "a{b"}, _files({"a.py": "x\n"})),
    Case("http_error", "fetch", {"url": "URL/missing"}),
    Case("too_many_redirects", "fetch", {"url": "URL/loop"}),
    Case("response_too_large", "fetch", {"url": "URL/huge"}),
    Case("binary_content", "fetch", {"url": "URL/image"}),
    Case("undecodable_file", "view", {"file_path": "l.py"}, _files({"l.py": b"\xef\xbb\xbfx = \xff\n"})),
    Case("unencodable_text", "edit", {"file_path": "l.py", "old_string": "x = 1", "new_string": "x = '\u2603'"},
         _files({"l.py": b"# -*- coding: latin-1 -*-\nx = 1\n"}), [("view", {"file_path": "l.py"})]),
    Case("invalid_patch", "patch", {"patch_text": "this is not a patch"}),
    Case("patch_misplaced", "patch", {"patch_text": "*** Begin Patch\n*** Update File: a.py\n@@\n-c = 3\n+c = 4\n"
                                                    "@@\n-a = 1\n+a = 2\n*** End Patch"},
         _files({"a.py": "a = 1\nb = 2\nc = 3\n"}), VIEW_A),
    Case("indentation_mismatch", "edit", {"file_path": "a.py", "old_string": "    x = 1\n    y = 2",
                                          "new_string": "    x = 3\ny = 4"},
         _files({"a.py": "x = 1\ny = 2\n"}), VIEW_A),
    Case("changed_since_read", "edit", {"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"},
         _files({"a.py": "x = 1\n"}), [*VIEW_A, ("bash", {"command": "echo 'x = 11' > a.py"})]),
    Case("symbol_unsupported", "lsp", {"file_path": "a.mark", "operation": "hover", "symbol": "x"},
         _files({"a.mark": "def x\n"}), config={"lsp_enabled": True, "lsp_servers": {"marker": {
             "command": ["env", "NO_SYMBOLS=1", sys.executable, str(MARKER_SERVER)], "extensions": [".mark"]}}}),
    Case("lsp_failed", "lsp", {"file_path": "a.mark", "operation": "hover", "line": 1, "character": 1},
         _files({"a.mark": "def x\n"}), config={"lsp_enabled": True, "lsp_servers": {"marker": {
             "command": ["env", "NO_NAV=1", sys.executable, str(MARKER_SERVER)], "extensions": [".mark"]}}}),
    Case("open_for_writing", "edit", {"file_path": "held.py", "old_string": "1", "new_string": "2"},
         _files({"held.py": "x = 1\n"}), [("view", {"file_path": "held.py"})]),
]  # fmt: skip


class _Pages(BaseHTTPRequestHandler):
    """A loopback server for fetch's failures."""

    def do_GET(self) -> None:
        if self.path == "/loop":
            self.send_response(302)
            self.send_header("Location", "/loop")
            self.end_headers()
        elif self.path == "/huge":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(6 * 1024 * 1024))
            self.end_headers()
        elif self.path == "/image":
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", "4")
            self.end_headers()
            self.wfile.write(b"\x89PNG")
        else:
            self.send_error(404, "Not Found")

    def log_message(self, *args: Any) -> None:
        return None


@pytest.fixture(scope="module")
def pages() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join(10)


async def _run(case: Case, ws: Path) -> tuple[Any, Any]:
    kwargs: dict[str, Any] = dict(case.session)
    if kwargs.get("tool_policy") == "read_only":
        kwargs["tool_policy"] = ToolPolicy(read_only=True)
    config = Config(**{"lsp_enabled": False, **case.config})
    async with Session(ws, config=config, **kwargs) as session:
        for tool, params in case.before:
            await session.run(tool, params)
        held = open(ws / "held.py", "a") if case.code == "open_for_writing" else None  # noqa: SIM115
        try:
            return await asyncio.wait_for(session.run(case.tool, case.params), 60), session
        finally:
            if held is not None:
                held.close()


def _where(code: str) -> set[str]:
    """The tools the table's "where" column names for ``code``."""
    named: set[str] = set()
    for part in re.split(r",|\band\b|;", re.sub(r"\([^)]*\)", "", ROWS[code])):
        words = part.strip().strip("`")
        named |= GROUPS.get(words, {words} if words in tool_names() else set())
    return named


@pytest.mark.parametrize("case", CASES, ids=[f"{c.code}-{c.tool}" for c in CASES])
def test_each_documented_code_is_what_its_failing_call_answers(case: Case, workspace: Path, pages: str) -> None:
    case.setup(workspace)
    case.params = json.loads(json.dumps(case.params).replace('"URL/', f'"{pages}/'))
    response, _ = asyncio.run(_run(case, workspace))
    assert response.is_error and response.metadata.get("error") == case.code, response.content[:500]
    assert case.code in ROWS, f"{case.code} is not in docs/error-codes.md"
    if case.tool in tool_names() and case.code not in {"unknown_tool"}:
        assert case.tool in _where(case.code), f"docs/error-codes.md: {case.code}'s row does not name {case.tool}"


def test_the_session_level_codes(workspace: Path) -> None:
    async def main() -> None:
        async with Session(workspace, config=Config(lsp_enabled=False)) as session:
            with pytest.raises(ToolError) as raised:
                await session.rewind("nope")
            assert raised.value.metadata["error"] == "unknown_checkpoint"

    asyncio.run(main())


def test_an_unexpected_exception_is_an_internal_error(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_toolsmith.llm.tools import view

    async def boom(params: Any, ctx: Any) -> Any:
        raise RuntimeError("kaboom")

    monkeypatch.setattr(view.TOOL, "run", boom)
    response, _ = asyncio.run(_run(Case("internal_error", "view", {"file_path": "x"}), workspace))
    assert response.metadata["error"] == "internal_error" and "kaboom" in response.content


def test_a_writer_held_back_by_another_lock_holder(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_toolsmith.fsutil import anchored

    monkeypatch.setattr(anchored, "LOCK_TIMEOUT_S", 0.5)
    (workspace / "a.py").write_text("x = 1\n")
    fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another writer (another process would hold it the same way)
        case = Case("lock_timeout", "edit", {"file_path": "a.py", "old_string": "1", "new_string": "2"}, before=VIEW_A)
        response, _ = asyncio.run(_run(case, workspace))
    finally:
        os.close(fd)
    assert response.metadata.get("error") == "lock_timeout", response.content
    assert "edit" in _where("lock_timeout")


def test_a_tool_whose_package_is_missing(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_toolsmith.llm.tools import fetch

    async def missing(params: Any, ctx: Any) -> Any:
        raise ModuleNotFoundError("No module named 'httpx'", name="httpx")

    monkeypatch.setattr(fetch.TOOL, "run", missing)
    response, _ = asyncio.run(_run(Case("missing_dependency", "fetch", {"url": "http://x"}), workspace))
    assert response.metadata.get("error") == "missing_dependency" and "httpx" in response.content


def test_the_sandbox_without_bubblewrap(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(workspace))  # no bwrap on it
    case = Case("sandbox_unavailable", "bash", {"command": "true"}, config={"bash_sandbox": True})
    response, _ = asyncio.run(_run(case, workspace))
    assert response.metadata.get("error") == "sandbox_unavailable", response.content
    assert "bash" in _where("sandbox_unavailable")


def test_the_mechanisms_own_refusals(workspace: Path) -> None:
    """Codes set inside a mechanism for a race no call can stage deterministically."""
    from agent_toolsmith.fsutil.commit import Change, commit
    from agent_toolsmith.fsutil.paths import open_regular_file

    (workspace / "a.py").write_text("x = 1\n")
    with pytest.raises(ToolError) as swapped:  # the file opened is not the one approved
        open_regular_file(workspace / "a.py", allowed=lambda _real: False)
    assert swapped.value.metadata["error"] == "path_changed"
    (workspace / "target.py").write_text("y\n")
    os.symlink("target.py", workspace / "link.py")
    move = Change("move", workspace / "moved.py", b"z\n", b"y\n", source=workspace / "link.py")
    with pytest.raises(ToolError) as moved:  # a symlink's move cannot carry its target's new content
        commit([move], roots=[workspace], journal_dir=workspace.parent / "journal", workspace=workspace)
    assert moved.value.metadata["error"] == "unsupported_change"


def test_every_os_error_code_is_documented() -> None:
    import errno

    from agent_toolsmith.fsutil.paths import os_error_code

    codes = {os_error_code(OSError(number, "x")) for number in errno.errorcode}
    assert codes - set(ROWS) == set()


def test_every_documented_code_is_produced_here_or_asserted_elsewhere() -> None:
    driven = {case.code for case in CASES} | {
        "unknown_checkpoint", "internal_error", "lock_timeout", "missing_dependency", "sandbox_unavailable",
        "path_changed", "unsupported_change",
    }  # fmt: skip
    left = set(ROWS) - driven - set(UNPRODUCED)
    assert left <= set(ELSEWHERE), f"no call produces these documented codes: {sorted(left - set(ELSEWHERE))}"
    for code in left:
        where = ROOT / ELSEWHERE[code]
        files = [where] if where.is_file() else sorted(where.rglob("test_*.py"))
        quoted = any(re.search(rf"""["']{code}["']""", f.read_text()) for f in files if f != Path(__file__))
        assert quoted, f"{code}: no test in {ELSEWHERE[code]} asserts it"
    assert not set(ELSEWHERE) & driven, "a code driven here need not be listed as elsewhere"
    assert not set(UNPRODUCED) & (driven | set(ELSEWHERE)), "a produced code is not unproduced"
    assert len(UNPRODUCED) <= 10, "produce these codes in a test rather than list them"
    assert json.dumps(sorted(ROWS))  # the table parsed
