"""The LSP layer's truth on a large project: silent answers, and the time bounds.

Silent answers: edits that break a file, and whether the answer says so.

An edit that breaks something gets one of three answers: **reported** (the new error in the changed
file, or an importer it broke, is named), **unconfirmed** (the answer says what it could not check
in time), or **silent** (neither) — the one that must never happen. Each break is then reverted:
the revert's answer must not show the fixed error (a *stale fix*) nor blame other files for
errors (a *blamed revert*).

Bounds (docs/lsp.md): the slowest view with servers running (VIEW_WAIT_CAP_S), view that starts
them (VIEW_COLD_CAP_S) and lsp diagnostics operation (QUERY_WAIT_S), each + 100 ms of the tool's
own work.

Used by bench/lsp.py on a generated Django-sized project, and by hand on a real project:

    python bench/lsp_truth.py /tmp/Django-5.1.4 django [--load] [--cli]

(the edits are derived from the tree: a type error appended to some modules, and top-level
functions of ``<package>/utils`` that other modules import renamed).
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from agent_toolsmith.config import Config
from agent_toolsmith.session import Session

ROOT = Path(__file__).resolve().parents[1]
TS_SERVER = ROOT / ".lsp-servers" / "node_modules" / ".bin" / "typescript-language-server"
ONLY_BASEDPYRIGHT = {name: {"disabled": True} for name in ("pyright", "pylsp", "ruff")}
BREAK_LINE = '_toolsmith_break: int = "x"\n'
BREAK_MESSAGE = 'is not assignable to declared type "int"'


@dataclass(frozen=True)
class Breaking:
    """One breaking edit (``old`` → ``new`` in ``path``) and what it breaks: an error on line
    ``own_line`` of the file itself, or the files in ``importers``."""

    path: str
    old: str
    new: str
    own_line: int | None = None
    importers: tuple[str, ...] = ()

    def edit(self, *, revert: bool = False) -> dict[str, str]:
        old, new = (self.new, self.old) if revert else (self.old, self.new)
        return {"file_path": self.path, "old_string": old, "new_string": new}


@dataclass
class Tally:
    reported: int = 0
    unconfirmed: int = 0
    silent: int = 0
    stale_fixes: int = 0
    blamed_reverts: int = 0
    seconds: list[float] = field(default_factory=list)
    silent_cases: list[str] = field(default_factory=list)
    blamed_cases: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        for name in ("reported", "unconfirmed", "silent", "stale_fixes", "blamed_reverts"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.seconds += other.seconds
        self.silent_cases += other.silent_cases
        self.blamed_cases += other.blamed_cases

    def summary(self) -> str:
        total = self.reported + self.unconfirmed + self.silent
        return (
            f"silent {self.silent}/{total}, unconfirmed {self.unconfirmed}, reported {self.reported}; "
            f"stale fixes {self.stale_fixes}, blamed reverts {self.blamed_reverts}"
        )


def classify(content: str, case: Breaking) -> str:
    if case.own_line is not None and f"Error: {case.path}:{case.own_line}:" in content:
        return "reported"
    lines = content.splitlines()
    for importer in case.importers:
        if any(line.startswith(f"Error: {importer}:") for line in lines):
            return "reported"
        if any(line.startswith("... and ") and "with new errors:" in line and importer in line for line in lines):
            return "reported"
    return "unconfirmed" if "unconfirmed" in content else "silent"


def judge(tally: Tally, case: Breaking, broke: str, reverted: str, seconds: float) -> None:
    verdict = classify(broke, case)
    setattr(tally, verdict, getattr(tally, verdict) + 1)
    if verdict == "silent":
        tally.silent_cases.append(f"{case.path}: {case.old.strip()[:40]!r}\n{broke}")
    tally.seconds.append(seconds)
    if case.own_line is not None and any(
        line.startswith(f"Error: {case.path}:{case.own_line}:") and (BREAK_MESSAGE in line or TS_BREAK_MESSAGE in line)
        for line in reverted.splitlines()
    ):
        tally.stale_fixes += 1
    if "<project_diagnostics>" in reverted:
        tally.blamed_reverts += 1
        tally.blamed_cases.append(f"{case.path}: {case.old.strip()[:40]!r} reverted\n{reverted}")


# --- running the edits ------------------------------------------------------------------------------


async def api_run(root: Path, cases: list[Breaking], *, cold: bool, config: Config) -> tuple[Tally, list[float]]:
    """Each break and its revert through Session.run: warm (one session, servers started by a
    first view) or cold (a session per break whose edit starts the servers, as in the CLI).
    Returns the tally and, per break, the same edit's time without diagnostics (the reference)."""
    tally, reference = Tally(), []
    session: Session | None = None
    try:
        for case in cases:
            if session is None or cold:
                if session is not None:
                    await session.close()
                session = Session(root, config=config)
                if not cold:  # the servers start (and get their first answer) before the edits
                    await session.run("lsp", {"file_path": case.path})
            await session.run("view", {"file_path": case.path, "limit": 1})
            started = time.monotonic()
            broke = await session.run("edit", case.edit())
            seconds = time.monotonic() - started
            reverted = await session.run("edit", case.edit(revert=True))
            judge(tally, case, broke.content, reverted.content, seconds)
            started = time.monotonic()
            await session.run("edit", case.edit(), lsp=False)
            reference.append(time.monotonic() - started)
            await session.run("edit", case.edit(revert=True), lsp=False)
    finally:
        if session is not None:
            await session.close()
    return tally, reference


def cli_batch_run(root: Path, cases: list[Breaking], state: Path) -> Tally:
    """Every break and revert in one `toolsmith --batch` process: a view starts no server there,
    so the first edit does."""
    lines = []
    for case in cases:
        lines.append({"tool": "view", "params": {"file_path": case.path, "limit": 1}})
        lines.append({"tool": "edit", "params": case.edit()})
        lines.append({"tool": "edit", "params": case.edit(revert=True)})
    env = {**os.environ, "TOOLSMITH_STATE_DIR": str(state)}
    done = subprocess.run(
        [sys.executable, "-m", "cmd.tools", "--cwd", str(root), "--batch", "-"],
        cwd=ROOT, input="".join(json.dumps(line) + "\n" for line in lines), capture_output=True, text=True,
        timeout=60 + 30 * len(cases), env=env,
    )  # fmt: skip
    results = [json.loads(line) for line in done.stdout.splitlines()]
    tally = Tally()
    for i, case in enumerate(cases):
        broke, reverted = results[3 * i + 1], results[3 * i + 2]
        seconds = broke.get("metadata", {}).get("duration_ms", 0) / 1000
        judge(tally, case, broke["content"], reverted["content"], seconds)
    return tally


def _burn(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


@contextmanager
def cpu_load(on: bool) -> Iterator[None]:
    """Every CPU busy with a spinning process while inside (``on``), all stopped after."""
    workers = [multiprocessing.Process(target=_burn, args=(3600,)) for _ in range(os.cpu_count() or 2)] if on else []
    for worker in workers:
        worker.start()
    try:
        yield
    finally:
        for worker in workers:
            worker.kill()
            worker.join(10)


async def worst_times(root: Path, paths: list[str], config: Config) -> dict[str, float]:
    """The slowest view that starts the servers (a fresh session per path), view of another file
    with them running, and lsp diagnostics operation on a changed file (changed without
    diagnostics, so the lsp call is the one that asks), over ``paths``."""
    worst = {"start": 0.0, "view": 0.0, "diagnostics": 0.0}
    for path, other in zip(paths, [*paths[1:], paths[0]], strict=True):
        session = Session(root, config=replace(config, lsp_on_view=True))
        try:
            for kind, viewed in (("start", path), ("view", other)):
                started = time.monotonic()
                await session.run("view", {"file_path": viewed, "limit": 1})
                worst[kind] = max(worst[kind], time.monotonic() - started)
            case = own_break(root, root / path)
            if case is not None:  # the change made without diagnostics: the lsp call does the asking
                await session.run("edit", case.edit(), lsp=False)
                started = time.monotonic()
                await session.run("lsp", {"file_path": path})
                worst["diagnostics"] = max(worst["diagnostics"], time.monotonic() - started)
                await session.run("edit", case.edit(revert=True), lsp=False)
        finally:
            await session.close()
    return worst


# --- the edits -----------------------------------------------------------------------------------


def own_break(root: Path, path: Path, line: str = BREAK_LINE) -> Breaking | None:
    """A type error (``line``) appended at the end of ``path`` (after its last line, kept unique)."""
    text = path.read_text(encoding="utf-8")
    if not text.endswith("\n"):
        return None
    lines = text.split("\n")[:-1]
    for size in range(1, min(len(lines), 6) + 1):
        tail = "\n".join(lines[-size:]) + "\n"
        if tail.strip() and text.count(tail) == 1:
            return Breaking(str(path.relative_to(root)), tail, tail + line, own_line=len(lines) + 1)
    return None


def importer_breaks(root: Path, package: str, count: int) -> list[Breaking]:
    """Renames of top-level functions of ``package/utils`` used by other modules (most used first,
    each by at most 40 modules)."""
    utils = root / package / "utils"
    sources = {p: p.read_text(encoding="utf-8", errors="replace") for p in _modules(root / package)}
    found = []
    for module in sorted(utils.rglob("*.py")):
        dotted = ".".join(module.relative_to(root).with_suffix("").parts)
        text = sources.get(module, "")
        importers = [p for p, t in sources.items() if p != module and re.search(rf"from {re.escape(dotted)} import", t)]
        for name in re.findall(r"^def (\w+)\(", text, re.MULTILINE):
            if name.startswith("_") or text.count(f"def {name}(") != 1:
                continue
            users = [p for p in importers if re.search(rf"\b{name}\b", sources[p])]
            if 1 <= len(users) <= 40:
                rel = tuple(str(p.relative_to(root)) for p in users)
                path = str(module.relative_to(root))
                found.append(Breaking(path, f"def {name}(", f"def {name}_gone(", importers=rel))
    found.sort(key=lambda b: (-len(b.importers), b.path, b.old))
    return found[:count]


def derived_breaks(root: Path, package: str, own: int, importers: int) -> list[Breaking]:
    """``own`` appended type errors (spread over the package's larger modules) and ``importers``
    renames, interleaved."""
    modules = [p for p in _modules(root / package) if p.stat().st_size > 2000]
    step = max(len(modules) // max(own, 1), 1)
    largest = max(modules, key=lambda p: p.stat().st_size)  # the most old errors (Django: sql/query.py)
    spread = [largest, *(p for p in modules[::step] if p != largest)]
    owns = [b for b in (own_break(root, p) for p in spread) if b is not None][:own]
    return _interleaved(owns, importer_breaks(root, package, importers))


def _interleaved(first: list[Breaking], second: list[Breaking]) -> list[Breaking]:
    out = []
    for i in range(max(len(first), len(second))):
        out += first[i : i + 1] + second[i : i + 1]
    return out


TS_BREAK_LINE = 'export const toolsmithBreak: number = "x";\n'
TS_BREAK_MESSAGE = "is not assignable to type 'number'"


def ts_breaks(root: Path, own: int, importers: int) -> list[Breaking]:
    """A TypeScript monorepo (vuejs/core's shape): ``own`` type errors appended to packages'
    sources, and ``importers`` renames of functions that ``packages/shared`` exports and other
    packages import from ``@vue/shared``."""
    sources = sorted(p for p in root.glob("packages/*/src/**/*.ts") if not p.name.endswith(".d.ts"))
    large = [p for p in sources if p.stat().st_size > 3000]
    spread = large[:: max(len(large) // max(own, 1), 1)]
    owns = [b for b in (own_break(root, p, TS_BREAK_LINE) for p in spread) if b is not None][:own]
    texts = {p: p.read_text(encoding="utf-8", errors="replace") for p in sources}
    renames = []
    for module in sorted(root.glob("packages/shared/src/*.ts")):
        for name in re.findall(r"^export function (\w+)\(", texts.get(module, ""), re.MULTILINE):
            users = [
                p for p, t in texts.items()
                if "packages/shared/" not in str(p) and "'@vue/shared'" in t and re.search(rf"\b{name}\b", t)
            ]  # fmt: skip
            if 1 <= len(users) <= 40 and texts[module].count(f"function {name}(") == 1:
                rel = tuple(str(u.relative_to(root)) for u in users)
                renames.append(Breaking(str(module.relative_to(root)), f"function {name}(", f"function {name}Gone(",
                                        importers=rel))  # fmt: skip
    renames.sort(key=lambda b: (-len(b.importers), b.path, b.old))
    return _interleaved(owns, renames[:importers])


def _modules(package: Path) -> list[Path]:
    skip = {"tests", "migrations", "locale", "conf"}
    return sorted(p for p in package.rglob("*.py") if not skip & set(p.relative_to(package).parts))


# --- a generated Django-sized project ------------------------------------------------------------

PACKAGES, MODULES, HELPERS = 30, 30, 40


def django_sized_project(root: Path) -> None:
    """PACKAGES × MODULES modules (900, like django/) of classes that call shared helpers of
    ``shop/utils/text.py``; every tenth module carries 25 old type errors, like query.py."""
    (root / "pyproject.toml").write_text("[project]\nname = 'shop'\nversion = '0'\n")
    utils = root / "shop" / "utils"
    utils.mkdir(parents=True)
    for init in (root / "shop" / "__init__.py", utils / "__init__.py"):
        init.write_text("")
    helpers = "".join(
        f"def helper{h}(value: str, times: int = 1) -> str:\n    return (value + '{h}') * times\n\n\n"
        for h in range(HELPERS)
    )
    (utils / "text.py").write_text(helpers)
    for p in range(PACKAGES):
        package = root / "shop" / f"pkg{p}"
        package.mkdir()
        (package / "__init__.py").write_text("")
        for m in range(MODULES):
            (package / f"mod{m}.py").write_text(_module(p, m))


def _module(p: int, m: int) -> str:
    used = sorted({(p * MODULES + m) % HELPERS, (p + 3 * m) % HELPERS})
    head = f"from shop.utils.text import {', '.join(f'helper{h}' for h in used)}\n"
    if m:
        head += f"from shop.pkg{p}.mod{m - 1} import Thing{m - 1}\n"
    body = f"\n\nclass Thing{m}:\n"
    for j in range(12):
        helper = used[j % len(used)]
        body += f"    def method{j}(self, name: str) -> str:\n        return helper{helper}(name, {j + 1})\n\n"
    if m:
        body += f"    def previous(self) -> str:\n        return Thing{m - 1}().method0('x')\n\n"
    old = "".join(f'old_{i}: int = "x"\n' for i in range(25)) if m % 10 == 0 else ""
    return head + body + "\n" + old + f"VALUE{m} = Thing{m}().method1('y')\n"


def generated_breaks(root: Path, count: int) -> list[Breaking]:
    """Half appended type errors (in modules with and without old errors), half helper renames."""
    out = []
    for i in range(count):
        p, m = (7 * i) % PACKAGES, (3 * i) % MODULES
        if i % 2 == 0:
            case = own_break(root, root / "shop" / f"pkg{p}" / f"mod{m}.py")
            assert case is not None
            out.append(case)
        else:
            h = i % HELPERS
            users = tuple(
                f"shop/pkg{a}/mod{b}.py" for a in range(PACKAGES) for b in range(MODULES)
                if re.search(rf"\bhelper{h}\b", _module(a, b).split("\n", 1)[0])
            )  # fmt: skip
            out.append(Breaking("shop/utils/text.py", f"def helper{h}(", f"def helper{h}_gone(", importers=users))
    return out


async def main(argv: list[str]) -> int:
    root, package = Path(argv[0]).resolve(), argv[1]
    if "--ts" in argv:
        cases = ts_breaks(root, own=16, importers=16)
        servers: dict[str, dict[str, object]] = {"typescript": {"command": [str(TS_SERVER), "--stdio"]}}
    else:
        cases = derived_breaks(root, package, own=16, importers=16)
        servers = {name: {"disabled": True} for name in ONLY_BASEDPYRIGHT}
    print(f"{len(cases)} breaking edits in {root} ({sum(c.own_line is not None for c in cases)} own-file)")
    config = Config(lsp_servers=servers)
    with cpu_load("--load" in argv):
        if "--cli" in argv:
            (root / ".toolsmith").mkdir(exist_ok=True)
            (root / ".toolsmith" / "config.toml").write_text(
                "".join(f"[lsp.servers.{name}]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in spec.items())
                        for name, spec in servers.items())
            )  # fmt: skip
            tally = cli_batch_run(root, cases, root / ".toolsmith" / "state")
            label = "CLI --batch"
        else:
            cold = "--cold" in argv  # then the edit starts the servers, as in the CLI
            tally, _ = await api_run(root, cases, cold=cold, config=replace(config, lsp_on_view=not cold))
            label = "API " + ("cold" if "--cold" in argv else "warm")
    print(f"{label}{' under load' if '--load' in argv else ''}: {tally.summary()}")
    seconds = sorted(tally.seconds)
    print(f"edit seconds: median {seconds[len(seconds) // 2]:.2f}, max {seconds[-1]:.2f}")
    for case in tally.silent_cases:
        print("SILENT:", case)
    for case in tally.blamed_cases:
        print("BLAMED:", case)
    return 1 if tally.silent else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
