"""The gate's fast path one level down: a change inside the body of a large class or function is
judged by the statements of that body it touches, not by the whole statement.

local.py judges a change by the top-level statements it touches, each parsed on its own. A class
holding a module's worth of methods is one statement, so an edit of one method parsed the whole
class (a 900-line class: ~4 ms, more than the rest of the edit). A block's statements, like a
module's, follow one another at one column — the block's — each starting a line with the lexer
outside any bracket or string; so a stretch of them parses on its own in a block of its own:
``if 1:`` on a line, then the stretch as written (:data:`PREFIX`). When that parse is clean, its
one top-level node is that ``if``, with no other clause, its block holds every statement of the
stretch and the first one is at the body's column, and the stretch ends a line without a
continuation, then the stretch put back in the body is a sequence of complete statements at the
body's column: the body goes on after it as before, the statement holding it ends where it
ended, and the file parses wherever it parsed before. Anything else — a line of the stretch
dedented out of the block, a clause (``else:``, ``except``) that needs the statement before it, a
comment at the margin, an error — leaves the change to local.py, which parses the whole statement.

Where a body's statements start comes, as the top-level starts do, from a tree without errors (the
whole file's, or that of a stretch local.py judged) and is carried through each change judged
here: the body's starts after the change shift with it, the stretch's own are its parse's. Only
bodies of statements larger than :data:`BODY_MIN_BYTES` are kept: a smaller statement costs less
to parse whole than its body's starts cost to keep.
"""

from __future__ import annotations

import bisect

from .parse import Bodies, Body, Parsed, parse_detached
from .regions import assembled_starts, changed_regions, inner_cut

#: Statements at least this large (bytes) have their body's statement starts kept.
BODY_MIN_BYTES = 1024
#: What a body's stretch is parsed after: a block of its own, opened at column 0.
PREFIX = b"if 1:\n"
#: The definitions whose body is their last part (no clause after it).
_DEFINITIONS = frozenset({"class_definition", "function_definition"})
_CONTINUED = (b"\\\n", b"\\\r\n")


def bodies_of(parsed: Parsed, offset: int = 0) -> Bodies:
    """The bodies of the large top-level definitions of ``parsed`` (a tree without errors of a
    file, or of the part of one that starts at ``offset``)."""
    out: Bodies = {}
    source = parsed.source
    for node in parsed.tree.root_node.children:
        if node.end_byte - node.start_byte < BODY_MIN_BYTES or node.start_point[1] != 0:
            continue
        definition = node.child_by_field_name("definition") if node.type == "decorated_definition" else node
        if definition is None or definition.type not in _DEFINITIONS:
            continue
        block = definition.child_by_field_name("body")
        if block is None or block.start_point[0] <= definition.start_point[0]:
            continue  # a body on its header's line has no lines of its own
        statements = [child for child in block.named_children if child.type != "comment"]
        if not statements:
            continue
        column, base = statements[0].start_point[1], node.start_byte
        starts = [line - base for child in statements if (line := _line_start(child.start_byte, column, source)) >= 0]
        end = source.find(b"\n", node.end_byte)
        out[offset + base] = Body(column, tuple(starts), (len(source) if end < 0 else end + 1) - base)
    return out


def _line_start(start: int, column: int, source: bytes) -> int:
    """Where the line of a statement starting at ``start`` begins, when the statement begins it
    at ``column`` (only indentation before it, the line above not continued into it); else -1."""
    line = start - column
    if line < 0 or source[line:start].strip(b" \t") or (line and source[max(line - 3, 0) : line].endswith(_CONTINUED)):
        return -1
    return line


def clean_in_body(
    old: bytes, new: bytes, starts: list[int], bodies: Bodies, language: str, changed: tuple[int, int, int]
) -> tuple[list[int], Bodies] | None:
    """When the change from ``old`` to ``new`` (``changed``: their changed_range) lies in the body
    of one kept top-level statement and the body's statements it touches parse on their own (the
    module docstring): the top-level starts of ``new`` and its bodies. None means "judge it the
    top-level way"."""
    start, old_end, new_end = changed
    shift = new_end - old_end
    index = bisect.bisect_right(starts, start) - 1
    holder = starts[index] if index >= 0 else -1
    body = bodies.get(holder)
    if body is None or not body.starts or start < holder + body.starts[0] or old_end > holder + body.end:
        return None
    low, high = holder + body.starts[0], holder + body.end
    old_area, new_area = old[low:high], new[low : high + shift]
    planned = changed_regions(old_area, new_area, [line - body.starts[0] for line in body.starts])
    regions = [region for _, region in planned or [] if region is not None]
    if len(regions) != 1:
        return None
    region = regions[0]
    for cut in (inner_cut(new_area, region, body.column), (region[0], region[1])):
        offsets = _block_statements(new_area[cut[0] : cut[1]], body.column, language)
        if offsets is not None:
            break
    else:
        return None
    assert planned is not None
    first = body.starts[0]
    starts_now = tuple(first + line for line in assembled_starts(planned, [cut], [offsets]))
    kept: Bodies = {key: value for key, value in bodies.items() if key < holder}
    kept[holder] = Body(body.column, starts_now, body.end + shift)
    kept.update((key + shift, value) for key, value in bodies.items() if key > holder)
    return starts[: index + 1] + [later + shift for later in starts[index + 1 :]], kept


def _block_statements(stretch: bytes, column: int, language: str) -> list[int] | None:
    """Where the lines of the statements of ``stretch`` start (offsets in it), when it parses on
    its own as the body of a block at ``column`` (the module docstring's conditions); else None."""
    if not stretch.endswith(b"\n") or stretch.endswith(_CONTINUED):
        return None
    source = PREFIX + stretch
    parsed = parse_detached(source, language)
    if parsed is None or parsed.has_tree_errors or parsed.errors(limit=1):
        return None
    root = parsed.tree.root_node
    if root.child_count != 1 or root.children[0].type != "if_statement":
        return None  # a statement or comment dedented out of the block
    opened = root.children[0]
    block = opened.child_by_field_name("consequence")
    if block is None or opened.child_by_field_name("alternative") is not None:
        return None  # an else or elif of the stretch's took the opening if for its own
    statements = [child for child in block.named_children if child.type != "comment"]
    if not statements or statements[0].start_point[1] != column:
        return None
    lines = [_line_start(child.start_byte, column, source) for child in statements]
    return [line - len(PREFIX) for line in lines if line >= len(PREFIX)]
