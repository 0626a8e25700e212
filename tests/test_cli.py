"""The CLI as a user runs it: real subprocesses from the repository root."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cmd.tools", *args],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def test_view_then_write_across_invocations_with_session(workspace: Path) -> None:
    (workspace / "f.txt").write_text("one\n")
    base = ["--cwd", str(workspace), "--session", "s1"]
    denied = cli(*base, "write", '{"file_path": "f.txt", "content": "two\\n"}')
    assert denied.returncode == 1 and "You must read the file" in denied.stdout
    viewed = cli(*base, "view", '{"file_path": "f.txt"}')
    assert viewed.returncode == 0 and "     1|one" in viewed.stdout
    wrote = cli(*base, "--json", "write", "-", stdin='{"file_path": "f.txt", "content": "two\\n"}')
    assert wrote.returncode == 0, wrote.stdout + wrote.stderr
    envelope = json.loads(wrote.stdout)
    assert envelope["is_error"] is False and envelope["metadata"]["additions"] == 1
    assert (workspace / "f.txt").read_text() == "two\n"


def test_exit_codes_and_no_traceback(workspace: Path) -> None:
    bad = cli("--cwd", str(workspace), "view", '{"file_path": 5}')
    assert bad.returncode == 2 and "'file_path' must be a string" in bad.stderr
    broken = cli("--cwd", str(workspace), "view", "{oops")
    assert broken.returncode == 2 and "not valid JSON" in broken.stderr
    missing = cli("--cwd", str(workspace), "view", '{"file_path": "nope"}')
    assert missing.returncode == 1 and "File not found" in missing.stdout
    unknown = cli("--cwd", str(workspace), "frobnicate", "{}")
    assert unknown.returncode == 2
    for proc in (bad, broken, missing, unknown):
        assert "Traceback" not in proc.stdout + proc.stderr


def test_list_shows_whole_first_sentences_and_schema_describes_each_tool() -> None:
    listed = cli("--list")
    assert listed.returncode == 0
    rows = {line.split()[0]: line.split(None, 1)[1] for line in listed.stdout.splitlines()}
    assert {"view", "read_many", "write", "multiedit", "notebook_edit", "lsp"} <= set(rows)
    assert rows["notebook_edit"].startswith("Edits a Jupyter notebook (.ipynb) by cell")
    assert rows["read_many"].startswith("Reads several files in one call: each under a header")
    assert rows["multiedit"] == "Makes several edits to one file in a single call."
    assert rows["lsp"].endswith("workspace_symbol — or renames a symbol everywhere (rename).")  # over three lines
    described = json.loads(cli("--schema").stdout)
    view = next(tool for tool in described if tool["name"] == "view")
    assert view["description"].startswith("Reads a file") and view["parameters"]["required"] == ["file_path"]
    assert [tool["name"] for tool in described] == list(rows)


def test_document_parsers_load_only_for_documents(workspace: Path) -> None:
    """nbformat and pypdf cost tens of milliseconds to import: a plain view must not pay for them."""
    (workspace / "a.txt").write_text("x\n")
    (workspace / "a.ipynb").write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n')
    probe = (
        "import runpy, sys\n"
        "sys.argv = ['tools', '--cwd', sys.argv[1], 'view', sys.argv[2]]\n"
        "try:\n    runpy.run_module('cmd.tools', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print('LOADED', sorted(m for m in ('nbformat', 'pypdf', 'jsonschema') if m in sys.modules))\n"
    )

    def loaded(name: str) -> str:
        params = json.dumps({"file_path": name})
        proc = subprocess.run([sys.executable, "-c", probe, str(workspace), params], cwd=ROOT, capture_output=True,
                              text=True, timeout=60)  # fmt: skip
        return proc.stdout.rsplit("LOADED", 1)[1].strip()

    assert loaded("a.txt") == "[]"
    assert loaded("a.ipynb") == "[]"  # viewing parses JSON only; nbformat validates edits
    edit = cli("--cwd", str(workspace), "notebook_edit", '{"file_path": "a.ipynb", "cell_index": 0, "new_source": "x"}')
    assert "read" in edit.stdout  # refused (not read in this session), without a traceback
    assert "Traceback" not in edit.stdout + edit.stderr


def test_version_and_unknown_tool_suggestion(workspace: Path) -> None:
    from agent_toolsmith import __version__

    assert cli("--version").stdout == f"toolsmith {__version__}\n"
    typo = cli("--cwd", str(workspace), "veiw", "{}")
    assert typo.returncode == 2 and "Unknown tool 'veiw'. Did you mean 'view'?" in typo.stderr


def test_batch_echoes_ids(workspace: Path) -> None:
    (workspace / "f.txt").write_text("a\n")
    calls = "\n".join(
        [
            json.dumps({"id": "call-1", "tool": "view", "params": {"file_path": "f.txt"}}),
            json.dumps({"tool": "view", "params": {"file_path": "f.txt"}}),
            json.dumps({"id": 7, "tool": "nope"}),
        ]
    )
    out = cli("--cwd", str(workspace), "--batch", "-", stdin=calls).stdout
    envelopes = [json.loads(line) for line in out.splitlines()]
    assert [e.get("id") for e in envelopes] == ["call-1", None, 7]
    assert "id" not in envelopes[1] and envelopes[2]["is_error"]


def test_batch_into_a_closed_pipe_exits_quietly(workspace: Path) -> None:
    (workspace / "f.txt").write_text("a\n")
    batch = workspace / "calls.jsonl"
    call = json.dumps({"tool": "view", "params": {"file_path": "f.txt"}})
    batch.write_text((call + "\n") * 2000)
    proc = subprocess.Popen(
        [sys.executable, "-m", "cmd.tools", "--cwd", str(workspace), "--batch", str(batch)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert json.loads(proc.stdout.readline())["is_error"] is False
    proc.stdout.close()  # what `| head -1` does
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141
    assert stderr == "", stderr


def test_invalid_session_ids_are_refused(workspace: Path) -> None:
    for bad in ("../x", "..", "a/b", "x" * 65, ""):
        proc = cli("--cwd", str(workspace), "--session", bad, "ls", "{}")
        assert proc.returncode == 2 and "invalid session id" in proc.stderr, bad
    assert cli("--cwd", str(workspace), "--session", "ok.id-1_2", "ls", "{}").returncode == 0


def test_state_is_private(workspace: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = {"TOOLSMITH_STATE_DIR": str(state)}
    base = ["--cwd", str(workspace), "--session", "private"]
    exported = cli(*base, "bash", '{"command": "export API_KEY=secret; seq 1 20000"}', env=env)
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert (state.stat().st_mode & 0o777) == 0o700
    state_file = state / "sessions" / "private" / "state.json"
    assert (state_file.stat().st_mode & 0o777) == 0o600 and "secret" in state_file.read_text()
    spilled = json.loads(cli(*base, "--json", "bash", '{"command": "seq 1 50000"}', env=env).stdout)
    spill = Path(spilled["metadata"]["full_output_path"])
    assert spill.is_relative_to(state) and (spill.stat().st_mode & 0o777) == 0o600
    for directory in [state, *(p for p in state.rglob("*") if p.is_dir())]:
        assert (directory.stat().st_mode & 0o077) == 0, directory


def test_unusable_state_dir_is_one_line_and_the_tool_still_runs(workspace: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    env = {"TOOLSMITH_STATE_DIR": str(blocker / "state")}
    proc = cli("--cwd", str(workspace), "--session", "s", "bash", '{"command": "seq 1 50000 | tail -1"}', env=env)
    assert proc.returncode == 0 and proc.stdout.strip() == "50000"
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(blocker / "state") in lines[0] and "TOOLSMITH_STATE_DIR" in lines[0], proc.stderr
    big = cli("--cwd", str(workspace), "--json", "bash", '{"command": "seq 1 50000"}', env=env)
    envelope = json.loads(big.stdout)
    assert Path(envelope["metadata"]["full_output_path"]).is_file()  # spilled to a private temp dir instead
    assert "Traceback" not in big.stderr


def test_batch_runs_in_one_session(workspace: Path) -> None:
    (workspace / "f.txt").write_text("a\n")
    calls = "\n".join(
        [
            json.dumps({"tool": "view", "params": {"file_path": "f.txt"}}),
            json.dumps({"tool": "write", "params": {"file_path": "f.txt", "content": "b\n"}}),
            "not json",
        ]
    )
    proc = cli("--cwd", str(workspace), "--batch", "-", stdin=calls)
    envelopes = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [e["is_error"] for e in envelopes] == [False, False, True]
    assert (workspace / "f.txt").read_text() == "b\n"
    assert proc.returncode == 2


def test_pdb_still_importable_from_repo_root() -> None:
    """The cmd/ shim must not break the standard library's cmd (pdb imports it)."""
    proc = subprocess.run(
        [sys.executable, "-c", "import pdb, cmd; print(cmd.Cmd.__name__)"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.stdout.strip() == "Cmd", proc.stderr


def test_console_script_runs_from_anywhere(workspace: Path) -> None:
    """The installed `toolsmith` script works outside the repo."""
    script = Path(sys.executable).parent / "toolsmith"
    (workspace / "f.txt").write_text("x\n")
    proc = subprocess.run(
        [str(script), "view", '{"file_path": "f.txt"}'], cwd=workspace, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and "     1|x" in proc.stdout, proc.stderr


def test_per_tool_help_in_every_spelling(workspace: Path) -> None:
    for argv in (["help", "view"], ["view", "--help"], ["view", "-h"]):
        shown = cli("--cwd", str(workspace), *argv)
        assert shown.returncode == 0, argv
        assert shown.stdout.startswith("view: ") and "Reads a file" in shown.stdout
        assert "file_path (string, required)" in shown.stdout and "offset (integer, optional)" in shown.stdout
        assert "usage: toolsmith" not in shown.stdout
    unknown = cli("--cwd", str(workspace), "help", "frobnicate")
    assert unknown.returncode == 2 and "unknown tool 'frobnicate'" in unknown.stderr
    assert cli("--help").stdout.startswith("usage: toolsmith")


def test_schema_of_one_tool_prints_that_tool_alone(workspace: Path) -> None:
    shown = json.loads(cli("--cwd", str(workspace), "--schema", "view").stdout)
    assert shown["name"] == "view" and "file_path" in shown["parameters"]["properties"]


def test_checkpoint_and_rewind_across_invocations(workspace: Path) -> None:
    (workspace / "f.txt").write_text("one\n")
    base = ["--cwd", str(workspace), "--session", "cp1"]
    assert cli(*base, "view", '{"file_path": "f.txt"}').returncode == 0
    marked = cli(*base, "--checkpoint")
    assert marked.returncode == 0, marked.stderr
    checkpoint = marked.stdout.strip()
    assert cli(*base, "write", '{"file_path": "f.txt", "content": "two\\n"}').returncode == 0
    assert cli(*base, "write", '{"file_path": "g.txt", "content": "new\\n"}').returncode == 0
    listed = cli(*base, "--changes", checkpoint)
    assert listed.stdout.split("\n")[:2] == ["changed  f.txt", "created  g.txt"]
    rewound = cli(*base, "--rewind", checkpoint)
    assert rewound.returncode == 0 and "2 file(s) restored" in rewound.stdout
    assert (workspace / "f.txt").read_text() == "one\n" and not (workspace / "g.txt").exists()
    unknown = cli(*base, "--rewind", "nope")
    assert unknown.returncode == 1 and "Unknown checkpoint 'nope'" in unknown.stderr
    alone = cli("--cwd", str(workspace), "--checkpoint")
    assert alone.returncode == 2 and "--checkpoint needs --session" in alone.stderr


def test_a_non_executable_custom_tool_is_listed_with_why(workspace: Path) -> None:
    tools = workspace / ".toolsmith" / "tools"
    tools.mkdir(parents=True)
    (tools / "lazy.sh").write_text("#!/bin/sh\necho hi\n")
    listed = cli("--cwd", str(workspace), "--list")
    assert listed.returncode == 0
    assert "lazy.sh is not offered: it is not executable (chmod +x" in listed.stderr
