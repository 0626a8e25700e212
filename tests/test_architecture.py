"""The architecture bar: no import cycles (function-level imports count), no module in internal/
over the size a reader can hold, no process-wide umask flips, and one stable, documented error
code for each failure a host acts on."""

from __future__ import annotations

import ast
import asyncio
import re
from pathlib import Path

from agent_toolsmith.config import Config
from agent_toolsmith.permission import Decision, PermissionRequest
from agent_toolsmith.session import Session

ROOT = Path(__file__).resolve().parent.parent
INTERNAL = ROOT / "internal"
PACKAGE = "agent_toolsmith"
#: Lines a module in internal/ may have (docstrings and comments count: they are read too).
MAX_MODULE_LINES = 450


def _modules() -> dict[str, Path]:
    found = {}
    for path in INTERNAL.rglob("*.py"):
        parts = list(path.relative_to(INTERNAL).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join([PACKAGE, *parts])] = path
    return found


def _imported(module: str, path: Path, node: ast.Import | ast.ImportFrom, modules: dict[str, Path]) -> list[str]:
    """The internal modules an import statement runs: ``from pkg import submodule`` reaches the
    submodule, not the package's own code; anything else reaches the module named."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name.startswith(PACKAGE)]
    if node.level:
        base = module.split(".")
        if path.name != "__init__.py":
            base = base[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    elif (node.module or "").startswith(PACKAGE):
        target = node.module or ""
    else:
        return []
    submodules = [f"{target}.{alias.name}" for alias in node.names if f"{target}.{alias.name}" in modules]
    return submodules + ([target] if len(submodules) < len(node.names) else [])


def _import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):  # every level: lazy imports count
            if isinstance(node, ast.Import | ast.ImportFrom):
                for target in _imported(module, path, node, modules):
                    while target and target not in modules:
                        target = target.rpartition(".")[0]
                    if target and target != module:
                        edges.add(target)
        graph[module] = edges
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            advanced = False
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_lazy_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_counting_function_level_imports() -> None:
    graph = _import_graph()
    assert len(graph) > 100 and graph[f"{PACKAGE}.session"]
    assert _cycles(graph) == []


def test_no_module_in_internal_is_over_the_size_limit() -> None:
    sizes = {
        path.relative_to(ROOT): len(path.read_text(encoding="utf-8").splitlines())
        for path in INTERNAL.rglob("*.py")
    }
    assert max(sizes.values()) > 100
    assert {str(path): n for path, n in sizes.items() if n > MAX_MODULE_LINES} == {}


def test_nothing_flips_the_process_wide_umask() -> None:
    flips = [str(path) for path in INTERNAL.rglob("*.py") if "os.umask(" in path.read_text(encoding="utf-8")]
    assert flips == []


async def _refuse(request: PermissionRequest) -> Decision:
    return Decision.DENY


def test_each_failure_a_host_acts_on_has_its_own_documented_code(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "twice.py").write_text("x = 1\nx = 1\n")
    (workspace / "unread.py").write_text("y = 2\n")
    outside = tmp_path / "elsewhere.txt"

    async def codes() -> dict[str, str]:
        async with Session(workspace, config=Config(lsp_enabled=False)) as session, Session(
            workspace, config=Config(lsp_enabled=False), asker=_refuse
        ) as refusing:
            await session.run("view", {"file_path": "twice.py"})
            calls = {
                "invalid params": session.run("view", {"file_path": 3}),
                "unknown tool": session.run("veiw", {}),
                "not found": session.run("view", {"file_path": "missing.py"}),
                "not read": session.run("edit", {"file_path": "unread.py", "old_string": "y", "new_string": "z"}),
                "ambiguous": session.run("edit", {"file_path": "twice.py", "old_string": "x = 1", "new_string": "x"}),
                "no match": session.run("edit", {"file_path": "twice.py", "old_string": "nowhere", "new_string": "x"}),
                "outside": session.run("write", {"file_path": str(outside), "content": "x"}),
                "timeout": session.run("bash", {"command": "sleep 30", "timeout": 200}),
                "denied": refusing.run("write", {"file_path": "new.txt", "content": "x"}),
            }
            results = {}
            for situation, call in calls.items():
                response = await call
                assert response.is_error, (situation, response.content)
                results[situation] = response.metadata.get("error")
            return results

    found = asyncio.run(codes())
    assert all(isinstance(code, str) for code in found.values()), found
    assert len(set(found.values())) == len(found), found
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", (ROOT / "docs" / "error-codes.md").read_text(), re.MULTILINE))
    assert set(found.values()) <= documented, set(found.values()) - documented
    assert not outside.exists() and not (workspace / "new.txt").exists()
    assert (workspace / "twice.py").read_text() == "x = 1\nx = 1\n"


def test_no_tool_module_imports_another_tool() -> None:
    """What two tools share is a service (llm/change, shell/job_report, syntax/…), never a
    sibling tool's module (docs/architecture.md)."""
    from agent_toolsmith.llm.tools.builtins import TOOL_MODULES

    graph = _import_graph()
    tools = set(TOOL_MODULES.values())
    assert len(tools) > 15
    crossing = {module: sorted(graph[module] & tools) for module in tools if graph[module] & tools}
    assert crossing == {}


#: Modules of internal/ a plain edit enters, worker thread included (43 when this bound was set:
#: the tool layer, the change pipeline, the matcher, the syntax gate, the diff, the commit and the
#: read tracker). A change that makes one edit cross more of the code must say why here.
MAX_EDIT_MODULES = 46


def test_a_plain_edit_crosses_a_bounded_number_of_modules(workspace: Path) -> None:
    import concurrent.futures
    import sys
    import threading

    (workspace / "a.py").write_text("x = 1\ny = 2\n")
    (workspace / "warm.py").write_text("x = 1\ny = 2\n")
    entered: set[str] = set()

    def profile(frame: object, event: str, arg: object) -> None:
        if event == "call":
            name = getattr(frame, "f_globals", {}).get("__name__", "")
            if name.startswith(PACKAGE):
                entered.add(name)

    async def main() -> None:
        session = Session(workspace, config=Config(lsp_enabled=False))
        for name in ("warm.py", "a.py"):  # the first edit of a process also runs the modules' imports
            await session.run("view", {"file_path": name})
        await session.run("edit", {"file_path": "warm.py", "old_string": "x = 1", "new_string": "x = 3"})
        threading.setprofile(profile)  # type: ignore[arg-type]
        sys.setprofile(profile)  # type: ignore[arg-type]
        asyncio.get_running_loop().set_default_executor(concurrent.futures.ThreadPoolExecutor())
        try:
            edited = await session.run("edit", {"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 3"})
        finally:
            sys.setprofile(None)
            threading.setprofile(None)  # type: ignore[arg-type]
        assert not edited.is_error, edited.content

    asyncio.run(main())
    assert f"{PACKAGE}.llm.change.pipeline" in entered and f"{PACKAGE}.fsutil.commit" in entered
    assert len(entered) <= MAX_EDIT_MODULES, sorted(entered)


def test_every_failure_is_a_typed_outcome_with_a_code() -> None:
    """One outcome channel (errors.py): a ToolError made in internal/ names its code (a subclass's,
    or code=); nothing outside the runner builds an error response by hand."""
    bare: list[str] = []
    by_hand: list[str] = []
    for path in INTERNAL.rglob("*.py"):
        source = path.read_text(encoding="utf-8")
        where = str(path.relative_to(ROOT))
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", getattr(node.func, "attr", None))
            keywords = {k.arg: k.value for k in node.keywords}
            if name == "ToolError" and "code" not in keywords:
                bare.append(f"{where}:{node.lineno}")
            error_flag = keywords.get("is_error")
            if name == "ToolResponse" and isinstance(error_flag, ast.Constant) and error_flag.value is True:
                by_hand.append(f"{where}:{node.lineno}")
    assert bare == []
    assert by_hand == ["internal/llm/tools/runner.py:" + by_hand[0].rsplit(":", 1)[1]] if by_hand else True
    assert len(by_hand) == 1  # the runner's error_response


def test_every_tool_error_class_names_its_code() -> None:
    import importlib
    import pkgutil

    import agent_toolsmith
    from agent_toolsmith.errors import ToolCancelled, ToolError

    for module in pkgutil.walk_packages(agent_toolsmith.__path__, f"{PACKAGE}."):
        if not module.name.endswith(("__main__", "probe_child")):
            importlib.import_module(module.name)

    def subclasses(cls: type) -> list[type]:
        return [s for c in cls.__subclasses__() for s in (c, *subclasses(c))]

    uncoded = sorted(c.__name__ for c in subclasses(ToolError) if c.code is None and c is not ToolCancelled)
    assert uncoded == []  # ToolCancelled is the one without: a cancelled call has metadata["aborted"]
