"""ls: a directory tree that respects .gitignore and skips the usual noise."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from itertools import groupby, repeat
from operator import itemgetter

from ...fsutil.anchored import names_inside
from ...fsutil.paths import require_directory
from ...fsutil.printable import printable
from ...ripgrep import AUTO_IGNORED, FileQuery, find_rg, list_files
from ...ripgrep.directories import witness_file
from ...vocabulary import tool_name
from .context import PathServices
from .contract import Tool, ToolResponse
from .params import param

#: Entries (files and directories) shown at most.
MAX_ENTRIES = 1000
#: Files enumerated before sorting; past this the listing is a (flagged) partial subset.
MAX_FILES_COLLECTED = 50_000
#: Up to this many paths are checked (one fstatat each) on the event loop's thread, not in a
#: worker thread: a shallow listing's few checks take less than the hop.
INLINE_CHECKS = 256

DESCRIPTION = f"""Lists files and directories as a tree: directories first, then files, each alphabetical.

- `path`: the directory to list (default: the workspace root).
- `ignore`: extra glob patterns to leave out, e.g. ["*.log", "fixtures"].
- `depth`: how many levels to show (default: all).
- Respects .gitignore and skips common noise at any depth below `path`: {", ".join(AUTO_IGNORED[:20])}, ...
  Empty directories are not shown.
- At most {MAX_ENTRIES} entries; beyond that a header says the listing is incomplete.
- You should generally prefer the glob and grep tools if you know which directories or file
  patterns to search for.
"""


@dataclass(frozen=True)
class LsParams:
    path: str | None = param("The directory to list (default: the workspace root)", None)
    ignore: list[str] = param("Glob patterns to leave out", [])
    depth: int | None = param("Maximum depth to show (1 = direct children only)", None, minimum=1)


@dataclass
class _Dir:
    dirs: dict[str, _Dir] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)


class LsTool(Tool):
    name = "ls"
    title = "List a directory"
    description = DESCRIPTION
    Params = LsParams
    read_only = True

    async def run(self, params: LsParams, ctx: PathServices) -> ToolResponse:
        root = require_directory(ctx.resolve(params.path or "."), f"Use the {tool_name('view')} tool to read a file.")
        approved = await ctx.require_read_permission(self.name, root)
        globs = tuple(f"!{g}" for g in (*AUTO_IGNORED, *params.ignore))
        rg = find_rg(ctx.config.rg_path)
        # rg enumerates in parallel (unordered); sorting here keeps that speed and a stable listing.
        roots = ctx.readable_for(approved)  # resolved as far as the listing needs
        depth_limited = params.depth is not None
        query = FileQuery(
            root, globs=globs, max_depth=params.depth, readable=roots, with_directories=depth_limited,
            witnesses=(lambda: witness_file(ctx.state.directory("ls-witnesses"), str(root))) if depth_limited else None,
        )  # fmt: skip
        result = await list_files(query, rg=rg, limit=MAX_FILES_COLLECTED, cancel=ctx.cancel)
        base = str(root).rstrip("/")
        dirs = result.directories
        found = [*result.files, *(f"{base}/{rel}" for rel in dirs)]
        if result.confined:
            pass  # rg and the directory walk ran confined by the kernel: all of it is inside
        elif len(found) <= INLINE_CHECKS:  # a thread hop would cost more than the checks
            found = names_inside(found, roots.all(), root, approved)
        else:
            found = await asyncio.to_thread(names_inside, found, roots.all(), root, approved)
        lines = [f"- {printable(str(root))}/"]
        if params.depth == 1:  # every entry is a child of the root: no tree to build
            entries = _render_children(found, set(dirs), base, lines, MAX_ENTRIES + 1)
        else:
            tree, entries = _tree(found, {f"{base}/{rel}" for rel in dirs}, base)
            _render(tree, 1, lines, MAX_ENTRIES + 1)
        truncated = result.stopped_early or entries > MAX_ENTRIES
        if truncated:
            lines = lines[: MAX_ENTRIES + 1]
            header = (
                f"There are more than {MAX_ENTRIES} files in the directory. Use a more specific path, "
                "the ignore or depth parameters, or the glob and grep tools. The first "
                f"{MAX_ENTRIES} entries are included below:\n\n"
            )
        else:
            header = ""
        metadata = {
            "entries": min(entries, MAX_ENTRIES),
            "count_is_lower_bound": result.stopped_early,
            "truncated": truncated,
            "backend": "rg" if rg else "python",
        }
        return ToolResponse(header + "\n".join(lines), metadata=metadata)


def _tree(found: list[str], directories: set[str], base: str) -> tuple[_Dir, int]:
    """The tree of ``found`` (files, and the ``directories`` among them) below ``base``, and how
    many entries it has. Files are taken a directory at a time — rg lists a directory's files
    together — split and grouped by C-level calls: a capped listing has 50 000 of them."""
    tree, entries = _Dir(), 0
    if directories:
        for path in directories.intersection(found):
            entries += _insert_dirs(tree, path[len(base) + 1 :].split("/"))[1]
        found = [path for path in found if path not in directories]
    nodes: dict[str, _Dir] = {}  # by parent path: one lookup per run of a directory's files
    for parent, split in groupby(map(str.rpartition, found, repeat("/")), key=_head):
        relative = "" if parent == base else parent[len(base) + 1 :]
        node = nodes.get(relative)
        if node is None:
            node, added = _insert_dirs(tree, relative.split("/") if relative else [])
            nodes[relative] = node
            entries += added
        names = list(map(_tail, split))
        node.files += names
        entries += len(names)
    return tree, entries


_head, _tail = itemgetter(0), itemgetter(2)


def _insert_dirs(tree: _Dir, parts: list[str]) -> tuple[_Dir, int]:
    """The node for directory ``parts`` (created as needed) and how many directories were new."""
    node, added = tree, 0
    for part in parts:
        child = node.dirs.get(part)
        if child is None:
            child = node.dirs[part] = _Dir()
            added += 1
        node = child
    return node, added


def _render_children(found: list[str], directories: set[str], base: str, out: list[str], limit: int) -> int:
    """What :func:`_tree` and :func:`_render` make of a one-level listing (``found``: the root's
    files and, as ``base/name``, its ``directories``), appended to ``out``; the entry count."""
    names = [path[len(base) + 1 :] for path in found]
    files = sorted({name for name in names if name not in directories})
    shown = sorted(directories.intersection(names))
    room = max(limit - len(out), 0)
    shown_dirs, shown_files = shown[:room], files[: max(room - len(shown), 0)]
    # Names that are all plain text (the usual case) are checked in one pass and shown as they
    # are: joined after a "/" each (which no name holds), a name opening with '"' shows as '/"'.
    joined = "/" + "/".join([*shown_dirs, *shown_files])
    if joined.isprintable() and '/"' not in joined:
        out += [f"  - {name}/" for name in shown_dirs]
        out += [f"  - {name}" for name in shown_files]
    else:
        out += [f"  - {printable(name)}/" for name in shown_dirs]
        out += [f"  - {printable(name)}" for name in shown_files]
    return len(shown) + len(files)


def _render(node: _Dir, depth: int, out: list[str], limit: int) -> None:
    """Append the tree, directories first, each group alphabetical; stop at ``limit`` lines."""
    indent = "  " * depth
    for name in sorted(node.dirs):
        if len(out) >= limit:
            return
        out.append(f"{indent}- {printable(name)}/")
        _render(node.dirs[name], depth + 1, out, limit)
    for name in sorted(set(node.files)):
        if len(out) >= limit:
            return
        out.append(f"{indent}- {printable(name)}")


TOOL = LsTool()
