"""Every exported declaration keeps its provider's rules, and strict-mode arguments mean what
the original arguments meant."""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

from agent_toolsmith.config import Config
from agent_toolsmith.llm.providers import PROVIDERS, check_declaration, declarations
from agent_toolsmith.llm.providers.strict import strict_schema
from agent_toolsmith.llm.tools.builtins import all_tools
from agent_toolsmith.llm.tools.contract import ToolInfo
from agent_toolsmith.llm.tools.params import parse_params
from agent_toolsmith.llm.tools.registry import ToolRegistry
from hypothesis import given
from hypothesis import strategies as st

NAMES = st.text(string.ascii_letters + "_", min_size=1, max_size=1).flatmap(
    lambda first: st.text(string.ascii_letters + string.digits + "_", max_size=20).map(lambda rest: first + rest)
)


def _leaf() -> st.SearchStrategy[dict[str, Any]]:
    text = st.text(max_size=20)
    return st.one_of(
        st.fixed_dictionaries({"type": st.just("string"), "description": text}, optional={"minLength": st.just(1)}),
        st.fixed_dictionaries(
            {"type": st.just("integer"), "description": text},
            optional={"minimum": st.integers(0, 5), "maximum": st.integers(10, 2**31), "default": st.integers(5, 10)},
        ),
        st.fixed_dictionaries({"type": st.just("boolean")}, optional={"default": st.booleans()}),
        st.lists(st.text(string.ascii_lowercase, min_size=1, max_size=8), min_size=1, max_size=4, unique=True).map(
            lambda values: {"type": "string", "enum": values, "default": values[0]}
        ),
        st.just({"type": "array", "items": {"type": "string"}, "description": "Globs"}),
    )


def _object(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    def build(properties: dict[str, Any], required_mask: list[bool]) -> dict[str, Any]:
        required = [name for name, keep in zip(properties, required_mask, strict=False) if keep]
        schema = {"type": "object", "properties": properties, "additionalProperties": False}
        return {**schema, "required": required} if required else schema

    return st.dictionaries(NAMES, children, min_size=1, max_size=5).flatmap(
        lambda props: st.lists(st.booleans(), min_size=len(props), max_size=len(props)).map(
            lambda mask: build(props, mask)
        )
    )


SCHEMAS = _object(
    st.recursive(
        _leaf(),
        lambda inner: st.one_of(_object(inner), _object(inner).map(lambda o: {"type": "array", "items": o})),
        max_leaves=8,
    )
)


@given(NAMES, st.text(max_size=200), SCHEMAS)
def test_every_generated_schema_exports_valid_for_every_provider(
    name: str, description: str, schema: dict[str, Any]
) -> None:
    tool = ToolInfo(name[:64], description, schema, read_only=False)
    for provider in PROVIDERS:
        for declaration in declarations(provider, [tool]):
            assert check_declaration(provider, declaration) == [], (provider, declaration)


def test_every_tool_and_a_custom_tool_export_valid(tmp_path: Path) -> None:
    tools_dir = tmp_path / ".toolsmith" / "tools"
    tools_dir.mkdir(parents=True)
    program = tools_dir / "deploy.sh"
    program.write_text("#!/bin/sh\necho deployed $@\n")
    program.chmod(0o755)
    registry = ToolRegistry.for_workspace(tmp_path, Config())
    infos = [tool.info() for tool in registry.tools()]
    assert "deploy" in [info.name for info in infos]
    for provider in PROVIDERS:
        exported = declarations(provider, infos)
        assert all(check_declaration(provider, d) == [] for d in exported), provider
    assert all(d["strict"] for d in declarations("openai", infos))  # every tool fits strict mode


def _values(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Arguments valid under one of our tool schemas."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema["type"]
    if kind == "string":
        return st.text(min_size=schema.get("minLength", 0), max_size=12)
    if kind == "integer":
        return st.integers(schema.get("minimum", -(2**31)), schema.get("maximum", 2**31))
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        return st.lists(_values(schema["items"]), min_size=schema.get("minItems", 0), max_size=3)
    required = set(schema.get("required", []))
    properties = schema["properties"]
    return st.fixed_dictionaries(
        {k: _values(v) for k, v in properties.items() if k in required},
        optional={k: _values(v) for k, v in properties.items() if k not in required},
    )


def _as_strict_mode_sends(value: Any, schema: dict[str, Any]) -> Any:
    """What a strict-mode model sends: every property present, null for "not given"."""
    if schema.get("type") == "array" and isinstance(value, list):
        return [_as_strict_mode_sends(v, schema["items"]) for v in value]
    if schema.get("type") != "object":
        return value
    return {
        name: _as_strict_mode_sends(value[name], child) if name in value else None
        for name, child in schema["properties"].items()
    }


@given(st.data())
def test_strict_mode_arguments_parse_to_the_same_call(data: st.DataObject) -> None:
    tool = data.draw(st.sampled_from(all_tools()))
    schema = tool.info().parameters
    assert strict_schema(schema) is not None
    arguments = data.draw(_values(schema))
    assert parse_params(tool.Params, _as_strict_mode_sends(arguments, schema)) == parse_params(tool.Params, arguments)


@given(SCHEMAS)
def test_anthropic_strict_declarations_keep_strict_tool_uses_rules(schema: dict[str, Any]) -> None:
    tool = ToolInfo("tool", "A tool.", schema, read_only=False)
    (declared,) = declarations("anthropic", [tool], strict=True)
    assert check_declaration("anthropic", declared) == [], declared
