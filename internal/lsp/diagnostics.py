"""Formatting diagnostics for the model: one line each (continuations indented), errors only after
edits, capped per file, merged across the servers of a file; and the notes that keep a result
honest (which servers did not confirm, what that means)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..vocabulary import has_tool, tool_name
from .changes import Region, closeness

#: Diagnostics shown per file before "... and N more".
MAX_PER_FILE = 20
#: Other files whose new errors are shown after a change; the rest are named.
OTHER_FILES_SHOWN = 5
#: Other files named after the shown ones, beyond which only their count is given.
OTHER_FILES_NAMED = 10
SEVERITY_NAMES = {1: "Error", 2: "Warn", 3: "Info", 4: "Hint"}
ERROR = 1


@dataclass(frozen=True)
class Diag:
    """A diagnostic in 0-based LSP coordinates, independent of lsprotocol's classes."""

    line: int
    character: int
    severity: int
    message: str
    source: str | None = None
    code: str | None = None


def shown_path(path: str) -> str:
    """How a file's path appears in a report (every path printed goes through here)."""
    return path


def format_line(path: str, diag: Diag) -> str:
    """``Error: path:line:col [source][code] message``; a message's later lines follow, indented."""
    name = SEVERITY_NAMES.get(diag.severity, "Error")
    tags = (f"[{diag.source}]" if diag.source else "") + (f"[{diag.code}]" if diag.code else "")
    lines = [line.rstrip() for line in diag.message.strip().splitlines() if line.strip()] or [""]
    where = f"{shown_path(path)}:{diag.line + 1}:{diag.character + 1}"
    head = f"{name}: {where} {tags + ' ' if tags else ''}{lines[0].strip()}"
    return "\n".join([head, *("    " + line for line in lines[1:])])


def merge(results: Iterable[list[Diag] | None]) -> list[Diag]:
    """Several servers' diagnostics for one file as one list: a problem reported by two servers
    (same place and message) appears once, at the more severe of the two severities."""
    index: dict[tuple[int, int, str], int] = {}
    out: list[Diag] = []
    for diags in results:
        for diag in diags or []:
            key = (diag.line, diag.character, " ".join(diag.message.split()))
            if key not in index:
                index[key] = len(out)
                out.append(diag)
            elif diag.severity < out[index[key]].severity:
                out[index[key]] = diag
    return out


def select(diags: Iterable[Diag], *, errors_only: bool, focus: Sequence[Region] = ()) -> list[Diag]:
    """The diagnostics to show, in order: those on the ``focus`` (the lines a change just touched)
    first, then those near it, then the rest; each group by severity and place."""
    chosen = [d for d in diags if not errors_only or d.severity == ERROR]
    regions = list(focus)

    def order(d: Diag) -> tuple[int, int, int, int]:
        return (closeness(d.line, regions) if regions else 0, d.severity, d.line, d.character)

    return sorted(chosen, key=order)


def format_file(
    path: str, diags: Iterable[Diag], *, errors_only: bool, cap: int = MAX_PER_FILE, focus: Sequence[Region] = ()
) -> list[str]:
    chosen = select(diags, errors_only=errors_only, focus=focus)
    lines = [format_line(path, d) for d in chosen[:cap]]
    if len(chosen) > cap:
        lines.append(f"... and {len(chosen) - cap} more")
    return lines


def format_report(
    files: Mapping[str, Iterable[Diag]],
    others: Mapping[str, Iterable[Diag]] | None = None,
    *,
    errors_only: bool,
    cap: int = MAX_PER_FILE,
    context: str = "change",
    focus: Mapping[str, Sequence[Region]] | None = None,
    other_files: int = OTHER_FILES_SHOWN,
) -> str:
    """``<file_diagnostics>`` for the touched files (each ordered around its ``focus``, the lines
    just changed), ``<project_diagnostics>`` for the first ``other_files`` others (the rest
    named), and a ``<diagnostic_summary>`` worded for the ``context`` ("change": after an edit;
    "view"; "query": the lsp tool). Empty when there is nothing to report."""
    blocks: list[str] = []
    focus = focus or {}
    file_lines = [
        line
        for path, diags in files.items()
        for line in format_file(path, diags, errors_only=errors_only, cap=cap, focus=focus.get(path, ()))
    ]
    others = others or {}
    shown = list(others.items())[: max(other_files, 0)]
    other_lines = [line for path, diags in shown for line in format_file(path, diags, errors_only=errors_only, cap=cap)]
    unshown = [path for path in others if path not in dict(shown)]
    if unshown:
        named = ", ".join(shown_path(path) for path in unshown[:OTHER_FILES_NAMED])
        more = f", and {len(unshown) - OTHER_FILES_NAMED} more" if len(unshown) > OTHER_FILES_NAMED else ""
        other_lines.append(f"... and {len(unshown)} more file(s) with new errors: {named}{more}")
    if file_lines:
        blocks.append("<file_diagnostics>\n" + "\n".join(file_lines) + "\n</file_diagnostics>")
    if other_lines:
        blocks.append("<project_diagnostics>\n" + "\n".join(other_lines) + "\n</project_diagnostics>")
    if blocks:
        own = sum(len(select(d, errors_only=True)) for d in files.values())
        other = sum(len(select(d, errors_only=True)) for d in others.values())
        names = ", ".join(files)
        if context == "change":
            summary = f"Errors in the changed file(s): {own}"
        elif context == "view":
            summary = f"Errors in {names}: {own}"
        else:
            counts = [sum(1 for ds in files.values() for d in ds if d.severity == level) for level in (1, 2, 3, 4)]
            summary = f"{names}: {counts[0]} errors, {counts[1]} warnings, {counts[2] + counts[3]} information/hints"
        if others:
            summary += f"; errors in {len(others)} other file(s): {other}"
        blocks.append(f"<diagnostic_summary>\n{summary}\n</diagnostic_summary>")
    return "\n".join(blocks)


@dataclass
class Outcome:
    """One file's diagnostics after a sync: merged, with how sure they are."""

    diags: list[Diag] | None  # None: no server ran
    notes: list[str]
    #: Servers whose answer for this version did not come in time, with the seconds waited.
    unconfirmed: list[tuple[str, float]]
    #: Servers that said nothing while the file's last report was empty (likely clean, unconfirmed).
    quiet: list[str]
    #: Diagnostics that arrived after the call that made the change (delivered now).
    late: bool = False
    #: The lines of the file the session's last change touched (while its text is unchanged since).
    focus: list[Region] = field(default_factory=list)


def truth_notes(name: str, outcome: Outcome, *, view: bool = False) -> list[str]:
    """The notes that keep a result honest: who did not confirm, and what that means."""
    notes = list(outcome.notes)
    for server, waited in outcome.unconfirmed:
        later = "use the lsp tool or view the file later" if has_tool("lsp") else f"{tool_name('view')} the file later"
        then = later if view else "they come with the next result for this file"
        notes.append(
            f"unconfirmed: {server} is still analysing {name} after {waited:.0f} s; "
            f"its diagnostics are not in yet ({then})"
        )
    for server in outcome.quiet:
        notes.append(
            f"unconfirmed: {server} reported no errors for {name} after the change "
            "(it sends nothing while a file stays clean, so this is not a confirmation)"
        )
    return notes


def with_late_label(report: str, outcome: Outcome) -> str:
    if outcome.late and report:
        return "Diagnostics that arrived since your last edit of this file:\n" + report
    return report


def with_notes(report: str, notes: list[str]) -> str:
    lines = [f"(Diagnostics: {note}.)" if note.startswith("unconfirmed") else f"(Diagnostics unavailable: {note}.)"
             for note in notes]  # fmt: skip
    return "\n".join(part for part in (report, *lines) if part)
