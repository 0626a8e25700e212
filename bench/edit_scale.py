"""Edits at scale, the whole call through Session.run vs the raw file IO it cannot avoid.

- exact edit in a 10 MB source file vs raw read + str.replace + atomic write (temp, fsync, rename);
- fuzzy (indentation-shifted) and not-found edits in a 10k-line file vs the same raw IO.
Each tool call includes reading, matching, the diff for the result, permission, the atomic write
and read tracking; LSP is off. Target: 10 MB exact edit ≤ 5× raw IO.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from agent_toolsmith.config import Config
from agent_toolsmith.session import Session

RUNS = 9


def source(functions: int) -> str:
    body = "def function_{0}(x):\n    if x:\n        return x + {0}\n    return {0}\n\n"
    return "".join(body.format(i) for i in range(functions))


def raw_edit(path: Path, old: str, new: str) -> None:
    text = path.read_bytes().decode()
    data = text.replace(old, new, 1).encode()
    tmp = path.with_name(path.name + ".raw.tmp")
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


async def timed(session: Session, params: dict[str, object], expect_error: bool) -> float:
    await session.run("view", {"file_path": str(params["file_path"]), "limit": 1})
    start = time.perf_counter()
    response = await session.run("edit", params)
    elapsed = time.perf_counter() - start
    assert response.is_error == expect_error, response.content[:300]
    return elapsed


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        session = Session(ws, config=Config(lsp_enabled=False))
        big = ws / "big.py"
        big.write_text(source(int(10e6 // 80)))
        small = ws / "small.py"
        small.write_text(source(2000))  # 10k lines
        print(f"files: {big.stat().st_size / 1e6:.1f} MB, {small.read_text().count(chr(10))} lines")
        rows = []
        cases = [
            ("exact edit, 10 MB", big, "def function_60000(x):\n", "def renamed_60000(x):\n", False, 5.0),
            ("fuzzy edit, 10k lines", small, "def function_1000(x):\n  if x:\n      return x + 1000\n",
             "def function_1000(x):\n  if not x:\n      return x + 1000\n", False, None),
            ("not found, 10k lines", small, "def function_1000(y):\n    return nothing\n", "x", True, None),
        ]  # fmt: skip
        for label, path, old, new, error, target in cases:
            tool_times, raw_times = [], []
            for i in range(RUNS):
                # Alternate the edit and its inverse so every run changes the file.
                o, n = (old, new) if i % 2 == 0 else (new, old)
                if error:
                    o, n = old, new
                params: dict[str, object] = {"file_path": str(path), "old_string": o, "new_string": n}
                tool_times.append(await timed(session, params, error))
                start = time.perf_counter()
                raw_edit(path, "\n", "\n")  # the same read + replace + atomic write, changing nothing
                raw_times.append(time.perf_counter() - start)
            t_tool, t_raw = statistics.median(tool_times), statistics.median(raw_times)
            ratio = t_tool / t_raw
            note = f" (target <= {target}x) {'ok' if ratio <= target else 'OVER'}" if target else ""
            rows.append(f"{label:22} tool {t_tool * 1000:8.1f} ms  raw IO {t_raw * 1000:7.1f} ms  {ratio:6.2f}x{note}")
        print("\n".join(rows))


if __name__ == "__main__":
    asyncio.run(main())
