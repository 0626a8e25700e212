"""Edits at scale: the whole call through Session.run vs the raw work it cannot avoid.

Every ratio row is timed in pairs by bench/harness.py (tool, reference, tool, reference ...):

- edit (exact, fuzzy, not found) in a 10k-line file and exact in a 10 MB file vs raw
  read + str.replace + write of a temp file + fsync + rename; the exact edits also in the same
  files with a syntax error (every line indented at module level), which the syntax gate judges
  by the changed region alone;
- multiedit with 1 000 and 10 000 edits in a 10k-line file vs the raw loop (that many
  str.replace, then one such atomic write);
- a 50-hunk unified diff through patch vs ``git apply`` (a subprocess) on a copy of the file;
- the syntax gate's judgement of one edit of a 10k-line file (warm tree cache, as in a session)
  against its 5 ms budget;
- peak memory (RSS) of view + edit of a 100 MB file vs raw Python read + replace + write, each
  in a fresh child process.

Each tool call includes reading, matching, the syntax gate, the diff for the result, permission,
the journaled commit and read tracking; LSP is off. The goals are the constants below; the
script exits 1 when a row is over its goal.
"""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from agent_toolsmith.config import Config
from agent_toolsmith.diff import generate_diff
from agent_toolsmith.session import Session
from agent_toolsmith.syntax import judge
from agent_toolsmith.syntax.parse import SyntaxCache
from harness import exit_status, pairs_async, record, timed

RUNS = 15
#: Pairs for the edits of the 10k-line file: a few ms each, so more pairs cost little and keep
#: the median steady on a busy machine.
SMALL_EDIT_RUNS = 41
#: Goals (tool ÷ reference, median of per-pair ratios).
EXACT_EDIT_GOAL = 5.0
FUZZY_EDIT_GOAL = 8.0
BIG_EDIT_GOAL = 5.0
MULTIEDIT_GOAL = 3.0
PATCH_GOAL = 3.0
MEMORY_GOAL = 2.0
#: The syntax gate's budget per edit of a 10k-line file.
GATE_BUDGET_S = 0.005
PATCH_HUNKS = 50
MEMORY_FILE_BYTES = 100 * 1024 * 1024
MEMORY_PAIRS = 3


def source(functions: int) -> str:
    body = "def function_{0}(x):\n    if x:\n        return x + {0}\n    return {0}\n\n"
    return "".join(body.format(i) for i in range(functions))


def broken(text: str) -> str:
    """``text`` with every non-blank line indented at module level: a syntax error on every
    top-level statement ("unexpected indent")."""
    return "".join("    " + line if line.strip() else line for line in text.splitlines(keepends=True))


def assignments(count: int) -> str:
    """``count`` lines, each unique and never inside another: ``value_7 = 7;``."""
    return "".join(f"value_{i} = {i};\n" for i in range(count))


def atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".raw.tmp")
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def raw_edit(path: Path) -> None:
    """The IO and search an edit cannot avoid: read, decode, one replace, encode, atomic write."""
    text = path.read_bytes().decode()
    atomic_write(path, text.replace("\n", "\n", 1).encode())


def raw_copy(path: Path) -> Path:
    """A copy of ``path`` for the reference side: the session's file changes only by its tools."""
    copy = path.with_name("raw-" + path.name)
    shutil.copyfile(path, copy)
    return copy


def raw_loop(path: Path, edits: list[tuple[str, str]]) -> None:
    text = path.read_bytes().decode()
    for old, new in edits:
        text = text.replace(old, new, 1)
    atomic_write(path, text.encode())


class Alternating:
    """Calls that flip a file between two states: each run really changes the file."""

    def __init__(self) -> None:
        self.forward = True

    def flip(self) -> bool:
        forward, self.forward = self.forward, not self.forward
        return forward


async def edit_rows(session: Session, ws: Path) -> None:
    small = ws / "small.py"
    small.write_text(source(2000))  # 10k lines
    big = ws / "big.py"
    big.write_text(source(int(10e6 // 80)))
    small_broken = ws / "small_broken.py"
    small_broken.write_text(broken(source(2000)))
    big_broken = ws / "big_broken.py"
    big_broken.write_text(broken(source(int(10e6 // 100))))
    for path in (small, big, small_broken, big_broken):
        await session.run("view", {"file_path": str(path), "limit": 1})
    exact = ("def function_1000(x):\n", "def renamed_1000(x):\n")
    # Fuzzy: old_string with its indentation shifted (the indentation tier); undone exactly.
    fuzzy = ("def function_1000(x):\n  if x:\n      return x + 1000\n",
             "def function_1000(x):\n  if not x:\n      return x + 1000\n")
    fuzzy_undo = ("def function_1000(x):\n    if not x:\n        return x + 1000\n",
                  "def function_1000(x):\n    if x:\n        return x + 1000\n")
    missing = ("def function_1000(y):\n    return nothing\n", "x")
    big_exact = ("def function_60000(x):\n", "def renamed_60000(x):\n")
    cases = [
        ("edit: exact, 10k-line file", small, exact, exact[::-1], False, EXACT_EDIT_GOAL),
        ("edit: fuzzy (indentation), 10k-line file", small, fuzzy, fuzzy_undo, False, FUZZY_EDIT_GOAL),
        ("edit: not found, 10k-line file", small, missing, missing, True, None),
        ("edit: exact, 10 MB file", big, big_exact, big_exact[::-1], False, BIG_EDIT_GOAL),
        ("edit: exact, 10k-line file with a syntax error", small_broken, exact, exact[::-1], False, EXACT_EDIT_GOAL),
        ("edit: exact, 10 MB file with a syntax error", big_broken, big_exact, big_exact[::-1], False, BIG_EDIT_GOAL),
    ]  # fmt: skip
    for name, path, forward, backward, error, goal in cases:
        state = Alternating()

        async def tool(
            path: Path = path, forward: tuple[str, str] = forward, backward: tuple[str, str] = backward,
            error: bool = error, state: Alternating = state,
        ) -> None:  # fmt: skip
            old, new = forward if state.flip() else backward
            response = await session.run("edit", {"file_path": str(path), "old_string": old, "new_string": new})
            assert response.is_error == error, response.content[:300]
            assert "Warning: syntax errors" not in response.content, response.content[:300]

        await pairs_async(
            name, tool, functools.partial(raw_edit, raw_copy(path)),
            runs=SMALL_EDIT_RUNS if path in (small, small_broken) else RUNS,
            reference_name="raw read+replace+fsync+rename", goal=goal,
        )  # fmt: skip


async def multiedit_rows(session: Session, ws: Path) -> None:
    path = ws / "values.py"
    path.write_text(assignments(10_000))
    await session.run("view", {"file_path": str(path), "limit": 1})
    for count in (1_000, 10_000):
        step = 10_000 // count
        forward = [(f"value_{i} = {i};\n", f"value_{i} = -{i};\n") for i in range(0, 10_000, step)]
        backward = [(new, old) for old, new in forward]
        state = Alternating()

        async def tool(
            forward: list[tuple[str, str]] = forward, backward: list[tuple[str, str]] = backward,
            state: Alternating = state,
        ) -> None:  # fmt: skip
            edits = forward if state.flip() else backward
            params = {"file_path": str(path), "edits": [{"old_string": o, "new_string": n} for o, n in edits]}
            response = await session.run("multiedit", params)
            assert not response.is_error, response.content[:300]

        # The raw loop makes the same changes to a copy, alternating the same way.
        raw = raw_copy(path)
        raw_state = Alternating()

        def reference(
            forward: list[tuple[str, str]] = forward, backward: list[tuple[str, str]] = backward,
            raw_state: Alternating = raw_state, raw: Path = raw,
        ) -> None:  # fmt: skip
            raw_loop(raw, forward if raw_state.flip() else backward)

        await pairs_async(
            f"multiedit: {count:,} edits, 10k-line file".replace(",", " "), tool, reference,
            runs=RUNS if count <= 1_000 else 5, reference_name=f"{count} str.replace + atomic write",
            goal=MULTIEDIT_GOAL,
        )  # fmt: skip


async def patch_row(session: Session, ws: Path) -> None:
    text = source(2000)
    lines = text.split("\n")
    changed = list(lines)
    for k in range(PATCH_HUNKS):
        at = 100 + k * 190  # spread over the file, far enough apart to be separate hunks
        changed[at] = changed[at] + "  # patched"
    new = "\n".join(changed)
    forward_diff, _, _ = generate_diff(text, new, "patched.py")
    backward_diff, _, _ = generate_diff(new, text, "patched.py")
    assert forward_diff.count("\n@@ ") == PATCH_HUNKS and forward_diff.startswith("--- a/")
    path = ws / "patched.py"
    path.write_text(text)
    await session.run("view", {"file_path": str(path), "limit": 1})
    copy = Path(tempfile.mkdtemp(prefix="git-apply-"))
    (copy / "patched.py").write_text(text)
    (copy / "forward.diff").write_text(forward_diff)
    (copy / "backward.diff").write_text(backward_diff)
    state, git_state = Alternating(), Alternating()

    async def tool() -> None:
        response = await session.run("patch", {"patch_text": forward_diff if state.flip() else backward_diff})
        assert not response.is_error, response.content[:300]

    def reference() -> None:
        diff = "forward.diff" if git_state.flip() else "backward.diff"
        subprocess.run(["git", "apply", diff], cwd=copy, check=True, timeout=60)

    # The same with the syntax gate off: what the gate's full parse of the file costs (a patch
    # spread over the whole file leaves no tree to reuse).
    ungated = Session(ws, config=Config(lsp_enabled=False, syntax_gate="off"))
    ungated_path = ws / "ungated" / "patched.py"
    ungated_path.parent.mkdir()
    ungated_path.write_text(text)
    await ungated.run("view", {"file_path": str(ungated_path), "limit": 1})
    ungated_state = Alternating()
    ungated_diffs = [
        d.replace(" a/", " a/ungated/").replace(" b/", " b/ungated/") for d in (forward_diff, backward_diff)
    ]

    async def tool_ungated() -> None:
        diff = ungated_diffs[0] if ungated_state.flip() else ungated_diffs[1]
        response = await ungated.run("patch", {"patch_text": diff})
        assert not response.is_error, response.content[:300]

    try:
        await pairs_async(
            f"patch: {PATCH_HUNKS} hunks, 10k-line file", tool, reference, runs=RUNS,
            reference_name="git apply (subprocess)", goal=PATCH_GOAL,
        )  # fmt: skip
        await pairs_async(
            f"patch: {PATCH_HUNKS} hunks, 10k-line file, syntax gate off", tool_ungated, reference, runs=RUNS,
            reference_name="git apply (subprocess)", goal=None,
        )  # fmt: skip
    finally:
        shutil.rmtree(copy, ignore_errors=True)


def gate_row() -> None:
    """The syntax gate's judgement of one small edit of a 10k-line file, tree cache warm."""
    text = source(2000)
    cache = SyntaxCache()
    judge(text, text, "gate.py", cache=cache)  # the tree a session already has from earlier edits
    times = []
    current = text
    for i in range(RUNS * 2):
        after = current.replace(f"return x + {i * 50}\n", f"return x - {i * 50}\n", 1)
        times.append(timed(functools.partial(judge, current, after, "gate.py", cache=cache)))
        current = after
    record(
        "syntax gate: one edit of a 10k-line file (warm cache)", times, [GATE_BUDGET_S] * len(times),
        reference="budget", goal=1.0, note="reference = the 5 ms budget",
    )  # fmt: skip


CHILD_TOOL = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from agent_toolsmith.config import Config
    from agent_toolsmith.session import Session
    path = Path(sys.argv[1])
    async def main():
        session = Session(path.parent, config=Config(lsp_enabled=False))
        r = await session.run("view", {"file_path": str(path)})
        assert not r.is_error, r.content[:300]
        for old, new in (("value_4242 = 4242;", "value_4242 = 0;"), ("value_4242 = 0;", "value_4242 = 4242;")):
            r = await session.run("edit", {"file_path": str(path), "old_string": old, "new_string": new})
            assert not r.is_error, r.content[:300]
    asyncio.run(main())
    print(peak())
    """
)
CHILD_RAW = textwrap.dedent(
    """
    import os, sys
    path = sys.argv[1]
    for old, new in (("value_4242 = 4242;", "value_4242 = 0;"), ("value_4242 = 0;", "value_4242 = 4242;")):
        with open(path, "rb") as handle:
            text = handle.read().decode()
        data = text.replace(old, new, 1).encode()
        del text
        with open(path + ".tmp", "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(path + ".tmp", path)
        del data
    print(peak())
    """
)


#: Prepended to each child: its own peak RSS (VmHWM belongs to the process image; ru_maxrss would
#: carry over the parent's peak across fork and exec).
PEAK = textwrap.dedent(
    """
    def peak():
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    """
)


def peak_kib(script: str, path: Path) -> int:
    done = subprocess.run(
        [sys.executable, "-c", PEAK + script, str(path)], capture_output=True, text=True, timeout=600, check=True
    )
    return int(done.stdout.split()[-1])


def memory_row(ws: Path) -> None:
    path = ws / "huge.txt"
    with open(path, "w") as handle:
        start = 0
        while handle.tell() < MEMORY_FILE_BYTES:
            handle.write("".join(f"value_{i} = {i};\n" for i in range(start, start + 100_000)))
            start += 100_000
    tool, raw = [], []
    for _ in range(MEMORY_PAIRS):
        tool.append(peak_kib(CHILD_TOOL, path) / 1e6)  # GiB-ish units, so the time columns read as GB
        raw.append(peak_kib(CHILD_RAW, path) / 1e6)
    size = path.stat().st_size / 1e6
    record(
        f"memory: view + edit of a {size:.0f} MB file (peak RSS)", tool, raw,
        reference="raw Python read+replace+write", goal=MEMORY_GOAL,
        note=f"peak RSS in MB: tool {min(tool) * 1000:.0f}–{max(tool) * 1000:.0f}, raw "
        f"{min(raw) * 1000:.0f}–{max(raw) * 1000:.0f} (the time columns show MB as ms)",
    )  # fmt: skip


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(os.path.realpath(tmp))
        session = Session(ws, config=Config(lsp_enabled=False))
        only = set(sys.argv[1:])
        if not only or "edit" in only:
            await edit_rows(session, ws)
        if not only or "multiedit" in only:
            await multiedit_rows(session, ws)
        if not only or "patch" in only:
            await patch_row(session, ws)
        if not only or "gate" in only:
            gate_row()
        if not only or "memory" in only:
            memory_row(ws)


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(exit_status())
