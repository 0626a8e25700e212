"""Symbols of a file from its tree-sitter tree: kind, name path, line range, signature line.

A symbol's *span* is what symbol_edit replaces: the definition with everything that belongs to
it in front — decorators and annotations, an ``export`` or ``template`` wrapper, attributes and
the doc comments directly above it (no blank line between). The same span for every language,
so "replace" means the same thing everywhere.

The walk descends into classes, impls, modules and namespaces, never into function bodies, and
through at most :data:`MAX_PLAIN_DEPTH` levels of other nodes between two symbols (an ``if``
block, an export, a declaration list), so its cost follows the declarations, not the code.

Any input is answered in time and memory linear in the declarations, whatever their nesting: the
walk keeps its own stack (no Python recursion: 500 classes nested in each other were 1 000 frames
deep), reads a node's parent and previous siblings from that stack (tree-sitter finds a node's
parent by walking down from the root, so asking it per symbol was quadratic in the nesting), takes
text from the parsed bytes (``Node.text`` calls back into the parse's read function, and crashed
the process when that call failed), and looks at most :data:`LINE_SCAN_BYTES` around a symbol for
its line (a minified file is one line).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .parse import Parsed

if TYPE_CHECKING:
    from tree_sitter import Node

#: Levels of non-symbol nodes walked through below a symbol (or the root) looking for symbols.
MAX_PLAIN_DEPTH = 3
#: Symbols nested deeper than this (a class in a class in … ) are not listed: a container at this
#: depth is listed with ``members_cut`` set. No real code nests so deep, and each level makes every
#: name path below it longer (500 nested classes made an 840 KB outline).
MAX_SYMBOL_DEPTH = 32
#: A signature line longer than this is cut (with "…").
MAX_SIGNATURE_CHARS = 160
#: How far before and after a symbol its line's start and end are looked for: a signature starts
#: at the symbol itself when its line starts further back (a minified file is one long line).
LINE_SCAN_BYTES = 1024

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
    #: A container at MAX_SYMBOL_DEPTH: its members were not looked for.
    members_cut: bool = False

    def walk(self) -> list[Symbol]:
        """This symbol and all its members, in document order (an explicit stack: any depth)."""
        out: list[Symbol] = []
        stack = [self]
        while stack:
            symbol = stack.pop()
            out.append(symbol)
            stack.extend(reversed(symbol.children))
        return out


class _Frame:
    """One node the walk is in: its named children, the next one to look at, the symbol its
    symbols belong to (``owner``, ``depth`` levels of symbols deep), and how many non-symbol
    levels lie between it and that symbol."""

    __slots__ = ("_declarators", "children", "depth", "next", "node", "out", "owner", "plain_depth")

    def __init__(self, node: Node, owner: Symbol | None, out: list[Symbol], depth: int, plain_depth: int) -> None:
        self.node = node
        self.children = node.named_children
        self.next = 0
        self.owner = owner
        self.out = out
        self.depth = depth
        self.plain_depth = plain_depth
        self._declarators: int | None = None

    def declarators(self) -> int:
        """How many declarators or type specs the node holds (counted once: a declaration of
        100 000 of them is asked for each)."""
        if self._declarators is None:
            self._declarators = sum(c.type in ("variable_declarator", "type_spec") for c in self.children)
        return self._declarators


def outline(parsed: Parsed) -> list[Symbol]:
    """The top-level symbols of ``parsed`` (members in ``children``)."""
    kinds = SYMBOL_KINDS.get(parsed.language)
    if kinds is None:
        return []
    found: list[Symbol] = []
    # The frames are the path from the root to the node being looked at: its ancestors, and
    # where each stands among its siblings (see _span).
    frames = [_Frame(parsed.tree.root_node, None, found, 0, 0)]
    while frames:
        frame = frames[-1]
        if frame.next == len(frame.children):
            frames.pop()
            continue
        child = frame.children[frame.next]
        frame.next += 1
        kind = kinds.get(child.type)
        symbol = _symbol(child, kind, parsed, frame.owner, frames) if kind is not None else None
        if symbol is not None:
            frame.out.append(symbol)
            if symbol.kind in CONTAINER_KINDS and frame.depth + 1 < MAX_SYMBOL_DEPTH:
                frames.append(_Frame(child, symbol, symbol.children, frame.depth + 1, 0))
            elif symbol.kind in CONTAINER_KINDS:
                symbol.members_cut = True
        elif frame.plain_depth < MAX_PLAIN_DEPTH and not _is_body_of_function(child, frame.node):
            frames.append(_Frame(child, frame.owner, frame.out, frame.depth, frame.plain_depth + 1))
    return found


def flatten(symbols: list[Symbol]) -> list[Symbol]:
    return [s for top in symbols for s in top.walk()]


def _is_body_of_function(node: Node, parent: Node) -> bool:
    return node.type in ("statement_block", "compound_statement") and (
        parent.type in FUNCTION_VALUES or "function" in parent.type or "method" in parent.type
    )


def _symbol(node: Node, kind: str, parsed: Parsed, parent: Symbol | None, frames: list[_Frame]) -> Symbol | None:
    name = _name(node, parsed)
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
        receiver = _go_receiver(node, parsed.source)
        path = f"{receiver}.{name}" if receiver else name
    else:
        path = f"{parent.path}.{name}" if parent is not None else name
    outer, siblings, index = _span(node, frames)
    source = parsed.source
    start, start_row = _leading_start(outer, siblings, index, source)
    end_row, end_column = outer.end_point
    return Symbol(
        kind=kind,
        name=name,
        path=path,
        start_line=start_row + 1,
        end_line=end_row + 1 - (1 if end_column == 0 and end_row > 0 else 0),
        signature=_line_of(_name_node(node) or node, source, node),
        start_byte=start,
        end_byte=outer.end_byte,
    )


def _span(node: Node, frames: list[_Frame]) -> tuple[Node, list[Node], int]:
    """The outermost node the definition ``node`` (the child the last frame is at) owns — its
    wrappers, and the declaration holding a lone declarator or type spec — with that node's
    siblings and its index among them (for the comments above it)."""
    outer, level = node, len(frames) - 1
    while level >= 0:
        parent = frames[level].node
        if not (
            parent.type in WRAPPERS
            or (outer.type in ("variable_declarator", "type_spec") and parent.named_child_count == 1)
            or (
                parent.type in ("lexical_declaration", "variable_declaration", "type_declaration")
                and frames[level].declarators() == 1
            )
        ):
            break
        outer, level = parent, level - 1
    if level < 0:  # the root itself (never a wrapper): no siblings
        return outer, [outer], 0
    return outer, frames[level].children, frames[level].next - 1


def _leading_start(node: Node, siblings: list[Node], index: int, source: bytes) -> tuple[int, int]:
    """Where the span starts, as a byte offset and a row: before the comments, attributes and
    decorators directly above ``node`` (``siblings[index]``)."""
    start, row = node.start_byte, node.start_point[0]
    while index > 0 and siblings[index - 1].type in LEADING:
        previous = siblings[index - 1]
        between = source[previous.end_byte : start]
        if between.count(b"\n") > 1 or between.strip():
            break
        if previous.end_point[0] == previous.start_point[0] and _code_before(previous, source):
            break  # a trailing comment of the line above, not a comment about this definition
        start, row = previous.start_byte, previous.start_point[0]
        index -= 1
    line_start = _line_start(source, start)
    return (line_start, row) if line_start >= 0 and not source[line_start:start].strip() else (start, row)


def _line_start(source: bytes, at: int) -> int:
    """Where the line holding ``at`` starts; -1 when that is more than LINE_SCAN_BYTES back."""
    low = max(0, at - LINE_SCAN_BYTES)
    newline = source.rfind(b"\n", low, at)
    return newline + 1 if newline >= 0 or low == 0 else -1


def _line_of(node: Node, source: bytes, definition: Node) -> str:
    """The source line holding ``node``'s start, trimmed and bounded; from the ``definition``'s
    start when the line starts more than LINE_SCAN_BYTES before ``node`` (a minified file)."""
    at = node.start_byte
    start = _line_start(source, at)
    if start < 0:
        start = min(definition.start_byte, at)
    end = source.find(b"\n", at, at + LINE_SCAN_BYTES)
    if end < 0:
        end = min(len(source), at + LINE_SCAN_BYTES)
    line = source[start:end].decode("utf-8", "replace").strip()
    return line if len(line) <= MAX_SIGNATURE_CHARS else line[: MAX_SIGNATURE_CHARS - 1] + "…"


def _name_node(node: Node) -> Node | None:
    return node.child_by_field_name("type" if node.type == "impl_item" else "name")


def _code_before(node: Node, source: bytes) -> bool:
    """Is there code on ``node``'s line before it? (A line starting out of sight counts as code.)"""
    line_start = _line_start(source, node.start_byte)
    return line_start < 0 or bool(source[line_start : node.start_byte].strip())


def _name(node: Node, parsed: Parsed) -> str:
    if node.type == "impl_item":
        target = node.child_by_field_name("type")
        return _text(target, parsed.source) if target is not None else ""
    named = node.child_by_field_name("name")
    if named is not None:
        return _text(named, parsed.source)
    declarator = node.child_by_field_name("declarator")
    while declarator is not None:
        if declarator.type in ("identifier", "field_identifier", "qualified_identifier", "destructor_name",
                               "operator_name", "type_identifier"):  # fmt: skip
            return _text(declarator, parsed.source).replace("::", ".")
        declarator = declarator.child_by_field_name("declarator")
    return ""


def _text(node: Node, source: bytes) -> str:
    """The node's text, from the parsed bytes (never ``Node.text``: see the module docstring)."""
    return source[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _go_type_kind(node: Node) -> str:
    value = node.child_by_field_name("type")
    if value is not None and value.type == "struct_type":
        return "struct"
    if value is not None and value.type == "interface_type":
        return "interface"
    return "type"


def _go_receiver(node: Node, source: bytes) -> str:
    receiver = node.child_by_field_name("receiver")
    if receiver is None:
        return ""
    for parameter in receiver.named_children:
        kind = parameter.child_by_field_name("type")
        if kind is not None:
            return _text(kind, source).lstrip("*").split("[", 1)[0]
    return ""
