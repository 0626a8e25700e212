"""Tool parameters: one typed dataclass per tool gives both its JSON Schema and its validation.

A tool declares ``@dataclass class Params`` with :func:`param` fields. :func:`schema_for` turns
it into the JSON Schema the model sees (root object, ``additionalProperties: false``);
:func:`parse_params` checks arbitrary JSON against the same declaration and raises
:class:`ParamsError` naming the field and what was expected. Optional fields accept ``null``
as "use the default", which models send often. A field whose wire name is not a Python name
(``-i``) declares it with ``param(..., alias="-i")``.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

from ...errors import describe_value

T = TypeVar("T")


class ParamsError(ValueError):
    pass


def param(description: str, default: Any = dataclasses.MISSING, *, alias: str | None = None, **constraints: Any) -> Any:
    """A documented field. ``constraints`` go into the schema (``minimum``, ``maximum``, ...);
    ``alias`` is the field's name in JSON when it differs from the Python name."""
    metadata: dict[str, Any] = {"description": description, **constraints}
    if alias is not None:
        metadata[_ALIAS] = alias
    if isinstance(default, list):
        return dataclasses.field(default_factory=lambda: list(default), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


_ALIAS = "__alias__"


def wire_name(f: dataclasses.Field[Any]) -> str:
    """The field's name in JSON: its alias, else its Python name."""
    return str(f.metadata.get(_ALIAS, f.name))


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    """The Params class's resolved annotations: evaluated once per class (every call parses)."""
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    return hints


def _strip_optional(tp: Any) -> tuple[Any, bool]:
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return tp, False


def _type_schema(tp: Any) -> dict[str, Any]:
    tp, _ = _strip_optional(tp)
    origin = get_origin(tp)
    if tp is str:
        return {"type": "string"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if origin is Literal:
        values = list(get_args(tp))
        return {"type": "string", "enum": values}
    if origin is list:
        (item,) = get_args(tp)
        return {"type": "array", "items": _type_schema(item)}
    if origin is dict:  # a map with string keys (a product's {"question text": "answer"})
        _key, value = get_args(tp)
        return {"type": "object", "additionalProperties": _type_schema(value)}
    if dataclasses.is_dataclass(tp):
        return schema_for(tp)  # type: ignore[arg-type]
    raise TypeError(f"unsupported parameter type {tp!r}")


def schema_for(cls: type) -> dict[str, Any]:
    hints = _hints(cls)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for f in dataclasses.fields(cls):
        prop = _type_schema(hints[f.name])
        prop.update({k: v for k, v in f.metadata.items() if k != _ALIAS})
        if f.default is not dataclasses.MISSING and f.default is not None:
            prop["default"] = f.default
        properties[wire_name(f)] = prop
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(wire_name(f))
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


def _describe(tp: Any) -> str:
    schema = _type_schema(tp)
    if "enum" in schema:
        return "one of " + ", ".join(repr(v) for v in schema["enum"])
    kind = schema["type"]
    if kind == "object" and "additionalProperties" in schema:
        return "an object (a map)"
    if kind == "array":
        return f"an array of {_describe(get_args(_strip_optional(tp)[0])[0])}s"
    return {"object": "an object", "integer": "an integer"}.get(kind, f"a {kind}")


def _convert(value: Any, tp: Any, where: str) -> Any:
    tp, optional = _strip_optional(tp)
    if value is None and optional:
        return None
    origin = get_origin(tp)
    ok: bool
    if tp is str:
        ok = isinstance(value, str)
    elif tp is bool:
        ok = isinstance(value, bool)
    elif tp is int:
        if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
            value = int(value)
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if ok:
            value = float(value)
    elif origin is Literal:
        ok = value in get_args(tp) and isinstance(value, str)
    elif origin is list:
        if not isinstance(value, list):
            ok = False
        else:
            (item,) = get_args(tp)
            return [_convert(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
    elif origin is dict:
        if not isinstance(value, dict):
            ok = False
        else:
            _key, item = get_args(tp)
            return {str(k): _convert(v, item, f"{where}.{_quote(str(k), 40)}") for k, v in value.items()}
    elif dataclasses.is_dataclass(tp):
        return _parse_object(tp, value, where)  # type: ignore[arg-type]
    else:
        raise TypeError(f"unsupported parameter type {tp!r}")
    if not ok:
        raise ParamsError(f"'{where}' must be {_describe(tp)}, got {describe_value(value)}")
    return value


def _quote(text: str, limit: int = 100) -> str:
    cleaned = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return cleaned if len(cleaned) <= limit else cleaned[:limit] + "…"


def _check_constraints(value: Any, meta: Any, where: str) -> None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in meta and value < meta["minimum"]:
            raise ParamsError(f"'{where}' must be at least {meta['minimum']}, got {value}")
        if "maximum" in meta and value > meta["maximum"]:
            raise ParamsError(f"'{where}' must be at most {meta['maximum']}, got {value}")
    if isinstance(value, list) and "minItems" in meta and len(value) < meta["minItems"]:
        raise ParamsError(f"'{where}' must have at least {meta['minItems']} item(s)")
    if isinstance(value, list) and "maxItems" in meta and len(value) > meta["maxItems"]:
        raise ParamsError(f"'{where}' must have at most {meta['maxItems']} item(s), got {len(value)}")
    if isinstance(value, str) and "minLength" in meta and len(value) < meta["minLength"]:
        raise ParamsError(f"'{where}' must not be empty")
    if isinstance(value, str) and "maxLength" in meta and len(value) > meta["maxLength"]:
        raise ParamsError(f"'{where}' must be at most {meta['maxLength']} characters, got {len(value)}")


def _parse_object(cls: type[T], raw: Any, where: str = "") -> T:
    prefix = f"{where}." if where else ""
    if not isinstance(raw, dict):
        name = where or "parameters"
        raise ParamsError(f"'{name}' must be a JSON object, got {describe_value(raw)}")
    hints = _hints(cls)
    fields = {wire_name(f): f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = [k for k in raw if k not in fields]
    if unknown:
        allowed = ", ".join(fields)
        raise ParamsError(f"unknown field '{_quote(prefix + unknown[0])}' (allowed fields: {allowed})")
    values: dict[str, Any] = {}
    for name, f in fields.items():
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        if name not in raw or (raw[name] is None and has_default):
            if not has_default:
                raise ParamsError(f"'{prefix}{name}' is required ({_describe(hints[f.name])})")
            continue
        value = _convert(raw[name], hints[f.name], prefix + name)
        _check_constraints(value, f.metadata, prefix + name)
        values[f.name] = value
    return cls(**values)


def parse_params(cls: type[T], raw: Any) -> T:
    """Validate ``raw`` (parsed JSON) against ``cls``. Raises only :class:`ParamsError`."""
    return _parse_object(cls, raw)
