"""Structure-aware edits: the perturbations text matching alone gets wrong, and the gate's cost.

Cases come from the running interpreter's standard library (real code no one here wrote), run
through Session.run as a model would call the tools. Each case ends as: applied correctly (the
file is the intended result and still compiles), refused (nothing written), or applied wrongly.
The bar: 0 applied wrongly; the "must refuse" kinds refused every time.

- gutter: old_string/new_string copied with view's ``NNNNNN|`` prefix (must apply);
- mid_line: a unique statement matched after its indentation, replaced by a comment line plus
  the statement written at column 0 — the marshmallow case (must apply, re-indented);
- mid_line_parses: the same statement with its newline, then a comment line at column 0, which
  spliced as written still parses (must apply, re-indented: the comment stays in its block);
- after_formatter: the file changed outside (an import added at the top) after the read; the
  edit targets a function far below (must apply, re-anchored) — each case in a session of its own,
  then all of them again in one session that read every file first;
- touched_region: the outside change edited the target lines themselves (must refuse);
- lazy_placeholder: old_string elides a function's middle with ``...`` or a comment saying the
  code is unchanged (must refuse: that text is not in the file).

Then the syntax gate's cost per edit on a 10k-line Python file: the same sequence of edits in
two sessions, gate on and gate off, interleaved, and the gate's own time (judge) per edit.
Goal: < 5 ms per edit and < 10% of the edit's time. Last, outline's time on that file and on
500 nested classes (printed, no goal).
"""

from __future__ import annotations

import ast
import asyncio
import random
import statistics
import sys
import sysconfig
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from agent_toolsmith.config import Config
from agent_toolsmith.session import Session
from agent_toolsmith.syntax import SyntaxCache, judge

SEED = 2323
FILES = 40
CASES_PER_KIND_PER_FILE = 2
GATE_FILE_LINES = 10_000
GATE_EDITS = 40

MUST_REFUSE = {"touched_region", "lazy_placeholder"}


def run(session: Session, tool: str, params: dict[str, Any]) -> Any:
    return asyncio.run(session.run(tool, params))


def corpus(rng: random.Random) -> list[Path]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = []
    for path in sorted(stdlib.glob("*.py")):
        try:
            text = path.read_text("utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if 200 < text.count("\n") < 3000 and "\t" not in text and "\r" not in text:
            try:
                ast.parse(text)
            except SyntaxError:
                continue
            files.append(path)
    rng.shuffle(files)
    return files[:FILES]


def functions(text: str) -> list[tuple[int, int]]:
    """(first, last) 0-based line ranges of functions with at least 4 body lines."""
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
            if node.end_lineno - first >= 5:
                out.append((first, node.end_lineno - 1))
    return out


def unique(text: str, needle: str) -> bool:
    return text.count(needle) == 1


class Case:
    def __init__(self, kind: str, old: str, new: str, expected: str | None, outside: str | None = None) -> None:
        self.kind, self.old, self.new, self.expected, self.outside = kind, old, new, expected, outside


def gutter_case(lines: list[str], text: str, span: tuple[int, int], rng: random.Random) -> Case | None:
    first, last = span
    a = rng.randint(first, last - 2)
    b = a + 2
    chunk = lines[a : b + 1]
    target = next((i for i, line in enumerate(chunk) if line.strip()), None)
    if target is None:
        return None
    edited = list(chunk)
    edited[target] = edited[target] + "  # changed"
    old = "\n".join(f"{a + 1 + i:6d}|{line}" for i, line in enumerate(chunk))
    new = "\n".join(f"{a + 1 + i:6d}|{line}" for i, line in enumerate(edited))
    expected = "\n".join(lines[:a] + edited + lines[b + 1 :])
    return Case("gutter", old, new, expected)


def mid_line_case(lines: list[str], text: str, span: tuple[int, int], rng: random.Random) -> Case | None:
    first, last = span
    candidates = [
        i
        for i in range(first + 1, last + 1)
        if lines[i].startswith("        ")
        and lines[i].strip().startswith(("return ", "x = ", "self.", "result"))
        and not lines[i].rstrip().endswith(("(", "[", "{", ",", "\\"))
        and unique(text, lines[i].strip())
    ]
    if not candidates:
        return None
    i = rng.choice(candidates)
    stmt = lines[i].strip()
    indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
    expected = "\n".join([*lines[:i], f"{indent}# note", lines[i], *lines[i + 1 :]])
    return Case("mid_line", stmt, f"# note\n{stmt}", expected)


def mid_line_parses_case(lines: list[str], text: str, span: tuple[int, int], rng: random.Random) -> Case | None:
    """The shape where the literal splice still parses: the statement with its line's newline,
    then a comment line written at column 0 (spliced as written, it lands at column 0 and nothing
    complains)."""
    found = mid_line_case(lines, text, span, rng)
    if found is None:
        return None
    stmt = found.old
    i = next(n for n, line in enumerate(lines) if line.strip() == stmt)
    indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
    expected = "\n".join([*lines[: i + 1], f"{indent}# checked", *lines[i + 1 :]])
    return Case("mid_line_parses", f"{stmt}\n", f"{stmt}\n# checked\n", expected)


def formatter_case(lines: list[str], text: str, span: tuple[int, int], rng: random.Random) -> Case | None:
    first, last = span
    if first < 5:
        return None
    block = "\n".join(lines[first : last + 1])
    if not unique(text, block):
        return None
    new_block = block.replace(lines[last], lines[last] + "  # edited", 1)
    outside = "import sys as _bench_sys  # added by a formatter\n" + text
    expected = outside.replace(block, new_block, 1)
    return Case("after_formatter", block, new_block, expected, outside)


def touched_case(lines: list[str], text: str, span: tuple[int, int], rng: random.Random) -> Case | None:
    first, last = span
    block = "\n".join(lines[first : last + 1])
    if not unique(text, block):
        return None
    middle = rng.randint(first + 1, last - 1)
    outside_lines = list(lines)
    outside_lines[middle] = outside_lines[middle] + "  # touched outside"
    outside = "\n".join(outside_lines)
    return Case("touched_region", block, block.replace(lines[last], lines[last] + "  # edited", 1), None, outside)


def lazy_case(lines: list[str], text: str, span: tuple[int, int], rng: random.Random) -> Case | None:
    first, last = span
    indent = lines[first + 1][: len(lines[first + 1]) - len(lines[first + 1].lstrip())] or "    "
    filler = rng.choice([f"{indent}...", f"{indent}# ... existing code ...", f"{indent}# (unchanged)"])
    old = "\n".join([lines[first], filler, lines[last]])
    new = "\n".join([lines[first], filler, lines[last] + "  # edited"])
    return Case("lazy_placeholder", old, new, None)


MAKERS = [gutter_case, mid_line_case, formatter_case, touched_case, lazy_case]
#: Kinds added later draw from their own random stream, so the earlier kinds' cases stay the same.
LATER_MAKERS = [mid_line_parses_case]


def run_case(root: Path, name: str, text: str, case: Case) -> str:
    path = root / name
    path.write_text(text)
    session = Session(root, config=Config(lsp_enabled=False))
    run(session, "view", {"file_path": name})
    return edit_and_judge(session, path, case)


def long_session(root: Path, cases: list[tuple[str, Case]]) -> Counter[str]:
    """The after_formatter cases again, in one session that first read every case's file (real
    sessions read 50-300 files): the read tracker must still hold each one's content to re-anchor."""
    session = Session(root, config=Config(lsp_enabled=False))
    paths = []
    for n, (text, _) in enumerate(cases):
        paths.append(root / f"long{n}.py")
        paths[-1].write_text(text)
        run(session, "view", {"file_path": paths[-1].name})
    return Counter(edit_and_judge(session, path, case) for path, (_, case) in zip(paths, cases, strict=True))


def edit_and_judge(session: Session, path: Path, case: Case) -> str:
    """The outside change (if any), the edit, and how it ended: correct, refused or wrong."""
    if case.outside is not None:
        path.write_text(case.outside)
    before = path.read_text()
    r = run(session, "edit", {"file_path": path.name, "old_string": case.old, "new_string": case.new})
    after = path.read_text()
    if r.is_error:
        return "refused" if after == before else "wrong"  # an error that wrote is the worst outcome
    if case.expected is not None and after == case.expected:
        try:
            ast.parse(after)
        except SyntaxError:
            return "wrong"
        return "correct"
    return "wrong"


def fidelity() -> bool:
    rng = random.Random(SEED)
    later_rng = random.Random(SEED + 1)
    outcomes: dict[str, Counter[str]] = {}
    formatted: list[tuple[str, Case]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for index, path in enumerate(corpus(rng)):
            text = path.read_text("utf-8")
            lines = text.split("\n")
            spans = functions(text)
            if not spans:
                continue
            for maker in MAKERS + LATER_MAKERS:
                draw = later_rng if maker in LATER_MAKERS else rng
                for _ in range(CASES_PER_KIND_PER_FILE):
                    case = maker(lines, text, draw.choice(spans), draw)
                    if case is None:
                        continue
                    result = run_case(root, f"f{index}.py", text, case)
                    outcomes.setdefault(case.kind, Counter())[result] += 1
                    if case.kind == "after_formatter":
                        formatted.append((text, case))
        outcomes[f"after_formatter, one session ({len(formatted)} files read)"] = long_session(root, formatted)
    ok = True
    print(f"{'kind':44} {'cases':>6} {'correct':>8} {'refused':>8} {'wrong':>6}   bar")
    for kind, counts in outcomes.items():
        total = sum(counts.values())
        bar = "refused == cases" if kind in MUST_REFUSE else "correct == cases"
        met = counts["wrong"] == 0 and (
            counts["refused"] == total if kind in MUST_REFUSE else counts["correct"] == total
        )
        ok &= met
        print(
            f"{kind:44} {total:6d} {counts['correct']:8d} {counts['refused']:8d} {counts['wrong']:6d}   "
            f"{bar} {'MET' if met else 'MISSED'}"
        )
    return ok


def big_file() -> str:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    parts, count = [], 0
    for name in ("argparse.py", "typing.py", "inspect.py", "dataclasses.py", "enum.py"):
        text = (stdlib / name).read_text("utf-8")
        parts.append(text)
        count += text.count("\n")
        if count >= GATE_FILE_LINES:
            break
    lines = "\n".join(parts).split("\n")[:GATE_FILE_LINES]
    text = "\n".join(lines) + "\n"
    while True:  # cut back to a prefix that parses (the cut may split a statement)
        try:
            ast.parse(text)
            return text
        except SyntaxError as exc:
            text = "\n".join(text.split("\n")[: (exc.lineno or 2) - 1]) + "\n"


def gate_cost() -> bool:
    text = big_file()
    lines = text.split("\n")
    targets = [i for i, line in enumerate(lines) if line.strip().startswith("return ") and unique(text, line)]
    rng = random.Random(SEED)
    picks = rng.sample(targets, GATE_EDITS)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sessions = {}
        for mode in ("refuse", "off"):
            (root / f"{mode}.py").write_text(text)
            sessions[mode] = Session(root, config=Config(lsp_enabled=False, syntax_gate=mode))
            run(sessions[mode], "view", {"file_path": f"{mode}.py", "limit": 1})
            run(sessions[mode], "view", {"file_path": f"{mode}.py"})
        times: dict[str, list[float]] = {"refuse": [], "off": []}
        for n, i in enumerate(picks):
            old = lines[i]
            new = old + "  # checked"
            order = ("refuse", "off") if n % 2 == 0 else ("off", "refuse")
            for mode in order:
                start = time.perf_counter()
                r = run(sessions[mode], "edit", {"file_path": f"{mode}.py", "old_string": old, "new_string": new})
                times[mode].append(time.perf_counter() - start)
                assert not r.is_error, r.content
        # The gate alone, as the edit flow calls it (the session's tree cache warm after the first).
        cache = SyntaxCache()
        current = text
        judge_times = []
        for i in picks:
            after = current.replace(lines[i], lines[i] + "  # judged", 1)
            start = time.perf_counter()
            judge(current, after, "big.py", cache=cache)
            judge_times.append(time.perf_counter() - start)
            current = after
        cold_cache = SyntaxCache()
        start = time.perf_counter()
        judge(text, text.replace(lines[picks[0]], lines[picks[0]] + "  # x", 1), "big.py", cache=cold_cache)
        cold = time.perf_counter() - start
    on, off = statistics.median(times["refuse"]), statistics.median(times["off"])
    gate = statistics.median(judge_times[1:])
    print(f"\nsyntax gate on a {len(lines)}-line Python file, {GATE_EDITS} edits, interleaved (medians):")
    print(f"  edit with gate {on * 1000:7.2f} ms   without {off * 1000:7.2f} ms   ratio {on / off:5.2f}")
    print(
        f"  gate alone (judge, warm tree cache) {gate * 1000:6.2f} ms = {gate / on:5.1%} of the edit "
        "(goal < 5 ms, < 10%)"
    )
    print(f"  first edit of a file (cold cache: full parse) {cold * 1000:6.2f} ms")
    return gate < 0.005 and gate / on < 0.10


#: Outline calls timed per file (the median is printed).
OUTLINE_RUNS = 9
#: Classes nested in each other in the file that once crashed the process (it is parsed in a child
#: process first, syntax/probe.py, so its outline costs that child too).
NESTED_CLASSES = 500


def outline_cost() -> None:
    """outline through Session.run: the 10k-line file, and the 500-nested-class file."""
    nested = "".join(" " * i + f"class C{i}:\n" for i in range(NESTED_CLASSES)) + " " * NESTED_CLASSES + "pass\n"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "big.py").write_text(big_file())
        (root / "nested.py").write_text(nested)
        session = Session(root, config=Config(lsp_enabled=False))
        print("\noutline through Session.run (medians):")
        for name in ("big.py", "nested.py"):
            times = []
            for _ in range(OUTLINE_RUNS):
                start = time.perf_counter()
                r = run(session, "outline", {"path": name})
                times.append(time.perf_counter() - start)
                assert not r.is_error, r.content
            print(f"  {name:10} {statistics.median(times) * 1000:7.1f} ms   {r.content.splitlines()[0]}")


def main() -> int:
    """0 when the fidelity bar and the gate's cost goal are met, else 1."""
    fidelity_ok = fidelity()
    cost_ok = gate_cost()
    outline_cost()
    print(f"\nfidelity bar: {'MET' if fidelity_ok else 'MISSED'}; gate cost goal: {'MET' if cost_ok else 'MISSED'}")
    return 0 if fidelity_ok and cost_ok else 1


if __name__ == "__main__":
    sys.exit(main())
