"""symbol_edit: replace, insert around, or delete a symbol addressed by its name path."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ...errors import InvalidParams, NoChange, ToolError
from ...fsutil.textio import normalize_eol
from ...syntax import parse
from ...syntax.languages import OUTLINED_LANGUAGES
from ...syntax.outline import MAX_SYMBOL_DEPTH, SYMBOL_KINDS, Symbol, flatten, outline
from ..change.pipeline import Applied, ChangeRequest, Planned, Target, change_files
from ..change.snapshot import Snapshot
from ..change.worker import Check
from .context import FileServices
from .contract import Tool, ToolResponse
from .params import param

#: Candidates listed when the symbol is ambiguous or not found.
MAX_CANDIDATES_LISTED = 30

Action = Literal["replace", "insert_before", "insert_after", "delete"]

DESCRIPTION = f"""Changes one symbol (function, method, class, struct, …) of a source file, addressed by
its name path instead of by its text. Parses with tree-sitter; no language server needed.

- `symbol`: a name path as outline shows it: `Greeter.greet` for a method, `main` for a function
  (a unique last part such as `greet` works too). Several matches → an error listing them.
- `action`: `replace` (default) swaps the symbol's whole text for `new_string`; `insert_before`
  / `insert_after` add `new_string` as lines before / after it; `delete` removes it.
- The symbol's text runs from its decorators/annotations and the doc comments directly above it
  to its last line (outline's line range). A replacement must include those it keeps, written
  with the file's indentation for that symbol.
- Same rules as edit: read the file with view first (refused if it changed since); only the
  symbol's lines change; the syntax gate refuses a result that no longer parses; the result
  has a diff and the language servers' errors.
- Languages: {OUTLINED_LANGUAGES}. For other files, or a change inside a symbol, use edit.
"""


@dataclass(frozen=True)
class SymbolEditParams:
    file_path: str = param("The file to change (absolute or relative to the workspace root)", minLength=1)
    symbol: str = param("The symbol's name path, e.g. Greeter.greet or main", minLength=1)
    new_string: str = param("The new text (the whole symbol for replace; the lines to add for inserts)", "")
    action: Action = param("replace, insert_before, insert_after or delete", "replace")


class SymbolEditTool(Tool):
    name = "symbol_edit"
    title = "Edit a symbol by name"
    description = DESCRIPTION
    Params = SymbolEditParams

    async def run(self, params: SymbolEditParams, ctx: FileServices) -> ToolResponse:
        if params.action != "delete" and not params.new_string.strip():
            raise InvalidParams(
                f"new_string is empty: give the text to {params.action.replace('_', ' ')} (or use action delete)."
            )
        path = ctx.resolve(params.file_path)

        def plan(snapshot: Snapshot, check: Check) -> Planned:
            old = snapshot.text
            symbol = find_symbol(ctx, path, old.text, params.symbol)
            start, end, text = span_change(old.text, symbol, params.action, normalize_eol(params.new_string))
            new = dataclasses.replace(old, raw=old.splice([(start, end, text)], check))
            if new.text == old.text:
                raise NoChange("The change leaves the file as it is: new_string equals the symbol's text.")
            return Planned(new=new, value=symbol)

        def describe(planned: list[Planned]) -> str:
            return f"{params.action} {planned[0].value.path} in {ctx.display(path)}"

        def report(applied: Applied) -> tuple[str, dict[str, Any]]:
            planned = applied.planned[0]
            symbol: Symbol = planned.value
            metadata = {key: planned.meta[key] for key in ("diff", "additions", "removals")}
            metadata.update(
                file_path=str(path), symbol=symbol.path, kind=symbol.kind, action=params.action,
                start_line=symbol.start_line, end_line=symbol.end_line,
            )  # fmt: skip
            done = {
                "replace": "Replaced", "insert_before": "Inserted before", "insert_after": "Inserted after",
                "delete": "Deleted",
            }[params.action]  # fmt: skip
            text = (
                f"<result>\n{done} {symbol.kind} {symbol.path} (lines {symbol.start_line}-{symbol.end_line} before "
                f"the change) in {path}.\n</result>"
            )
            return text, metadata

        request = ChangeRequest(self.name, [Target(path, plan)], describe)
        return await change_files(ctx, request, report)


def find_symbol(ctx: FileServices, path: Path, text: str, wanted: str) -> Symbol:
    """The one symbol ``wanted`` names: its full name path, else a unique dotted suffix of one."""
    parsed = parse(text, str(path), cache=ctx.syntax_trees)
    if parsed is None or parsed.language not in SYMBOL_KINDS:
        raise ToolError(
            f"symbol_edit cannot parse {path.name} (it reads {OUTLINED_LANGUAGES} by extension, up to a size "
            "limit). Use edit instead.",
            code="unsupported_language",
        )
    symbols = flatten(outline(parsed))
    exact = [s for s in symbols if s.path == wanted]
    candidates = exact or [s for s in symbols if s.path.endswith("." + wanted)]
    if len(candidates) == 1:
        return _in_chars(candidates[0], parsed.source)
    if candidates:
        listed = "\n".join(
            f"  {s.kind} {s.path} (lines {s.start_line}-{s.end_line})" for s in candidates[:MAX_CANDIDATES_LISTED]
        )
        raise ToolError(
            f"{wanted!r} names {len(candidates)} symbols in {path}; give the full name path of one:\n{listed}",
            {"candidates": [s.path for s in candidates]}, code="ambiguous_symbol",
        )
    known = ", ".join(s.path for s in symbols[:MAX_CANDIDATES_LISTED]) or "none"
    more = (
        f" (and {len(symbols) - MAX_CANDIDATES_LISTED} more; use outline)"
        if len(symbols) > MAX_CANDIDATES_LISTED
        else ""
    )
    deep = (
        f" Symbols nested deeper than {MAX_SYMBOL_DEPTH} levels are not addressed by name: use edit for those."
        if any(s.members_cut for s in symbols)
        else ""
    )
    raise ToolError(f"No symbol {wanted!r} in {path}. Its symbols: {known}{more}.{deep}", code="symbol_not_found")


def _in_chars(symbol: Symbol, source: bytes) -> Symbol:
    """The symbol with its span as character offsets into the text (the parse works in bytes)."""
    start = len(source[: symbol.start_byte].decode("utf-8", "surrogatepass"))
    end = start + len(source[symbol.start_byte : symbol.end_byte].decode("utf-8", "surrogatepass"))
    return dataclasses.replace(symbol, start_byte=start, end_byte=end)


def span_change(text: str, symbol: Symbol, action: Action, new: str) -> tuple[int, int, str]:
    """``(start, end, replacement)`` in ``text`` for ``action`` on ``symbol`` (character offsets).

    Inserts add whole lines; delete removes the symbol's lines with their line break."""
    start, end = symbol.start_byte, symbol.end_byte
    line_end = text.find("\n", end)
    after_line = len(text) if line_end < 0 else line_end + 1
    lines = new if new.endswith("\n") else new + "\n"
    if action == "replace":
        return start, end, new[:-1] if new.endswith("\n") and text[end : end + 1] == "\n" else new
    if action == "insert_before":
        return start, start, lines
    if action == "insert_after":
        if line_end < 0:
            return len(text), len(text), "\n" + lines.rstrip("\n")
        return after_line, after_line, lines
    return start, after_line, ""


TOOL = SymbolEditTool()
