"""ls with depth: rg lists only the files within the depth, and the directories shown there are
exactly those the full listing shows at those levels (a directory holding only deeper files is
shown; one holding only ignored files, or ignored itself, is not)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.tools.test_search import run_in


def make(ws: Path, files: list[str]) -> None:
    for rel in files:
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("x")


def listing(ws: Path, params: dict[str, object], use_rg: bool) -> list[str]:
    response = run_in(ws, "ls", params, use_rg=use_rg)
    assert not response.is_error, response.content  # type: ignore[attr-defined]
    return response.content.splitlines()  # type: ignore[attr-defined]


def within(lines: list[str], depth: int) -> list[str]:
    """The full listing cut to ``depth`` levels (the root line is level 0)."""
    return [line for line in lines if (len(line) - len(line.lstrip(" "))) // 2 <= depth]


TREE = [
    "deep/a/b/c/leaf.txt",  # a directory whose only file is four levels down
    "src/pkg/mod.py",
    "src/top.py",
    "ignored_dir/x/y.txt",  # gitignored directory
    "only_logs/deeper/run.log",  # holds only gitignored files
    "mixed/keep/k.txt",
    "mixed/drop/d.log",
    ".config/tool/settings.toml",  # hidden: listed, as without depth
    "node_modules/pkg/index.js",  # auto-ignored at any depth
    "lib/node_modules/x/y.js",  # holds only auto-ignored files: not shown
    "empty_tree/a/b/.keep_dir_only/",  # only directories, no files
    "README.md",
]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    make(ws, [rel for rel in TREE if not rel.endswith("/")])
    for rel in TREE:
        if rel.endswith("/"):
            (ws / rel).mkdir(parents=True)
    (ws / ".gitignore").write_text("ignored_dir/\n*.log\n")
    return ws


@pytest.mark.parametrize("use_rg", [True, False])
def test_depth_one_shows_directories_whose_files_are_all_deeper(tree: Path, use_rg: bool) -> None:
    assert listing(tree, {"depth": 1}, use_rg) == [
        f"- {tree}/",
        "  - .config/",
        "  - deep/",
        "  - mixed/",
        "  - src/",
        "  - .gitignore",
        "  - README.md",
    ]


@pytest.mark.parametrize("use_rg", [True, False])
@pytest.mark.parametrize("depth", [1, 2, 3, 4, 5])
def test_depth_listing_is_the_full_listing_cut_at_that_depth(tree: Path, depth: int, use_rg: bool) -> None:
    full = listing(tree, {}, use_rg)
    assert "ignored_dir" not in "\n".join(full) and "only_logs" not in "\n".join(full)
    assert listing(tree, {"depth": depth}, use_rg) == within(full, depth)


@pytest.mark.parametrize("use_rg", [True, False])
def test_depth_honours_extra_ignores_below_the_depth(tree: Path, use_rg: bool) -> None:
    # deep/ holds only leaf.txt; ignoring *.txt leaves it holding nothing shown.
    lines = listing(tree, {"depth": 1, "ignore": ["*.txt"]}, use_rg)
    assert "  - deep/" not in lines and "  - src/" in lines
    assert lines == within(listing(tree, {"ignore": ["*.txt"]}, use_rg), 1)


@pytest.mark.parametrize("use_rg", [True, False])
def test_depth_in_a_subdirectory_with_gitignore_above(tree: Path, use_rg: bool) -> None:
    make(tree, ["mixed/more/only.log", "mixed/more/deeper/ok.txt"])
    lines = listing(tree, {"path": "mixed", "depth": 1}, use_rg)
    assert lines == [f"- {tree}/mixed/", "  - keep/", "  - more/"]
    assert lines == within(listing(tree, {"path": "mixed"}, use_rg), 1)


def test_depth_does_not_list_what_is_past_a_symlink(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    make(outside, ["sub/secret.txt"])
    ws = tmp_path / "ws"
    make(ws, ["real/f.txt"])
    (ws / "link").symlink_to(outside, target_is_directory=True)
    assert listing(ws, {"depth": 1}, True) == [f"- {ws}/", "  - real/"]


@pytest.mark.parametrize(
    "ignore_files",
    [
        {".ignore": "*.txt\n", "sub/.gitignore": "!keep.txt\n"},  # .ignore outranks a nearer .gitignore
        {".gitignore": "*.txt\n", "sub/.ignore": "!keep.txt\n"},
        {".gitignore": "*.txt\n", "sub/.gitignore": "keep.txt\n", ".ignore": "!keep.txt\n"},
        {".rgignore": "only_txt/\n", ".ignore": "!only_txt/\n"},
    ],
)
def test_ignore_files_of_every_kind_as_rg_reads_them(tmp_path: Path, ignore_files: dict[str, str]) -> None:
    ws = tmp_path / "ws"
    make(ws, ["sub/keep.txt", "sub/other.txt", "sub/x.md", "only_txt/deeper/a.txt", "deep/er/b.txt"])
    for rel, text in ignore_files.items():
        (ws / rel).write_text(text)
    full = listing(ws, {}, True)
    assert listing(ws, {}, False) == full  # the fallback reads them as rg does
    for depth in (1, 2):
        assert listing(ws, {"depth": depth}, True) == within(full, depth)
        assert listing(ws, {"depth": depth}, False) == within(full, depth)


@pytest.mark.parametrize("use_rg", [True, False])
def test_depth_lists_a_directory_named_through_a_symlink(tmp_path: Path, use_rg: bool) -> None:
    """ls follows the directory it is given (as rg does), not symlinks below it."""
    ws = tmp_path / "ws"
    make(ws, ["real/sub/deep/f.txt", "real/top.txt"])
    (ws / "link").symlink_to(ws / "real", target_is_directory=True)
    full = listing(ws, {"path": "link"}, use_rg)
    assert full[1:] == ["  - sub/", "    - deep/", "      - f.txt", "  - top.txt"]
    assert listing(ws, {"path": "link", "depth": 1}, use_rg) == within(full, 1)


@pytest.mark.parametrize("use_rg", [True, False])
def test_a_directory_is_looked_into_again_when_the_file_that_showed_it_goes(tmp_path: Path, use_rg: bool) -> None:
    """The file found below a directory last time is checked first; when it is gone, ignored,
    replaced by a directory or reached through a symlink, the directory is looked into again."""
    ws = tmp_path / "ws"
    make(ws, ["a/b/only.txt", "keep.txt"])
    shown = f"- {ws}/\n  - a/\n  - keep.txt"
    hidden = f"- {ws}/\n  - keep.txt"
    assert "\n".join(listing(ws, {"depth": 1}, use_rg)) == shown
    (ws / ".gitignore").write_text("only.txt\n")  # ignored now: nothing else below a/
    assert "\n".join(listing(ws, {"depth": 1}, use_rg)) == f"- {ws}/\n  - .gitignore\n  - keep.txt"
    (ws / ".gitignore").unlink()
    assert "\n".join(listing(ws, {"depth": 1}, use_rg)) == shown
    (ws / "a" / "b" / "only.txt").unlink()
    (ws / "a" / "b" / "only.txt").mkdir()  # a directory of that name, empty
    assert "\n".join(listing(ws, {"depth": 1}, use_rg)) == hidden
    (ws / "a" / "b" / "only.txt").rmdir()
    (ws / "a" / "c" / "d").mkdir(parents=True)
    (ws / "a" / "c" / "d" / "other.txt").write_text("x")
    assert "\n".join(listing(ws, {"depth": 1}, use_rg)) == shown  # found again, elsewhere
    (ws / "a" / "c" / "d" / "other.txt").unlink()
    (ws / "a" / "c" / "d").rmdir()
    (ws / "a" / "c").rmdir()
    (ws / "outside").mkdir()
    (ws / "outside" / "only.txt").write_text("x")
    (ws / "a" / "b").rmdir()
    (ws / "a" / "b").symlink_to(ws / "outside")  # the way to it is a symlink now: not followed
    assert "\n".join(listing(ws, {"depth": 1}, use_rg)) == f"- {ws}/\n  - outside/\n  - keep.txt"


def test_witnesses_kept_across_processes_are_checked_and_never_trusted_blindly(tmp_path: Path) -> None:
    """A CLI call is a new process: the file found below each directory is kept in the state
    directory for the next one. A kept witness that went is looked for again; one that points
    out of its directory is not taken in at all."""
    from agent_toolsmith.cancel import CancelToken
    from agent_toolsmith.ripgrep import FileQuery
    from agent_toolsmith.ripgrep import directories as walk

    ws = tmp_path / "ws"
    make(ws, ["a/b/first.txt", "top.txt"])
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "x.txt").write_text("x")
    store = walk.witness_file(tmp_path / "state", str(ws))
    query = FileQuery(ws, max_depth=1, with_directories=True, witnesses=lambda: store)

    def new_process_walk() -> list[str]:
        walk._witnesses.clear()
        walk._loaded.clear()
        walk.load_witnesses(store, str(ws))
        loaded = dict(walk._witnesses)
        shown = walk.shown_directories(query, CancelToken())
        walk.save_witnesses(store, str(ws))
        return [*shown, *(f"{d}={w}" for d, w in sorted(loaded.items()))]

    assert new_process_walk() == ["a"]  # nothing kept yet
    assert new_process_walk() == ["a", f"{ws}/a=b/first.txt"]  # taken in, checked, used
    (ws / "a" / "b" / "first.txt").unlink()
    make(ws, ["a/c/second.txt"])
    assert new_process_walk() == ["a", f"{ws}/a=b/first.txt"]  # gone: looked for again
    assert new_process_walk() == ["a", f"{ws}/a=c/second.txt"]
    (ws / "a" / "c" / "second.txt").unlink()
    store.write_text(f'{{"{ws}/a": "../../outside/x.txt", "{tmp_path}/outside": "x.txt"}}')
    assert new_process_walk() == []  # neither taken in; a/ holds no file now


def _aged(ws: Path) -> None:
    """Wait (bounded) until every entry below ``ws`` changed longer ago than a proof needs: only
    then are the directories' stats kept as proofs (a change in the same tick of the file-time
    clock would leave the same stats)."""
    from agent_toolsmith.ripgrep.proofs import RACY_NS

    newest = max(max(p.lstat().st_mtime_ns, p.lstat().st_ctime_ns) for p in [ws, *ws.rglob("*")])
    deadline = time.monotonic() + AGE_TIMEOUT_S
    while time.time_ns() <= newest + RACY_NS:
        assert time.monotonic() < deadline, "the clock did not move"
        time.sleep(0.01)


#: Hang guard for the wait above.
AGE_TIMEOUT_S = 10.0


def test_a_one_level_listing_rests_on_proofs_and_looks_again_after_any_change(tmp_path: Path) -> None:
    """ls {depth: 1} shows each subdirectory by what the last look found, confirmed by stats
    alone while nothing it rests on changed; any change to one of those makes it look again,
    and every answer is rg's (the full listing cut at one level)."""
    from agent_toolsmith.cancel import CancelToken
    from agent_toolsmith.ripgrep import AUTO_IGNORED, FileQuery
    from agent_toolsmith.ripgrep.shallow import NeedsLook, list_shallow, shallow_rules

    ws = tmp_path / "ws"
    make(ws, ["shown/f.txt", "deep/a/b/leaf.txt", "logs_only/x.log", "guarded/keep.txt", "top.txt"])
    (ws / "guarded" / ".gitignore").write_text("other.txt\n")
    (ws / "target").mkdir()
    (ws / "target" / "t.txt").write_text("x")
    (ws / ".gitignore").write_text("*.log\ntarget/\n")
    query = FileQuery(ws, globs=tuple(f"!{g}" for g in AUTO_IGNORED), max_depth=1, with_directories=True)

    def inline() -> list[str] | None:
        rules = shallow_rules(query)
        assert rules is not None
        try:
            found = list_shallow(query, rules, CancelToken(), limit=1000, look=False)
        except NeedsLook:
            return None
        return sorted([*(f"{d}/" for d in found.directories), *(Path(f).name for f in found.files)])

    def expected() -> list[str]:
        full = listing(ws, {}, True)
        return sorted(line.strip()[2:] for line in within(full, 1)[1:])

    _aged(ws)
    assert inline() is None  # nothing looked into yet
    assert listing(ws, {"depth": 1}, True) == within(listing(ws, {}, True), 1)
    assert inline() is None  # a first look keeps no proofs (a CLI call lists once and ends)
    assert listing(ws, {"depth": 1}, True) == within(listing(ws, {}, True), 1)  # looks again, keeps proofs
    assert inline() == expected() == [".gitignore", "deep/", "guarded/", "shown/", "top.txt"]
    changes = [
        lambda: (ws / "shown" / "f.txt").unlink(),  # its witness goes: nothing left to show
        lambda: (ws / "logs_only" / "y.md").write_text("x"),  # a file to show appears
        lambda: (ws / "guarded" / ".gitignore").write_text("keep.txt\n"),  # edited in place: ignored now
        lambda: (ws / "deep" / "a" / "b" / "leaf.txt").rename(ws / "deep" / "a" / "b" / "leaf.log"),
        lambda: (ws / "new").mkdir() or (ws / "new" / "n.txt").write_text("x"),
        lambda: (ws / "added.md").write_text("x"),  # the root's own entries change
        lambda: (ws / ".gitignore").write_text("*.log\ntarget/\n*.md\n"),  # in place: added.md and y.md go
    ]
    for number, change in enumerate(changes):
        change()
        if number == 5:
            assert inline() == expected()  # the root's entries are read again; no proof is touched
        else:
            assert inline() is None  # what a proof rests on changed (the root's rules, for the last): look again
        assert listing(ws, {"depth": 1}, True) == within(listing(ws, {}, True), 1)
        _aged(ws)
        assert listing(ws, {"depth": 1}, True) == within(listing(ws, {}, True), 1)  # proofs made again
        assert inline() == expected()
    assert expected() == [".gitignore", "guarded/", "new/", "top.txt"]
