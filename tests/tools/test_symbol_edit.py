"""symbol_edit: address a symbol by name path; real parses, real commits."""

from __future__ import annotations

from pathlib import Path

from agent_toolsmith.config import Config
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import Runner, make_session

SOURCE = '''import functools


class Greeter:
    """Says hello."""

    # Cached: greeting is pure.
    @functools.lru_cache(maxsize=None)
    def greet(self, name):
        return "hello " + name

    def shout(self, name):
        return self.greet(name).upper()


def greet(name):
    return Greeter().greet(name)
'''


def read_then(run: Runner, path: str) -> None:
    r = run("view", {"file_path": path})
    assert not r.is_error, r.content


def test_replace_covers_decorator_and_doc_comment(workspace: Path, run: Runner) -> None:
    f = workspace / "g.py"
    f.write_text(SOURCE)
    read_then(run, "g.py")
    new = "    def greet(self, name):\n        return f'hi {name}'"
    r = run("symbol_edit", {"file_path": "g.py", "symbol": "Greeter.greet", "new_string": new})
    assert not r.is_error, r.content
    expected = SOURCE.replace(
        "    # Cached: greeting is pure.\n    @functools.lru_cache(maxsize=None)\n    def greet(self, name):\n"
        '        return "hello " + name',
        new,
    )
    assert f.read_text() == expected
    assert r.metadata["symbol"] == "Greeter.greet" and r.metadata["start_line"] == 7 and "diff" in r.metadata


def test_ambiguous_and_unknown_symbols_list_candidates(workspace: Path, run: Runner) -> None:
    (workspace / "g.py").write_text(SOURCE)
    read_then(run, "g.py")
    r = run("symbol_edit", {"file_path": "g.py", "symbol": "Greeter.missing", "new_string": "x = 1"})
    assert r.is_error and r.metadata["error"] == "symbol_not_found" and "Greeter.shout" in r.content
    # "greet" is a function's full path: exact wins over the method's suffix.
    r = run("symbol_edit", {"file_path": "g.py", "symbol": "greet", "action": "delete"})
    assert not r.is_error, r.content
    assert "def greet(name)" not in (workspace / "g.py").read_text()
    (workspace / "h.py").write_text(
        "class A:\n    def f(self):\n        pass\n\n\nclass B:\n    def f(self):\n        pass\n"
    )
    read_then(run, "h.py")
    r = run("symbol_edit", {"file_path": "h.py", "symbol": "f", "action": "delete"})
    assert r.is_error and r.metadata["error"] == "ambiguous_symbol" and r.metadata["candidates"] == ["A.f", "B.f"]


def test_inserts_and_delete(workspace: Path, run: Runner) -> None:
    f = workspace / "g.go"
    f.write_text("package g\n\nfunc A() int {\n\treturn 1\n}\n\nfunc B() int {\n\treturn 2\n}\n")
    read_then(run, "g.go")
    r = run("symbol_edit", {"file_path": "g.go", "symbol": "B", "action": "insert_before",
                            "new_string": "// C is new.\nfunc C() int {\n\treturn 3\n}\n"})  # fmt: skip
    assert not r.is_error, r.content
    r = run("symbol_edit", {"file_path": "g.go", "symbol": "A", "action": "insert_after", "new_string": "\nvar x = 1"})
    assert not r.is_error, r.content
    r = run("symbol_edit", {"file_path": "g.go", "symbol": "B", "action": "delete"})
    assert not r.is_error, r.content
    assert f.read_text() == (
        "package g\n\nfunc A() int {\n\treturn 1\n}\n\nvar x = 1\n\n// C is new.\nfunc C() int {\n\treturn 3\n}\n"
    )


def test_read_guard_and_syntax_gate_apply(workspace: Path, run: Runner) -> None:
    f = workspace / "g.py"
    f.write_text(SOURCE)
    r = run("symbol_edit", {"file_path": "g.py", "symbol": "greet", "new_string": "def greet(n): return n"})
    assert r.is_error and "You must read the file" in r.content
    read_then(run, "g.py")
    r = run("symbol_edit", {"file_path": "g.py", "symbol": "Greeter.shout", "new_string": "def shout(self, name):"})
    assert r.is_error and r.metadata["error"] == "syntax_error"
    assert f.read_text() == SOURCE


NAMES = st.sampled_from(["alpha", "beta", "gamma", "delta"])
BODIES = st.lists(st.sampled_from(["x = 1", "return 2", "y = 'é'", "pass", "# note"]), min_size=1, max_size=3)


@settings(deadline=None, max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    bodies=st.lists(BODIES, min_size=2, max_size=4),
    target=st.integers(min_value=0, max_value=3),
    crlf=st.booleans(),
    new_body=BODIES,
)
def test_bytes_outside_the_symbol_are_identical(
    workspace: Path, bodies: list[list[str]], target: int, crlf: bool, new_body: list[str]
) -> None:
    target %= len(bodies)
    funcs = [
        f"def f{i}():\n" + "".join(f"    {line}\n" for line in body) + "    pass\n" for i, body in enumerate(bodies)
    ]
    source = "\n\n".join(funcs)
    eol = "\r\n" if crlf else "\n"
    data = source.replace("\n", eol).encode()
    f = workspace / "p.py"
    f.write_bytes(data)
    session = make_session(workspace, config=Config(lsp_enabled=False))
    import asyncio

    asyncio.run(session.run("view", {"file_path": "p.py"}))
    new = f"def f{target}():\n" + "".join(f"    {line}\n" for line in new_body) + "    return 0"
    r = asyncio.run(session.run("symbol_edit", {"file_path": "p.py", "symbol": f"f{target}", "new_string": new}))
    assert not r.is_error, r.content
    old_span = funcs[target].rstrip("\n").replace("\n", eol).encode()
    start = data.index(f"def f{target}():".encode())
    prefix, suffix = data[:start], data[start + len(old_span) :]
    out = f.read_bytes()
    assert out.startswith(prefix) and out.endswith(suffix)
    assert out[len(prefix) : len(out) - len(suffix)] == new.replace("\n", eol).encode()
