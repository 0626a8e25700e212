"""Read confinement of rg (Landlock): the kernel refuses reads outside the allowed roots, the
confinement stays on its own thread, results match an unconfined run (ignore rules read from
outside included), and where it cannot be enforced rg runs as before and the tools check."""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from agent_toolsmith.cancel import CancelToken
from agent_toolsmith.config import Config
from agent_toolsmith.errors import ToolCancelled, ToolError
from agent_toolsmith.proc import elf, landlock
from agent_toolsmith.proc.confined import ReadConfinement
from agent_toolsmith.ripgrep import FileQuery, SearchQuery, SearchResult, find_rg, list_files, search
from agent_toolsmith.ripgrep.runner import run_rg
from agent_toolsmith.session import Session

#: Every wait on a started process.
WAIT_S = 30.0
RG = find_rg(None)

needs_landlock = pytest.mark.skipif(not landlock.available(), reason="this kernel has no Landlock")


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "src").mkdir(parents=True)
    outside.mkdir()
    (ws / "src" / "a.txt").write_text("inside needle\n")
    (outside / "secret.txt").write_text("outside needle\n")
    return ws, outside


def _search(argv: list[str], cwd: Path, confine: ReadConfinement | None) -> SearchResult:
    run = run_rg(RG or "rg", argv, cwd=cwd, mode="search", limit=100, cancel=CancelToken(), confine=confine)
    return asyncio.run(run)


LINES = ["-H", "-n", "--no-heading", "--null", "--field-match-separator=|", "-e", "needle"]


@needs_landlock
def test_confined_rg_reads_inside_and_is_refused_outside(tmp_path: Path) -> None:
    assert RG is not None
    ws, outside = _tree(tmp_path)
    argv = [*LINES, "--", str(ws), str(outside / "secret.txt")]
    result = _search(argv, ws, ReadConfinement((ws.resolve(),)))
    assert result.confined
    assert [m.text for m in result.matches] == ["inside needle"]
    assert result.partial  # rg's "some paths could not be read"
    # The confinement stayed on its own thread: this one (and an unconfined run) still read outside.
    assert (outside / "secret.txt").read_text() == "outside needle\n"
    result = _search(argv, ws, None)
    assert not result.confined
    assert sorted(m.text for m in result.matches) == ["inside needle", "outside needle"]


@needs_landlock
def test_a_symlink_out_of_the_roots_is_refused_even_when_rg_follows_it(tmp_path: Path) -> None:
    assert RG is not None
    ws, outside = _tree(tmp_path)
    (ws / "link").symlink_to(outside)
    result = _search(["--follow", *LINES, "--", str(ws)], ws, ReadConfinement((ws.resolve(),)))
    assert result.confined
    assert [m.text for m in result.matches] == ["inside needle"]


def test_loader_files_of_rg_hold_its_interpreter_and_libc(tmp_path: Path) -> None:
    assert RG is not None
    files = elf.loader_files(RG)
    assert files is not None
    names = [f.name for f in files]
    assert any(n.startswith("ld-linux") or n.startswith("ld-musl") for n in names) or files == []
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    assert elf.loader_files(str(script)) is None  # not an ELF file: not confinable


def test_without_landlock_rg_runs_unconfined(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(landlock, "available", lambda: False)
    ws, _ = _tree(tmp_path)
    result = asyncio.run(list_files(FileQuery(ws, readable=(ws.resolve(),)), rg=RG, limit=100, cancel=CancelToken()))
    assert not result.confined
    assert result.files == [str(ws / "src" / "a.txt")]


@needs_landlock
def test_rg_whose_libraries_are_not_allowed_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The loader's files guessed wrong (none allowed): the start is refused, and rg runs as before."""
    monkeypatch.setattr("agent_toolsmith.proc.confined.loader_files", lambda executable: [])
    monkeypatch.setattr("agent_toolsmith.ripgrep.confine._unconfinable", set())
    ws, _ = _tree(tmp_path)
    query = SearchQuery(ws, "needle", readable=(ws.resolve(),))
    result = asyncio.run(search(query, rg=RG, limit=100, cancel=CancelToken()))
    assert not result.confined
    assert [m.text for m in result.matches] == ["inside needle"]


@needs_landlock
def test_ignore_rules_read_from_outside_the_roots_still_apply(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A .gitignore above the workspace and the user's global excludes file are outside the
    roots; rg must still read them, so a confined listing equals an unconfined one."""
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    (home / "global-ignore").write_text("*.global\n")
    (home / ".gitconfig").write_text(f"[core]\n\texcludesFile = {home / 'global-ignore'}\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    project = tmp_path / "project"
    ws = project / "ws"
    (ws / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=WAIT_S)
    (project / ".gitignore").write_text("*.parent\n")
    for name in ("keep.py", "drop.parent", "drop.global"):
        (ws / "src" / name).write_text("x\n")
    query = FileQuery(ws, readable=(ws.resolve(),))
    confined = asyncio.run(list_files(query, rg=RG, limit=100, cancel=CancelToken()))
    monkeypatch.setattr(landlock, "available", lambda: False)
    unconfined = asyncio.run(list_files(query, rg=RG, limit=100, cancel=CancelToken()))
    assert confined.confined and not unconfined.confined
    assert sorted(confined.files) == sorted(unconfined.files) == [str(ws / "src" / "keep.py")]


@needs_landlock
def test_tools_through_a_session_run_rg_confined_and_leave_no_thread_reading_outside(tmp_path: Path) -> None:
    ws, outside = _tree(tmp_path)
    (ws / "link").symlink_to(outside / "secret.txt")

    async def calls() -> list[str]:
        session = Session(ws, config=Config(lsp_enabled=False))
        out = []
        for tool, params in (("grep", {"pattern": "needle"}), ("glob", {"pattern": "**/*.txt"}), ("ls", {})):
            response = await session.run(tool, params)
            assert not response.is_error, response.content
            out.append(response.content)
        return out

    grep, glob, ls = asyncio.run(calls())
    assert "inside needle" in grep and "outside" not in grep
    assert "a.txt" in glob and "secret" not in glob
    assert "a.txt" in ls
    assert os.access(outside / "secret.txt", os.R_OK)


@needs_landlock
def test_an_ignore_file_replaced_by_rename_is_read_again(tmp_path: Path) -> None:
    """Rules hold inodes: a .gitignore above the root saved anew (a new inode at the same path)
    must be readable to the next confined run."""
    assert RG is not None
    project = tmp_path / "project"
    ws = project / "ws"
    ws.mkdir(parents=True)
    for name in ("a.one", "b.two"):
        (ws / name).write_text("x\n")
    ignore = project / ".gitignore"
    query = FileQuery(ws, readable=(ws.resolve(),))
    listed = []
    for pattern in ("*.one\n", "*.two\n"):
        staged = project / ".gitignore.tmp"
        staged.write_text(pattern)
        staged.replace(ignore)
        result = asyncio.run(list_files(query, rg=RG, limit=100, cancel=CancelToken()))
        assert result.confined
        listed.append([Path(f).name for f in result.files])
    assert listed == [["b.two"], ["a.one"]]


def _rg_on(path: Path) -> list[int]:
    """Live rg processes whose arguments name ``path``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if str(path).encode() in argv and state != "Z":
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("confined", [True, False])
@pytest.mark.parametrize("how", ["token", "task", "timeout"])
def test_a_stuck_rg_is_stopped_and_reaped(tmp_path: Path, confined: bool, how: str) -> None:
    """rg blocked for good (opening a FIFO nobody writes): a cancel, a task cancellation or the
    timeout ends the call promptly and leaves no rg behind."""
    assert RG is not None
    if confined and not landlock.available():
        pytest.skip("this kernel has no Landlock")
    fifo = tmp_path / "stuck"
    os.mkfifo(fifo)
    confine = ReadConfinement((tmp_path.resolve(),)) if confined else None
    token = CancelToken()

    async def main() -> None:
        run = run_rg(RG, [*LINES, "--", str(fifo)], cwd=tmp_path, mode="search", limit=10, cancel=token,
                     confine=confine, timeout=0.5 if how == "timeout" else 600)  # fmt: skip
        call = asyncio.ensure_future(run)
        deadline = asyncio.get_running_loop().time() + WAIT_S
        while not _rg_on(fifo):
            assert asyncio.get_running_loop().time() < deadline, "rg never started"
            await asyncio.sleep(0.01)
        if how == "token":
            token.cancel()
            with pytest.raises(ToolCancelled):
                await asyncio.wait_for(call, WAIT_S)
        elif how == "task":
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(call, WAIT_S)
        else:
            with pytest.raises(ToolError) as raised:
                await asyncio.wait_for(call, WAIT_S)
            assert raised.value.metadata["error"] == "search_timed_out"

    asyncio.run(main())
    assert _rg_on(fifo) == []


@needs_landlock
def test_work_never_runs_on_a_thread_whose_restriction_failed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Of a confiner's two threads the second cannot be restricted: the directory walk sent to
    it is refused, not run unconfined, and the listing is made again unconfined (and checked)."""
    restrict = landlock.restrict_current_thread
    calls = []

    def first_only(dirs: object, files: object) -> None:
        calls.append(1)
        if len(calls) > 1:
            raise OSError(1, "refused for the test")
        restrict(dirs, files)  # type: ignore[arg-type]

    monkeypatch.setattr(landlock, "restrict_current_thread", first_only)
    monkeypatch.setattr("agent_toolsmith.ripgrep.confine._unconfinable", set())
    ws, _ = _tree(tmp_path)
    (ws / "deep" / "er").mkdir(parents=True)
    (ws / "deep" / "er" / "f.txt").write_text("x\n")
    # An escape in an ignore file: a one-level listing is left to rg and the walk beside it.
    (ws / ".gitignore").write_text("\\#not-a-comment\n")
    query = FileQuery(ws, max_depth=1, readable=(ws.resolve(),), with_directories=True)
    result = asyncio.run(list_files(query, rg=RG, limit=100, cancel=CancelToken()))
    assert len(calls) == 2, "both threads were started"
    assert not result.confined
    assert sorted(result.directories) == ["deep", "src"]


@needs_landlock
def test_a_one_level_listing_looks_into_directories_on_a_confined_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ls {depth: 1} without rg (ripgrep/shallow.py) reads the listed directory on the calling
    thread, and looks into a subdirectory only on a thread restricted to the readable roots."""
    from agent_toolsmith.ripgrep import shallow

    looked_on = []
    holds_file = shallow.holds_file

    def recording(*args: Any, **kwargs: Any) -> bool:
        looked_on.append(threading.current_thread().name)
        return holds_file(*args, **kwargs)

    monkeypatch.setattr(shallow, "holds_file", recording)
    monkeypatch.setattr("agent_toolsmith.ripgrep.confine._unconfinable", set())
    ws, _ = _tree(tmp_path)
    (ws / "empty").mkdir()
    query = FileQuery(ws, max_depth=1, readable=(ws.resolve(),), with_directories=True)
    result = asyncio.run(list_files(query, rg=RG, limit=100, cancel=CancelToken()))
    assert result.confined
    assert sorted(result.directories) == ["src"]
    assert len(looked_on) == 2 and all(name.startswith("toolsmith-confined") for name in looked_on), looked_on
