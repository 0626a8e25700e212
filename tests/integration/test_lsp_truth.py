"""LSP, round three: a busy server is not a hung one, "clean" only when confirmed, late diagnostics
delivered, health per server instance, gained errors by message — the deterministic cases against
the marker server (late publish, silence, crash), the TypeScript ones against the real server."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.lsp import manager as lsp_manager
from agent_toolsmith.lsp import supervisor as lsp_supervisor
from agent_toolsmith.lsp.manager import LspManager

from tests.integration.test_lsp import Driver
from tests.integration.test_lsp_real import TS_SERVER
from tests.integration.test_lsp_robust import marker


def _manager(d: Driver) -> LspManager:
    found = d.session.ctx.lsp
    assert isinstance(found, LspManager)
    return found


@pytest.fixture
def marker_driver(workspace: Path) -> Iterator[Driver]:
    d = Driver(workspace, Config(lsp_servers={"marker": marker()}))
    yield d
    d.close()


def test_a_server_that_publishes_7_s_late_is_kept_and_its_diagnostics_arrive(marker_driver: Driver) -> None:
    d = marker_driver
    (d.workspace / "slow.mark").write_text("DELAY_MS 7000\nfine\n")
    d.run("view", {"file_path": "slow.mark"})  # a view's short wait never counts against a server
    (client,) = _manager(d).clients.values()
    assert client._process is not None
    pid = client._process.pid
    edited = d.run("edit", {"file_path": "slow.mark", "old_string": "fine", "new_string": "ERROR: late one"})
    assert "Error:" not in edited.content
    assert "(Diagnostics: unconfirmed: marker is still analysing slow.mark after 4 s" in edited.content
    again = d.run("edit", {"file_path": "slow.mark", "old_string": "late one", "new_string": "late two"})
    assert "unconfirmed: marker is still analysing" in again.content and "unavailable" not in again.content
    # The lsp tool waits up to QUERY_WAIT_S: the publish (7 s after the edit) arrives meanwhile,
    # and is labelled as late.
    asked = d.run("lsp", {"file_path": "slow.mark"})
    assert "Diagnostics that arrived since your last edit of this file:" in asked.content, asked.content
    assert "Error: slow.mark:2:1 [marker][M1] late two" in asked.content
    (still,) = _manager(d).clients.values()
    assert still is client and still._process is not None and still._process.pid == pid  # never killed
    assert _manager(d).health == {}


def test_a_silent_server_is_hung_only_when_its_probe_gets_no_reply(
    marker_driver: Driver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lsp_supervisor, "HUNG_AFTER_S", 0.5)  # the first edit's 4 s wait passes it
    d = marker_driver
    (d.workspace / "h.mark").write_text("one\n")
    d.run("view", {"file_path": "h.mark"})
    first = d.run("edit", {"file_path": "h.mark", "old_string": "one", "new_string": "HANG"})
    assert "unconfirmed: marker is still analysing h.mark" in first.content
    later = d.run("edit", {"file_path": "h.mark", "old_string": "HANG", "new_string": "two"})
    assert "marker answered nothing for 0 s (hung) and was killed" in later.content, later.content
    assert _manager(d).clients == {}


def test_one_roots_trouble_never_disables_another(workspace: Path) -> None:
    for name in ("a", "b"):
        (workspace / name).mkdir()
        (workspace / name / "proj.toml").write_text("")
    spec = {**marker(), "root_markers": ["proj.toml"]}
    d = Driver(workspace, Config(lsp_servers={"marker": spec}))
    try:
        d.run("write", {"file_path": "a/x.mark", "content": "one\n"})
        d.run("write", {"file_path": "b/y.mark", "content": "one\n"})
        assert len(_manager(d).clients) == 2  # one server per root
        crashed = d.run("write", {"file_path": "a/x.mark", "content": "CRASH\n"})
        assert "marker exited" in crashed.content
        other = d.run("edit", {"file_path": "b/y.mark", "old_string": "one", "new_string": "ERROR: seen"})
        assert "Error: b/y.mark:1:1 [marker][M1] seen" in other.content
    finally:
        d.close()


def test_a_fix_is_not_blamed_for_another_files_old_errors(marker_driver: Driver) -> None:
    d = marker_driver
    (d.workspace / "old.mark").write_text("ERROR: old trouble\nERROR: more old trouble\n")
    (d.workspace / "fix.mark").write_text("ERROR: broken\n")
    d.run("view", {"file_path": "old.mark"})
    d.run("view", {"file_path": "fix.mark"})
    fixed = d.run("edit", {"file_path": "fix.mark", "old_string": "ERROR: broken", "new_string": "fine"})
    assert "old trouble" not in fixed.content and "<project_diagnostics>" not in fixed.content


def test_a_missing_configured_server_is_named(workspace: Path) -> None:
    d = Driver(workspace, Config(lsp_servers={"ghost": {"command": ["no-such-server-xyz"], "extensions": [".gh"]}}))
    try:
        (workspace / "g.gh").write_text("x\n")
        r = d.run("lsp", {"file_path": "g.gh"})
        assert r.is_error and "ghost is configured but its command 'no-such-server-xyz' is not installed" in r.content
    finally:
        d.close()


def test_document_symbols_in_source_order_and_capped(marker_driver: Driver) -> None:
    d = marker_driver
    (d.workspace / "s.mark").write_text("".join(f"def f{i}():\n" for i in range(130)))
    r = d.run("lsp", {"file_path": "s.mark", "operation": "document_symbol"})
    lines = r.content.splitlines()
    assert lines[0] == "f0 (Function) line 1" and lines[99] == "f99 (Function) line 100"
    assert lines[100] == "... and 30 more"


@pytest.fixture
def cold_ts(workspace: Path) -> Iterator[Path]:
    if not TS_SERVER.exists():
        if shutil.which("npm") is None:
            pytest.skip("npm is not installed, so typescript-language-server cannot be (make test installs it)")
        pytest.fail(f"{TS_SERVER} is missing: `make test` installs it with npm")
    (workspace / "tsconfig.json").write_text('{"compilerOptions": {"strict": true}}\n')
    for i in range(3):
        (workspace / f"m{i}.ts").write_text(f"export function f{i}(a: number): number {{\n  return a;\n}}\n")
    yield workspace


def test_cold_typescript_type_errors_are_never_silently_clean(cold_ts: Path) -> None:
    """Each break on a cold server (a fresh session each time) is reported or said to be
    unconfirmed — never a silent nothing."""
    for i in range(3):
        d = Driver(cold_ts, Config(lsp_servers={"typescript": {"command": [str(TS_SERVER), "--stdio"]}}))
        try:
            d.run("view", {"file_path": f"m{i}.ts"})
            r = d.run("edit", {"file_path": f"m{i}.ts", "old_string": "return a;", "new_string": "return 'x';"})
            reported = f"Error: m{i}.ts:2:3" in r.content and "not assignable to type 'number'" in r.content
            assert reported or "unconfirmed: typescript is still analysing" in r.content, r.content
        finally:
            d.close()


def _vue_shaped_monorepo(root: Path, packages: int = 6) -> None:
    """A root tsconfig with path aliases over packages that have a package.json but no tsconfig
    of their own (like vuejs/core): every package imports the one before it through its alias."""
    (root / "package.json").write_text('{"private": true, "workspaces": ["packages/*"]}\n')
    (root / "tsconfig.json").write_text(
        '{\n  // one project for the whole repository\n  "compilerOptions": {\n'
        '    "strict": true, "target": "es2020", "module": "esnext", "moduleResolution": "bundler",\n'
        '    "baseUrl": ".", "paths": {"@demo/*": ["packages/*/src"]},\n  },\n'
        '  "include": ["packages/*/src"],\n}\n'
    )
    for i in range(packages):
        src = root / "packages" / f"p{i}" / "src"
        src.mkdir(parents=True)
        (src.parent / "package.json").write_text(f'{{"name": "@demo/p{i}", "main": "src/index.ts"}}\n')
        body = f"export function value{i}(n: number): number {{\n  return n + {i};\n}}\n"
        if i:
            body = f"import {{ value{i - 1} }} from '@demo/p{i - 1}'\n\n" + body.replace(
                f"return n + {i};", f"return value{i - 1}(n) + {i};"
            )
        (src / "index.ts").write_text(body)


def test_a_vue_shaped_monorepo_has_one_root_and_no_false_errors(cold_ts: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, seconds in (("WAIT_CAP_S", 25.0), ("QUERY_WAIT_S", 25.0), ("VIEW_COLD_CAP_S", 25.0)):
        monkeypatch.setattr(lsp_manager, name, seconds)  # hang guards: the waits end on the server's answer
    _vue_shaped_monorepo(cold_ts)
    d = Driver(cold_ts, Config(lsp_servers={"typescript": {"command": [str(TS_SERVER), "--stdio"]}}))
    try:
        r = d.run("lsp", {"file_path": "packages/p5/src/index.ts"})
        assert r.content == "No diagnostics for packages/p5/src/index.ts.", r.content  # tsc --noEmit is clean
        d.run("view", {"file_path": "packages/p2/src/index.ts"})
        roots = {root for (name, root) in _manager(d).clients if name == "typescript"}
        assert roots == {cold_ts.resolve()} or roots == {cold_ts}  # one server for the real project
        broken = d.run(
            "edit", {"file_path": "packages/p2/src/index.ts", "old_string": "value1(n)", "new_string": "value1('n')"}
        )
        assert "Error: packages/p2/src/index.ts:4:17" in broken.content, broken.content
    finally:
        d.close()


def test_a_navigation_request_that_runs_out_is_cancelled_and_the_server_kept(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_toolsmith.lsp import client as lsp_client

    monkeypatch.setattr(lsp_client, "REQUEST_TIMEOUT_S", 0.5)  # the hover takes 60 s: it runs out
    d = Driver(workspace, Config(lsp_servers={"marker": marker(HOVER_DELAY_MS="60000")}))
    try:
        (workspace / "n.mark").write_text("def greet():\n    pass\n\ngreet()\n")
        slow = d.run("lsp", {"file_path": "n.mark", "operation": "hover", "line": 4, "character": 2})
        assert slow.is_error and "the request was cancelled; the server is still running" in slow.content
        (client,) = _manager(d).clients.values()
        assert client.alive and _manager(d).health == {}
        waiting = [key for key in client._client.protocol._request_futures if str(key).startswith("toolsmith-")]
        assert waiting == []  # nothing left waiting for the cancelled answer
        found = d.run("lsp", {"file_path": "n.mark", "operation": "definition", "line": 4, "character": 2})
        assert found.content == "n.mark:1:5: def greet():"
    finally:
        d.close()


@pytest.fixture
def busy_cpus() -> Iterator[None]:
    """Every CPU kept busy by a spinning process for the test's duration (killed after)."""
    import os
    import subprocess
    import sys

    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 2)]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait(10)


def test_basedpyright_with_the_cpus_busy_is_truthful_and_never_killed(workspace: Path, busy_cpus: None) -> None:
    """The real caps, the CPUs busy: each result has the error or says unconfirmed; the server is
    slow, not hung, so it keeps running and is never marked unavailable."""
    (workspace / "pyproject.toml").write_text("[project]\nname = 'demo'\nversion = '0'\n")
    (workspace / "calc.py").write_text("def total(xs: list[int]) -> int:\n    return sum(xs)\n")
    d = Driver(workspace, Config(lsp_servers={"pylsp": {"disabled": True}, "pyright": {"disabled": True},
                                              "ruff": {"disabled": True}}))  # fmt: skip
    try:
        d.run("view", {"file_path": "calc.py"})
        for i in range(3):
            old = "return sum(xs)" if i % 2 == 0 else "return sum(xs) + 'x'"
            new = "return sum(xs) + 'x'" if i % 2 == 0 else "return sum(xs)"
            r = d.run("edit", {"file_path": "calc.py", "old_string": old, "new_string": new})
            if i % 2 == 0:
                assert "Error: calc.py:2:" in r.content or "unconfirmed: basedpyright" in r.content, r.content
            assert "unavailable" not in r.content, r.content
        assert _manager(d).health == {}
        (client,) = _manager(d).clients.values()
        assert client.alive
    finally:
        d.close()
