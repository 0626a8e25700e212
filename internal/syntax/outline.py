"""Symbols of a file from its tree-sitter tree: kind, name path, line range, signature line.

A symbol's *span* is what symbol_edit replaces: the definition with everything that belongs to
it in front — decorators and annotations, an ``export`` or ``template`` wrapper, attributes and
the doc comments directly above it (no blank line between). The same span for every language,
so "replace" means the same thing everywhere.

The walk descends into classes, impls, modules and namespaces, never into function bodies, and
through at most :data:`MAX_PLAIN_DEPTH` levels of other nodes between two symbols (an ``if``
block, an export, a declaration list), so its cost follows the declarations, not the code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .parse import Parsed

if TYPE_CHECKING:
    from tree_sitter import Node

#: Levels of non-symbol nodes walked through below a symbol (or the root) looking for symbols.
MAX_PLAIN_DEPTH = 3
#: A signature line longer than this is cut (with "…").
MAX_SIGNATURE_CHARS = 160

#: Per grammar: node type → kind. Kinds of "function" inside a class-like symbol become "method".
SYMBOL_KINDS: dict[str, dict[str, str]] = {
    "python": {"function_definition": "function", "class_definition": "class"},
    "javascript": {
        "function_declaration": "function",
        "generator_function_declaration": "function",
        "class_declaration": "class",
        "method_definition": "method",
        "variable_declarator": "function",
    },
    "typescript": {
        "function_declaration": "function",
        "generator_function_declaration": "function",
        "class_declaration": "class",
        "abstract_class_declaration": "class",
        "method_definition": "method",
        "abstract_method_signature": "method",
        "interface_declaration": "interface",
        "type_alias_declaration": "type",
        "enum_declaration": "enum",
        "internal_module": "namespace",
        "variable_declarator": "function",
    },
    "go": {"function_declaration": "function", "method_declaration": "method", "type_spec": "type"},
    "rust": {
        "function_item": "function",
        "struct_item": "struct",
        "enum_item": "enum",
        "union_item": "struct",
        "trait_item": "trait",
        "impl_item": "impl",
        "mod_item": "module",
        "type_item": "type",
        "macro_definition": "macro",
    },
    "java": {
        "class_declaration": "class",
        "interface_declaration": "interface",
        "enum_declaration": "enum",
        "record_declaration": "class",
        "annotation_type_declaration": "interface",
        "method_declaration": "method",
        "constructor_declaration": "constructor",
    },
    "c": {"function_definition": "function", "struct_specifier": "struct", "enum_specifier": "enum",
          "union_specifier": "struct"},
    "cpp": {
        "function_definition": "function",
        "struct_specifier": "struct",
        "class_specifier": "class",
        "enum_specifier": "enum",
        "union_specifier": "struct",
        "namespace_definition": "namespace",
    },
}  # fmt: skip
SYMBOL_KINDS["tsx"] = SYMBOL_KINDS["typescript"]

#: Kinds whose bodies hold members (walked); anything else is a leaf (its body is not walked).
CONTAINER_KINDS = {"class", "interface", "struct", "enum", "trait", "impl", "module", "namespace", "type"}
#: Wrappers that belong to the definition they wrap (a decorator list, an export, a template).
WRAPPERS = {"decorated_definition", "export_statement", "template_declaration"}
#: Nodes in front of a definition that belong to it when nothing (no blank line) separates them.
LEADING = ("comment", "line_comment", "block_comment", "attribute_item", "decorator")
#: Function values that make a ``const f = () => …`` declarator a function symbol.
FUNCTION_VALUES = {"arrow_function", "function_expression", "function", "generator_function"}


@dataclass
class Symbol:
    kind: str
    name: str
    #: Dotted name path: ``Greeter.greet``.
    path: str
    #: 1-based, inclusive: the span's first and last lines.
    start_line: int
    end_line: int
    #: The definition's first line (without decorators/comments), trimmed.
    signature: str
    #: Byte offsets of the span in the parsed source.
    start_byte: int
    end_byte: int
    children: list[Symbol] = field(default_factory=list)

    def walk(self) -> list[Symbol]:
        out = [self]
        for child in self.children:
            out += child.walk()
        return out


def outline(parsed: Parsed) -> list[Symbol]:
    """The top-level symbols of ``parsed`` (members in ``children``)."""
    kinds = SYMBOL_KINDS.get(parsed.language)
    if kinds is None:
        return []
    found: list[Symbol] = []
    _collect(parsed.tree.root_node, parsed, kinds, None, found, 0)
    return found


def flatten(symbols: list[Symbol]) -> list[Symbol]:
    return [s for top in symbols for s in top.walk()]


def _collect(
    node: Node, parsed: Parsed, kinds: dict[str, str], parent: Symbol | None, out: list[Symbol], depth: int
) -> None:
    for child in node.named_children:
        kind = kinds.get(child.type)
        symbol = _symbol(child, kind, parsed, parent) if kind is not None else None
        if symbol is not None:
            out.append(symbol)
            if symbol.kind in CONTAINER_KINDS:
                _collect(child, parsed, kinds, symbol, symbol.children, 0)
        elif depth < MAX_PLAIN_DEPTH and not _is_body_of_function(child):
            _collect(child, parsed, kinds, parent, out, depth + 1)


def _is_body_of_function(node: Node) -> bool:
    return (
        node.type in ("statement_block", "compound_statement")
        and node.parent is not None
        and (node.parent.type in FUNCTION_VALUES or "function" in node.parent.type or "method" in node.parent.type)
    )


def _symbol(node: Node, kind: str, parsed: Parsed, parent: Symbol | None) -> Symbol | None:
    name = _name(node, parsed.language)
    if not name:
        return None
    if node.type == "variable_declarator":
        value = node.child_by_field_name("value")
        if value is None or value.type not in FUNCTION_VALUES:
            return None
    if node.type == "type_spec":
        kind = _go_type_kind(node)
    if kind == "function" and parent is not None and parent.kind in ("class", "interface", "struct", "impl", "trait"):
        kind = "method"
    if node.type == "method_declaration" and parsed.language == "go":
        receiver = _go_receiver(node)
        path = f"{receiver}.{name}" if receiver else name
    else:
        path = f"{parent.path}.{name}" if parent is not None else name
    start_node, end_node = _span_nodes(node)
    start = _leading_start(start_node, parsed.source)
    source = parsed.source
    signature = _line_of(_name_node(node) or node, source)
    return Symbol(
        kind=kind,
        name=name,
        path=path,
        start_line=source.count(b"\n", 0, start) + 1,
        end_line=end_node.end_point[0] + 1 - (1 if end_node.end_point[1] == 0 and end_node.end_point[0] > 0 else 0),
        signature=signature,
        start_byte=start,
        end_byte=end_node.end_byte,
    )


def _span_nodes(node: Node) -> tuple[Node, Node]:
    """The outermost node the definition owns: its wrappers, and the declaration holding a lone
    declarator or type spec."""
    outer = node
    while outer.parent is not None:
        parent = outer.parent
        if parent.type in WRAPPERS:
            outer = parent
            continue
        if outer.type in ("variable_declarator", "type_spec") and len(parent.named_children) == 1:
            outer = parent
            continue
        if parent.type in ("lexical_declaration", "variable_declaration", "type_declaration") and (
            len([c for c in parent.named_children if c.type in ("variable_declarator", "type_spec")]) == 1
        ):
            outer = parent
            continue
        break
    return outer, outer


def _leading_start(node: Node, source: bytes) -> int:
    """Where the span starts: before the comments, attributes and decorators directly above."""
    start = node.start_byte
    previous = node.prev_named_sibling
    while previous is not None and previous.type in LEADING:
        between = source[previous.end_byte : start]
        if between.count(b"\n") > 1 or between.strip():
            break
        if previous.end_point[0] == previous.start_point[0] and _code_before(previous, source):
            break  # a trailing comment of the line above, not a comment about this definition
        start = previous.start_byte
        previous = previous.prev_named_sibling
    return source.rfind(b"\n", 0, start) + 1 if not source[source.rfind(b"\n", 0, start) + 1 : start].strip() else start


def _line_of(node: Node, source: bytes) -> str:
    """The whole source line holding ``node``'s start, trimmed and bounded."""
    start = source.rfind(b"\n", 0, node.start_byte) + 1
    end = source.find(b"\n", node.start_byte)
    line = source[start : end if end >= 0 else len(source)].decode("utf-8", "replace").strip()
    return line if len(line) <= MAX_SIGNATURE_CHARS else line[: MAX_SIGNATURE_CHARS - 1] + "…"


def _name_node(node: Node) -> Node | None:
    return node.child_by_field_name("type" if node.type == "impl_item" else "name")


def _code_before(node: Node, source: bytes) -> bool:
    line_start = source.rfind(b"\n", 0, node.start_byte) + 1
    return bool(source[line_start : node.start_byte].strip())


def _name(node: Node, language: str) -> str:
    if node.type == "impl_item":
        target = node.child_by_field_name("type")
        return _text(target) if target is not None else ""
    named = node.child_by_field_name("name")
    if named is not None:
        return _text(named)
    declarator = node.child_by_field_name("declarator")
    while declarator is not None:
        if declarator.type in ("identifier", "field_identifier", "qualified_identifier", "destructor_name",
                               "operator_name", "type_identifier"):  # fmt: skip
            return _text(declarator).replace("::", ".")
        declarator = declarator.child_by_field_name("declarator")
    return ""


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _go_type_kind(node: Node) -> str:
    value = node.child_by_field_name("type")
    if value is not None and value.type == "struct_type":
        return "struct"
    if value is not None and value.type == "interface_type":
        return "interface"
    return "type"


def _go_receiver(node: Node) -> str:
    receiver = node.child_by_field_name("receiver")
    if receiver is None:
        return ""
    for parameter in receiver.named_children:
        kind = parameter.child_by_field_name("type")
        if kind is not None:
            return _text(kind).lstrip("*").split("[", 1)[0]
    return ""
