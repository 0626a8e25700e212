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
    assert bad.returncode == 2 and "'file_path' must be a string" in bad.stdout
    broken = cli("--cwd", str(workspace), "view", "{oops")
    assert broken.returncode == 2 and "not valid JSON" in broken.stdout
    missing = cli("--cwd", str(workspace), "view", '{"file_path": "nope"}')
    assert missing.returncode == 1 and "File not found" in missing.stdout
    unknown = cli("--cwd", str(workspace), "frobnicate", "{}")
    assert unknown.returncode == 2
    for proc in (bad, broken, missing, unknown):
        assert "Traceback" not in proc.stdout + proc.stderr


def test_list_and_schema() -> None:
    listed = cli("--list")
    assert listed.returncode == 0
    names = [line.split()[0] for line in listed.stdout.splitlines()]
    assert {"view", "write"} <= set(names)
    schema = json.loads(cli("--schema").stdout)
    assert schema["view"]["required"] == ["file_path"]


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
    """The installed `toolsmith` script works outside the repo (it imports internal, not cmd)."""
    script = Path(sys.executable).parent / "toolsmith"
    (workspace / "f.txt").write_text("x\n")
    proc = subprocess.run(
        [str(script), "view", '{"file_path": "f.txt"}'], cwd=workspace, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and "     1|x" in proc.stdout, proc.stderr
