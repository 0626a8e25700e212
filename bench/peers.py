"""Our tools beside peer tool suites, the same calls on the same files, interleaved (A B A B).

Peers, installed by `make bench-peers-deps` into .bench/peers/ (pinned, from npm; never by
`make test`):

- the MCP reference filesystem server (`@modelcontextprotocol/server-filesystem`): it and our
  server each run over stdio, driven by the official Python SDK client; each row pairs our
  server's tool with the reference server's tool that does the same job (view / read_text_file,
  ls depth 1 / list_directory, glob / search_files, read_many / read_multiple_files, edit /
  edit_file), the whole `tools/call` round trip on both sides;
- pi's coding-agent tools (`@mariozechner/pi-coding-agent`: read, ls, find, grep, edit), run
  in node by bench/pi_tools.mjs with no model and no network (PI_OFFLINE; rg and fd come from
  this machine). They are in-process tools, so our side is `Session.run` and pi's side is the
  time node measures around the tool's `execute` (the pipe to node is charged to no one).

The files: a copy of the interpreter's standard library (bench/search.py's), a 10 MB text file,
and a copy of argparse.py per side for the edits (each edit swaps the base classes on one line,
and the next swaps them back); a 1 GiB file is only probed, one untimed call a side with its
outcome printed. The calls agents make most carry goals (see the constants below); the other
rows are informational. Before timing, each case runs once on both sides; a side that fails prints
what failed and the row is left out. Without node or the installed peers, the script says so in
one line and exits 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_toolsmith.config import Config
from agent_toolsmith.ripgrep import find_rg
from agent_toolsmith.session import Session
from harness import exit_status, pairs_async, record
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from search import copy_stdlib
from view_paging import make as make_large_file

ROOT = Path(__file__).resolve().parents[1]
PEERS = ROOT / ".bench" / "peers"
FS_SERVER = PEERS / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
PI_PACKAGE = PEERS / "node_modules" / "@mariozechner" / "pi-coding-agent"
PI_DRIVER = Path(__file__).resolve().parent / "pi_tools.mjs"
RUNS = int(os.environ.get("BENCH_RUNS", "40"))
#: Goals (median per-pair ratio, ours / the peer's) for the calls agents make most: a one-level
#: listing, a view of a source file and a read of several, no slower than the peers'; grep within
#: 10% of pi's; an edit within 1.5x of pi's and the filesystem server's, which do not fsync, keep
#: no journal and run no syntax gate (docs/benchmarks.md says what that buys).
LS_GOAL = 1.0
VIEW_GOAL = 1.0
READ_MANY_GOAL = 1.0
GREP_GOAL = 1.1
#: pi's grep limit in the equal-work row: above the matches of `def __repr__` in the stdlib (~360).
GREP_ALL = 1000
EDIT_GOAL = 1.5
#: Untimed pairs before the timed ones of an in-process row (after the one that checks outputs).
WARMUP = 2
#: Hang guard for one answer from pi's driver (a tool call or its start).
PI_TIMEOUT_S = 120
#: The 10 MB file: numbered lines of prose-like text, 2000 of which are the first page either way.
BIG_FILE_BYTES = 10 * 1024 * 1024
#: The probe (untimed, one call a side): the first page of a file too large to read whole.
HUGE_FILE_BYTES = 1 << 30
PAGE_LINES = 2000
READ_FILE = "json/decoder.py"
READ_MANY = ["json/decoder.py", "json/encoder.py", "json/scanner.py", "json/tool.py", "json/__init__.py"]
EDIT_SOURCE = "argparse.py"
#: The edit: a unique line of argparse.py, renamed and back again on alternate calls.
EDIT_OLD = "class ArgumentParser(_AttributeHolder, _ActionsContainer):"
EDIT_NEW = "class ArgumentParser(_ActionsContainer, _AttributeHolder):"

Call = Callable[[], Awaitable[str]]


def node() -> str | None:
    return shutil.which("node")


def missing(peer: Path) -> str | None:
    """Why ``peer`` cannot run here, or None when it can."""
    if node() is None:
        return "node is not on PATH"
    if not peer.exists():
        return f"{peer.relative_to(ROOT)} is not installed (make bench-peers-deps)"
    return None


@dataclass
class Workspace:
    """The files both sides work on, as absolute paths inside ``root``."""

    root: Path
    stdlib: Path
    big: Path
    huge: Path

    def path(self, relative: str) -> str:
        return str(self.stdlib / relative)

    def edit_copy(self, side: str) -> str:
        """Each side (of each peer) edits its own copy of the same file, so none sees another's
        change and each toggle starts from the original."""
        copy = self.root / f"edit_{side}.py"
        if not copy.exists():
            shutil.copyfile(self.stdlib / EDIT_SOURCE, copy)
        return str(copy)


def make_workspace(root: Path) -> Workspace:
    stdlib = copy_stdlib(root / "stdlib")
    big = root / "big.txt"
    with big.open("w", encoding="utf-8") as handle:
        line, written = 0, 0
        while written < BIG_FILE_BYTES:
            text = f"{line:07d} the quick brown fox jumps over the lazy dog; a line of a large log file\n"
            handle.write(text)
            written += len(text)
            line += 1
    huge = root / "huge.txt"
    make_large_file(huge, HUGE_FILE_BYTES)
    return Workspace(root, stdlib, big, huge)


Params = Callable[[], dict[str, Any]]


def fixed(params: dict[str, Any]) -> Params:
    return lambda: params


class Toggle:
    """An edit that swaps EDIT_OLD for EDIT_NEW, then back, so every call changes the file."""

    def __init__(self) -> None:
        self.forward = True

    def next(self) -> tuple[str, str]:
        old, new = (EDIT_OLD, EDIT_NEW) if self.forward else (EDIT_NEW, EDIT_OLD)
        self.forward = not self.forward
        return old, new


def edits(ws: Workspace, stage: str) -> tuple[Params, Params]:
    """The edit's parameters for our edit and for the peer's (pi's and the filesystem server's
    take the same shape), each toggling its own copy of argparse.py."""
    ours, peer = Toggle(), Toggle()

    def our_edit() -> dict[str, Any]:
        old, new = ours.next()
        return {"file_path": ws.edit_copy(f"{stage}_ours"), "old_string": old, "new_string": new}

    def their_edit() -> dict[str, Any]:
        old, new = peer.next()
        return {"path": ws.edit_copy(f"{stage}_peer"), "edits": [{"oldText": old, "newText": new}]}

    return our_edit, their_edit


@dataclass(frozen=True)
class Side:
    """One side of a job: a tool, its parameters (made at each call), how a row names it, and
    (a peer's side) the goal of the row that compares ours with it."""

    tool: str
    params: Params
    label: str = ""
    goal: float | None = None


@dataclass(frozen=True)
class Job:
    """One job, ours and each peer's way (None where that peer has no tool for it)."""

    label: str
    ours: Side
    fs_server: Side | None
    pi: Side | None


def jobs(ws: Workspace, stage: str) -> list[Job]:
    """Every job of the rows; ``stage`` names the edit copies (one pair of copies per peer)."""
    our_edit, their_edit = edits(ws, stage)
    decoder, big, tree = ws.path(READ_FILE), str(ws.big), str(ws.stdlib)
    many = [ws.path(p) for p in READ_MANY]
    return [
        Job("view, json/decoder.py", Side("view", fixed({"file_path": decoder})),
            Side("read_text_file", fixed({"path": decoder}), goal=VIEW_GOAL), Side("read", fixed({"path": decoder}))),
        Job("view first page, 10 MB file", Side("view", fixed({"file_path": big, "limit": PAGE_LINES})),
            Side("read_text_file", fixed({"path": big, "head": PAGE_LINES}), f"read_text_file head {PAGE_LINES}"),
            Side("read", fixed({"path": big, "limit": PAGE_LINES}), f"read limit {PAGE_LINES}")),
        Job("read_many, 5 stdlib files", Side("read_many", fixed({"paths": many})),
            Side("read_multiple_files", fixed({"paths": many}), goal=READ_MANY_GOAL), None),
        Job("ls depth 1, stdlib copy", Side("ls", fixed({"path": tree, "depth": 1})),
            Side("list_directory", fixed({"path": tree}), goal=LS_GOAL),
            Side("ls", fixed({"path": tree}), goal=LS_GOAL)),
        Job("glob **/*.py, stdlib copy", Side("glob", fixed({"pattern": "**/*.py", "path": tree})),
            Side("search_files", fixed({"pattern": "**/*.py", "path": tree})),
            Side("find", fixed({"pattern": "**/*.py", "path": tree}))),
        Job("grep def __repr__, stdlib copy", Side("grep", fixed({"pattern": "def __repr__", "path": tree})),
            None, Side("grep", fixed({"pattern": "def __repr__", "path": tree}), goal=GREP_GOAL)),
        # pi's grep stops rg at its 100th match (no total, no order); ours finds every match to
        # count them and show the newest files first. This row gives pi a limit above the total,
        # so both sides search the whole tree (docs/benchmarks.md).
        Job("grep def __repr__, every match", Side("grep", fixed({"pattern": "def __repr__", "path": tree})),
            None, Side("grep", fixed({"pattern": "def __repr__", "path": tree, "limit": GREP_ALL}),
                       f"grep limit {GREP_ALL}", goal=GREP_GOAL)),
        Job("edit, argparse.py copy", Side("edit", our_edit), Side("edit_file", their_edit, goal=EDIT_GOAL),
            Side("edit", their_edit, goal=EDIT_GOAL)),
    ]  # fmt: skip


def huge_first_page(ws: Workspace) -> Job:
    """The probe's job: the first page of the 1 GiB file."""
    huge = str(ws.huge)
    return Job(
        "first page of a 1 GiB file",
        Side("view", fixed({"file_path": huge, "limit": PAGE_LINES})),
        Side("read_text_file", fixed({"path": huge, "head": PAGE_LINES})),
        Side("read", fixed({"path": huge, "limit": PAGE_LINES})),
    )


async def run_jobs(
    ws: Workspace,
    stage: str,
    peer: str,
    title: str,
    side_of: Callable[[Job], Side | None],
    row: Callable[[str, str, Side, Side], Awaitable[None]],
    calls: Callable[[Side, Side], tuple[Call, Call]],
) -> None:
    """A row for every job ``peer`` has a tool for (``side_of`` picks it), then the probe; the rows'
    names start with ``title``."""
    for job in jobs(ws, stage):
        theirs = side_of(job)
        if theirs is not None:
            await row(f"{title}: {job.label}", f"{peer} {theirs.label or theirs.tool}", job.ours, theirs)
    big = huge_first_page(ws)
    theirs = side_of(big)
    assert theirs is not None
    await probe(f"{title}: {big.label}", *calls(big.ours, theirs))


# -- the MCP reference filesystem server --------------------------------------------------------


def mcp_text(result: Any) -> str:
    assert not result.is_error, result
    return "".join(getattr(part, "text", "") for part in result.content)


def mcp_call(client: Client, side: Side) -> Call:
    async def call() -> str:
        return mcp_text(await client.call_tool(side.tool, side.params()))

    return call


async def bench_filesystem_server(ws: Workspace) -> None:
    why = missing(FS_SERVER)
    if why:
        print(f"MCP reference filesystem server skipped: {why}", flush=True)
        return
    ours_params = StdioServerParameters(
        command=sys.executable, args=["-m", "cmd.mcp", "--cwd", str(ws.root), "--no-lsp"], cwd=str(ROOT)
    )
    peer_params = StdioServerParameters(command=str(node()), args=[str(FS_SERVER), str(ws.root)], cwd=str(ws.root))
    async with Client(ours_params) as ours, Client(peer_params) as peer:
        # Our edit refuses a file not read in this session; the view is what a model does first.
        mcp_text(await ours.call_tool("view", {"file_path": ws.edit_copy("mcp_ours")}))
        print(f"\nMCP over stdio, ours vs the reference filesystem server ({RUNS} interleaved pairs)", flush=True)

        async def row(name: str, reference: str, our_side: Side, peer_side: Side) -> None:
            await compare(name, reference, mcp_call(ours, our_side), mcp_call(peer, peer_side), peer_side.goal)

        def calls(our_side: Side, peer_side: Side) -> tuple[Call, Call]:
            return mcp_call(ours, our_side), mcp_call(peer, peer_side)

        await run_jobs(ws, "mcp", "fs server", "vs fs server, MCP", lambda job: job.fs_server, row, calls)


async def compare(name: str, reference: str, our_call: Call, peer_call: Call, goal: float | None) -> None:
    """One row, after checking once that both sides answer; a side that fails is reported."""
    outputs = await checked(name, our_call, peer_call)
    if outputs is None:
        return
    await pairs_async(
        name, our_call, peer_call, runs=RUNS, reference_name=reference, goal=goal, warmup=WARMUP, note=outputs
    )


async def checked(name: str, our_call: Call, peer_call: Call) -> str | None:
    """Both sides once (untimed): None when one fails (said on stdout), else their output sizes."""
    texts = []
    for side, call in (("ours", our_call), ("peer", peer_call)):
        try:
            texts.append(await call())
        except Exception as error:  # a peer's failure is a finding, not a crash of the bench
            first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
            print(f"  {name}: {side} failed: {first_line[:300]}", flush=True)
            return None
    return f"output lines: ours {texts[0].count(chr(10)) + 1}, peer {texts[1].count(chr(10)) + 1}"


async def probe(name: str, our_call: Call, peer_call: Call) -> None:
    """One untimed call a side, for what it shows: whether each side answers, and how much."""
    outcomes = []
    for side, call in (("ours", our_call), ("peer", peer_call)):
        start = time.perf_counter()
        try:
            lines = (await call()).count("\n") + 1
            outcome = f"{lines} lines"
        except Exception as error:  # the finding is the failure
            outcome = "failed: " + (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
        outcomes.append(f"{side} {outcome} ({(time.perf_counter() - start) * 1000:.0f} ms)")
    print(f"  probe, {name}: {'; '.join(outcomes)}", flush=True)


# -- pi's coding-agent tools ---------------------------------------------------------------------


class PiTools:
    """bench/pi_tools.mjs as a subprocess: one request line in, one answer line out."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    async def answer(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), PI_TIMEOUT_S)
        if not line:
            raise RuntimeError("pi's tool driver exited")
        answer: dict[str, Any] = json.loads(line)
        return answer

    async def run(self, tool: str, params: dict[str, Any]) -> tuple[float, str]:
        """(seconds inside the tool's execute, its text); raises with pi's message when it fails."""
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps({"tool": tool, "params": params}) + "\n").encode())
        await self.process.stdin.drain()
        answer = await self.answer()
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return answer["ms"] / 1000, answer["text"]


@contextlib.asynccontextmanager
async def pi_tools(cwd: Path) -> AsyncIterator[PiTools]:
    rg = find_rg(None)
    path = os.pathsep.join([str(Path(rg).parent)] if rg else []) + os.pathsep + os.environ.get("PATH", "")
    env = {**os.environ, "PATH": path, "PI_OFFLINE": "1", "PI_CODING_AGENT_DIR": str(PEERS / "agent")}
    process = await asyncio.create_subprocess_exec(
        str(node()), str(PI_DRIVER), str(PI_PACKAGE), str(cwd), env=env, limit=1 << 26,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        tools = PiTools(process)
        assert (await tools.answer()).get("ready"), "pi's tool driver did not start"
        yield tools
    finally:
        if process.returncode is None:
            process.kill()
        await asyncio.wait_for(process.wait(), 10)


TimedCall = Callable[[], Awaitable[tuple[float, str]]]


def ours_call(session: Session, side: Side) -> TimedCall:
    async def call() -> tuple[float, str]:
        start = time.perf_counter()
        response = await session.run(side.tool, side.params())
        elapsed = time.perf_counter() - start
        if response.is_error:
            raise RuntimeError(response.content[:300])
        return elapsed, response.content

    return call


def pi_call(pi: PiTools, side: Side) -> TimedCall:
    return lambda: pi.run(side.tool, side.params())


async def bench_pi(ws: Workspace) -> None:
    why = missing(PI_PACKAGE)
    if why:
        print(f"pi's coding-agent tools skipped: {why}", flush=True)
        return
    async with Session(ws.root, config=Config(lsp_enabled=False)) as session, pi_tools(ws.root) as pi:
        assert not (await session.run("view", {"file_path": ws.edit_copy("pi_ours")})).is_error
        print(f"\nin-process, Session.run vs pi's tools in node ({RUNS} interleaved pairs)", flush=True)

        async def row(name: str, reference: str, our_side: Side, peer_side: Side) -> None:
            await compare_timed(name, reference, ours_call(session, our_side), pi_call(pi, peer_side), peer_side.goal)

        def calls(our_side: Side, peer_side: Side) -> tuple[Call, Call]:
            return text_of(ours_call(session, our_side)), text_of(pi_call(pi, peer_side))

        # What our default grep cannot do without: rg searching the whole tree (its exact total and
        # newest-first order need every match), run alone, against pi's grep, which stops at its
        # 100th match. No goal: the row says how near 1.1x the default grep row can come. First,
        # as the 1 GiB probe after the rows leaves node slower for the calls that follow it.
        tree = str(ws.stdlib)
        pi_grep = Side("grep", fixed({"pattern": "def __repr__", "path": tree}))
        await compare_timed("vs pi: rg alone, the whole search of grep def __repr__", "pi grep",
                            rg_alone(["-e", "def __repr__", "--", tree]), pi_call(pi, pi_grep), None)  # fmt: skip
        await run_jobs(ws, "pi", "pi", "vs pi", lambda job: job.pi, row, calls)


#: rg's flags in our grep's search (ripgrep/runner.py), for the row of rg alone.
RG_GREP_FLAGS = ["-H", "--no-messages", "--null", "--hidden", "--no-require-git", "--color=never", "-n",
                 "--no-heading", "--field-match-separator=|", "--glob", "!.git"]  # fmt: skip


def rg_alone(args: list[str]) -> TimedCall:
    """rg with our grep's flags, started and read to its end: the process and the search, nothing
    of the tool around it."""
    rg = find_rg(None)
    assert rg is not None

    async def call() -> tuple[float, str]:
        start = time.perf_counter()
        process = await asyncio.create_subprocess_exec(
            rg, *RG_GREP_FLAGS, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
        )
        out, _ = await process.communicate()
        elapsed = time.perf_counter() - start
        if process.returncode != 0:
            raise RuntimeError(f"rg exited {process.returncode}")
        return elapsed, out.decode("utf-8", "replace")

    return call


def text_of(call: TimedCall) -> Call:
    async def text() -> str:
        return (await call())[1]

    return text


async def compare_timed(
    name: str, reference: str, our_call: TimedCall, peer_call: TimedCall, goal: float | None
) -> None:
    """Like :func:`compare`, for calls that time themselves (pi's time is taken inside node)."""
    outputs = await checked(name, text_of(our_call), text_of(peer_call))
    if outputs is None:
        return
    for _ in range(WARMUP):  # as pairs_async warms up; node's JIT more so
        await our_call()
        await peer_call()
    ours, theirs = [], []
    for _ in range(RUNS):
        ours.append((await our_call())[0])
        theirs.append((await peer_call())[0])
    record(name, ours, theirs, reference=reference, goal=goal, note=outputs)


async def main() -> int:
    if node() is None:
        print("peer tool suites skipped: node is not on PATH (make bench-peers-deps needs npm)", flush=True)
        return 0
    if missing(FS_SERVER) and missing(PI_PACKAGE):
        print("peer tool suites skipped: not installed in .bench/peers (make bench-peers-deps)", flush=True)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        ws = make_workspace(Path(os.path.realpath(tmp)))
        await bench_filesystem_server(ws)
        await bench_pi(ws)
    return exit_status()


if __name__ == "__main__":
    started = time.perf_counter()
    status = asyncio.run(main())
    print(f"  ({time.perf_counter() - started:.0f} s)")
    sys.exit(status)
