"""The syntax layer under generated hostile input: nesting of every kind (classes, functions,
blocks, brackets, ifs, namespaces; closed, unclosed or cut), long lines and invalid UTF-8, in
Python, JavaScript, TypeScript, Go, Rust, C, C++, Java and JSON. Whatever the input: no crash
(a native crash would end this test process), no exception but ParseFailed, an outline within its
bounds, a gate verdict or none, in bounded time; through the tools, never "Internal error".

Deep examples (past SUSPICIOUS_NESTING) are parsed in a child first, which costs ~0.1-0.3 s each:
the examples per test are fewer than the profile's default, and derandomized in CI like the rest.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from agent_toolsmith.config import Config
from agent_toolsmith.errors import ParseFailed
from agent_toolsmith.session import Session
from agent_toolsmith.syntax import judge, parse
from agent_toolsmith.syntax.outline import MAX_SYMBOL_DEPTH, Symbol, outline
from hypothesis import given, settings
from hypothesis import strategies as st

#: One example's syntax work (parse, outline, gate) must end within this: a hang fails it.
EXAMPLE_S = 60.0

#: Per language: (opening, closing) of each nesting construct; ``{i}`` is the level.
NESTERS: dict[str, dict[str, tuple[str, str]]] = {
    "py": {
        "class": ("class C{i}:\n", ""), "def": ("def f{i}():\n", ""), "if": ("if x{i}:\n", ""),
        "bracket": ("[", "]"), "paren": ("(", ")"), "call": ("f(", ")"), "lambda": ("lambda: ", ""),
    },
    "js": {
        "function": ("function f{i}() {{\n", "}}\n"), "block": ("{{", "}}"), "array": ("[", "]"),
        "arrow": ("(() => ", ")"), "class": ("class C{i} {{ m{i}() {{\n", "}} }}\n"), "template": ("`${{", "}}`"),
    },
    "ts": {"namespace": ("namespace N{i} {{\n", "}}\n"), "interface": ("interface I{i} {{ a: {{", "}} }}\n"),
           "generic": ("Array<", ">")},
    "go": {"func": ("func f{i}() {{\n", "}}\n"), "if": ("if x {{\n", "}}\n"), "struct": ("struct {{ a ", "}}")},
    "rs": {"mod": ("mod m{i} {{\n", "}}\n"), "block": ("{{", "}}"), "fn": ("fn f{i}() {{\n", "}}\n")},
    "c": {"block": ("{{", "}}"), "paren": ("(", ")"), "struct": ("struct s{i} {{ ", "}} x;")},
    "cpp": {"namespace": ("namespace n{i} {{\n", "}}\n"), "class": ("class K{i} {{ ", "}};\n"),
            "template": ("template<class T{i}> ", "")},
    "java": {"class": ("class K{i} {{\n", "}}\n"), "method": ("void m{i}() {{\n", "}}\n"), "block": ("{{", "}}")},
    "json": {"array": ("[", "]"), "object": ('{{"k{i}": ', "}}")},
}  # fmt: skip
#: Python nests by indentation: its openers end a line and the next level is one column deeper.
INDENTED = {"class", "def", "if"}


@st.composite
def nested_source(draw: st.DrawFn) -> tuple[str, str]:
    """A file name and a source: a few constructs nested to a drawn depth, maybe left open or cut,
    with a long line or stray text inside."""
    extension = draw(st.sampled_from(sorted(NESTERS)))
    kinds = draw(st.lists(st.sampled_from(sorted(NESTERS[extension])), min_size=1, max_size=3))
    depth = draw(st.one_of(st.integers(0, 40), st.integers(200, 700), st.sampled_from([255, 256, 257, 2_000])))
    openers, closers = [], []
    for level in range(depth):
        kind = kinds[level % len(kinds)]
        opening, closing = NESTERS[extension][kind]
        indent = " " * level if extension == "py" and kind in INDENTED else ""
        openers.append(indent + opening.format(i=level))
        closers.append(closing.format(i=level))
    middle = draw(st.sampled_from(["x", "pass\n", "1", "", "a = 1; " * 2_000, "/*", '"', "é"]))
    if extension == "py":
        middle = " " * depth + middle
    closed = draw(st.sampled_from(["closed", "open", "cut"]))
    text = "".join(openers) + middle + ("".join(reversed(closers)) if closed == "closed" else "")
    if closed == "cut":
        text = text[: draw(st.integers(0, len(text)))]
    return f"fuzz.{extension}", text


def check_outline(symbols: list[Symbol], source: bytes) -> None:
    lines = source.count(b"\n") + 1
    stack = [(s, 1) for s in symbols]
    while stack:
        symbol, level = stack.pop()
        assert level <= MAX_SYMBOL_DEPTH
        assert 0 <= symbol.start_byte <= symbol.end_byte <= len(source)
        assert 1 <= symbol.start_line <= symbol.end_line <= lines
        stack.extend((child, level + 1) for child in symbol.children)


def syntax_work(name: str, text: str) -> None:
    """Parse, outline and gate ``text`` as ``name`` (before and after a clean file): ParseFailed
    is the one exception allowed."""
    started = time.monotonic()
    try:
        parsed = parse(text, name)
        if parsed is not None:
            check_outline(outline(parsed), parsed.source)
            parsed.errors()
        for verdict in (judge(None, text, name), judge("x = 1\n", text, name), judge(text, text + "\n", name)):
            assert verdict is None or verdict.kind in ("breaks", "warns")
    except ParseFailed:
        pass
    assert time.monotonic() - started < EXAMPLE_S


@settings(max_examples=40)
@given(nested_source())
def test_nesting_of_every_kind_parses_outlines_and_gates_without_failing(source: tuple[str, str]) -> None:
    syntax_work(*source)


@settings(max_examples=30)
@given(
    st.sampled_from(["py", "js", "go", "rs", "c", "json"]),
    st.text(st.sampled_from("(){}[]:;,\n \t\"'`#/*\\ax1é\ud800"), max_size=3_000),
    st.integers(0, 50_000),
)
def test_arbitrary_text_and_long_lines_never_fail(extension: str, noise: str, line: int) -> None:
    syntax_work(f"fuzz.{extension}", noise + "z" * line + noise)


@settings(max_examples=15)
@given(
    nested_source(),
    st.binary(min_size=1, max_size=64).filter(lambda b: not _is_utf8(b)),
    st.integers(0, 100),
)
def test_the_tools_answer_any_file_never_internal_error(
    tmp_path_factory: object, source: tuple[str, str], invalid: bytes, at_percent: int
) -> None:
    name, text = source
    data = text.encode("utf-8", "surrogatepass")
    cut = len(data) * at_percent // 100
    workspace = Path(tmp_path_factory.mktemp("fuzz"))  # type: ignore[attr-defined]
    (workspace / name).write_bytes(data[:cut] + invalid + data[cut:])
    (workspace / ("clean." + name.rsplit(".", 1)[1])).write_bytes(data)
    session = Session(workspace, config=Config(lsp_enabled=False))
    calls: list[tuple[str, dict[str, object]]] = [
        ("outline", {"path": name}),
        ("outline", {"path": "."}),
        ("view", {"file_path": "clean." + name.rsplit(".", 1)[1]}),
        ("symbol_edit", {"file_path": "clean." + name.rsplit(".", 1)[1], "symbol": "C1", "new_string": "x = 1\n"}),
        ("write", {"file_path": "new." + name.rsplit(".", 1)[1], "content": text}),
    ]
    for tool, params in calls:
        response = asyncio.run(asyncio.wait_for(session.run(tool, params), EXAMPLE_S))
        assert not response.content.startswith("Internal error"), (tool, response.content[:500])


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
