"""The profiles against the products they copy, at the pinned versions (docs/profiles.md): every
tool a profile claims takes exactly the input properties the product declares, nested ones
included, both ways (nothing of the product's missing, nothing of our own added).

Claude Code's declarations are read from ``sdk-tools.d.ts`` in npm
``@anthropic-ai/claude-agent-sdk``; Gemini CLI's are printed by node from
``@google/gemini-cli-core``; both are fetched by ``make conformance`` into ``.conformance/``.
Codex's tool specs live in Rust source that is not on npm: their facts are pinned in
testdata/conformance/codex-tools.json with the commit they were read at. Without the npm
packages the tests are skipped with the command that installs them; under CI they fail.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agent_toolsmith.llm.profiles import profile_tools

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ROOT / ".conformance" / "node_modules"
CLAUDE_SDK = PACKAGES / "@anthropic-ai" / "claude-agent-sdk"
GEMINI_CORE = PACKAGES / "@google" / "gemini-cli-core"
CODEX_FACTS = ROOT / "testdata" / "conformance" / "codex-tools.json"
GEMINI_SCRIPT = ROOT / "testdata" / "conformance" / "gemini_declarations.mjs"
#: The pinned versions (the Makefile's conformance target installs these).
CLAUDE_SDK_VERSION, CLAUDE_CODE_VERSION, GEMINI_CORE_VERSION = "0.3.332", "2.1.332", "0.61.0"

#: Each claude tool and the interface of sdk-tools.d.ts that declares its input.
CLAUDE_INTERFACES = {
    "Read": "FileReadInput", "Write": "FileWriteInput", "Edit": "FileEditInput", "Glob": "GlobInput",
    "Grep": "GrepInput", "NotebookEdit": "NotebookEditInput", "Bash": "BashInput", "TaskStop": "TaskStopInput",
    "WebFetch": "WebFetchInput", "TodoWrite": "TodoWriteInput", "AskUserQuestion": "AskUserQuestionInput",
}  # fmt: skip
#: A property that is a map (``{[k: string]: T}``, ``additionalProperties``) has this one child.
MAP = "*"

Shape = dict[str, Any]  # property name -> its own Shape (the properties of what it holds)


def _installed(path: Path, what: str) -> None:
    if path.exists():
        return
    message = f"{what} is not installed in {path.parent}: run `make conformance` (needs npm and the registry)"
    if os.environ.get("CI"):
        pytest.fail(message)  # CI installs it: a missing package is a broken build, not a skip
    pytest.skip(message)


# --- our shapes ---------------------------------------------------------------------------------


def schema_shape(schema: dict[str, Any]) -> Shape:
    """The property names of a JSON Schema object, each with the shape of what it holds."""
    shape: Shape = {}
    for name, child in (schema.get("properties") or {}).items():
        shape[name] = _held(child)
    return shape


def _held(node: dict[str, Any]) -> Shape:
    while node.get("type") == "array" and isinstance(node.get("items"), dict):
        node = node["items"]
    if isinstance(node.get("additionalProperties"), dict):
        return {MAP: _held(node["additionalProperties"])}
    return schema_shape(node) if node.get("properties") else {}


def ours(profile: str, name: str) -> Shape:
    return schema_shape(profile_tools(profile)[name].info().parameters)


def differences(product: Shape, mine: Shape, path: str = "") -> list[str]:
    """What one shape has and the other lacks, at every depth."""
    found = [f"missing {path}{name}" for name in product if name not in mine]
    found += [f"not in the product: {path}{name}" for name in mine if name not in product]
    for name in product.keys() & mine.keys():
        found += differences(product[name], mine[name], f"{path}{name}.")
    return found


def merged(shapes: list[Shape]) -> Shape:
    out: Shape = {}
    for shape in shapes:
        for name, child in shape.items():
            out[name] = merged([out.get(name, {}), child])
    return out


# --- Claude Code: sdk-tools.d.ts ----------------------------------------------------------------

_TOKEN = re.compile(r'\[\s*\w+\s*:\s*string\s*\]\s*:|"[^"]*"\s*\??\s*:|[A-Za-z_$][\w$]*\s*\??\s*:|[{}]|"[^"]*"|\S')


def interface_shape(source: str, interface: str) -> Shape:
    """The properties of ``export interface <interface> { ... }``, nested object literals, arrays,
    tuples (json-schema-to-typescript's ``[{...}, {...}]`` for min/max items) and index
    signatures included."""
    source = re.sub(r"/\*.*?\*/", "", source, flags=re.S)
    start = re.search(rf"export interface {interface} \{{", source)
    assert start is not None, f"{interface} is not in sdk-tools.d.ts"
    root: Shape = {}
    objects: list[Shape] = []  # the object literal each open brace belongs to
    last_key: list[str | None] = []
    for match in _TOKEN.finditer(source, start.end() - 1):
        token = match.group(0)
        if token == "{":
            if not objects:
                objects.append(root)
            else:
                key = last_key[-1] or MAP
                objects.append(objects[-1].setdefault(key, {}))
            last_key.append(None)
        elif token == "}":
            objects.pop()
            last_key.pop()
            if not objects:
                break
        elif token.endswith(":"):
            name = MAP if token.startswith("[") else token.rstrip(":").rstrip().rstrip("?").strip().strip('"')
            objects[-1].setdefault(name, {})
            last_key[-1] = name
    return root


@pytest.fixture(scope="module")
def claude_source() -> str:
    _installed(CLAUDE_SDK / "sdk-tools.d.ts", f"npm @anthropic-ai/claude-agent-sdk@{CLAUDE_SDK_VERSION}")
    package = json.loads((CLAUDE_SDK / "package.json").read_text())
    manifest = json.loads((CLAUDE_SDK / "manifest.json").read_text())
    assert (package["version"], manifest["version"]) == (CLAUDE_SDK_VERSION, CLAUDE_CODE_VERSION)
    return (CLAUDE_SDK / "sdk-tools.d.ts").read_text()


@pytest.mark.parametrize("tool", list(CLAUDE_INTERFACES))
def test_every_claude_tool_takes_exactly_the_products_properties(claude_source: str, tool: str) -> None:
    assert differences(interface_shape(claude_source, CLAUDE_INTERFACES[tool]), ours("claude", tool)) == []


def test_the_claude_profile_is_the_products_tool_set() -> None:
    assert sorted(profile_tools("claude")) == sorted(CLAUDE_INTERFACES)


def test_the_declaration_reader_reads_nesting_tuples_and_maps() -> None:
    source = """export interface X {
      /** a comment { with braces } */
      a: string;
      "-i"?: boolean;
      list: { b: string; c?: "x" | "y" }[];
      pair: | [ { d: string; e?: { f: number } }, { d: string; g: string } ];
      map?: { [k: string]: { h?: string } };
    }
    export interface Y { z: string }"""
    shape = interface_shape(source, "X")
    assert shape == {"a": {}, "-i": {}, "list": {"b": {}, "c": {}}, "pair": {"d": {}, "e": {"f": {}}, "g": {}},
                     "map": {MAP: {"h": {}}}}  # fmt: skip


# --- Gemini CLI: the declarations, printed by node ----------------------------------------------


@pytest.fixture(scope="module")
def gemini_declarations() -> dict[str, Shape]:
    core = GEMINI_CORE / "dist" / "src" / "tools" / "definitions" / "coreTools.js"
    _installed(core, f"npm @google/gemini-cli-core@{GEMINI_CORE_VERSION}")
    assert json.loads((GEMINI_CORE / "package.json").read_text())["version"] == GEMINI_CORE_VERSION
    done = subprocess.run(["node", str(GEMINI_SCRIPT), str(core)], capture_output=True, text=True, timeout=60,
                          cwd=ROOT / ".conformance")  # fmt: skip
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    declared: dict[str, list[Shape]] = {}
    for family in printed["families"].values():
        for definition in family.values():  # grep_search comes in two variants: both count
            declared.setdefault(definition["name"], []).append(schema_shape(definition["parameters"]))
    for definition in printed["shell"]:
        declared.setdefault(definition["name"], []).append(schema_shape(definition["parameters"]))
    return {name: merged(shapes) for name, shapes in declared.items()}


@pytest.mark.parametrize("tool", list(profile_tools("gemini")))
def test_every_gemini_tool_takes_exactly_the_products_properties(
    gemini_declarations: dict[str, Shape], tool: str
) -> None:
    assert tool in gemini_declarations, f"Gemini CLI declares no tool {tool}"
    assert differences(gemini_declarations[tool], ours("gemini", tool)) == []


# --- Codex: the facts pinned from its source ----------------------------------------------------


def _codex() -> dict[str, Any]:
    facts: dict[str, Any] = json.loads(CODEX_FACTS.read_text())
    return facts


def _codex_tools() -> Iterator[str]:
    yield from _codex()["tools"]


@pytest.mark.parametrize("tool", list(_codex_tools()))
def test_every_codex_tool_takes_exactly_the_specs_properties(tool: str) -> None:
    assert differences(_codex()["tools"][tool], ours("codex", tool)) == []


def test_the_codex_profile_is_the_pinned_tool_set_with_its_types() -> None:
    assert sorted(profile_tools("codex")) == sorted(_codex()["tools"])
    for where, kind in _codex()["types"].items():
        tool, name = where.split(".")
        declared = profile_tools("codex")[tool].info().parameters["properties"][name]["type"]
        assert declared == {"number": "integer"}.get(kind, kind), where
