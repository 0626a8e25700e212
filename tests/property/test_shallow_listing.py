"""A one-level listing made without rg (internal/ripgrep/shallow.py) is rg's own answer.

Trees are generated with files, directories, hidden names, symlinks (to files, to directories,
dangling) and ignore files of every kind (.gitignore, .ignore, .rgignore) in the listed directory,
below it and in its parents, holding patterns of the syntax the Python reading claims to read
exactly (fallback.exact_glob): anchored and not, negated, directory-only, ``*``, ``?``, ``**``,
classes and alternations. The truth is rg's full listing of the same directory with the flags ls
passes: the files directly in it, and the subdirectories rg lists a file in. Whenever the
listing does not defer to rg, it must give exactly that.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from agent_toolsmith.cancel import CancelToken
from agent_toolsmith.ripgrep import AUTO_IGNORED, FileQuery, find_rg
from agent_toolsmith.ripgrep.fallback import InexactRules
from agent_toolsmith.ripgrep.shallow import list_shallow, shallow_rules
from hypothesis import given, settings
from hypothesis import strategies as st

#: Hang guard for one rg run.
RG_TIMEOUT_S = 60

NAMES = ["a", "b", "x.py", "y.txt", ".hidden", "node_modules", "build", "c d", "é.md", "keep"]
PATTERN_PIECES = [
    "a", "b", "x.py", "*.py", "*.txt", "*", "?", ".hidden", "[ab]", "[!a]*", "{a,b}", "keep", "c d", "*.md",
]  # fmt: skip
IGNORE_FILES = (".gitignore", ".ignore", ".rgignore")
GLOBS = tuple(f"!{g}" for g in AUTO_IGNORED)


@st.composite
def patterns(draw: st.DrawFn) -> str:
    pieces = draw(st.lists(st.sampled_from([*PATTERN_PIECES, "**"]), min_size=1, max_size=3))
    body = "/".join(pieces)
    if draw(st.booleans()) and not body.startswith("**"):
        body = "/" + body
    if draw(st.integers(0, 3)) == 0:
        body += "/"
    return ("!" if draw(st.integers(0, 3)) == 0 else "") + body


@st.composite
def trees(draw: st.DrawFn) -> dict[str, object]:
    """Relative paths (from the parent of the listed directory ``p/``) to what they are."""
    entries: dict[str, object] = {}
    dirs = ["p"]
    for _ in range(draw(st.integers(1, 14))):
        parent = draw(st.sampled_from(dirs))
        name = draw(st.sampled_from(NAMES))
        path = f"{parent}/{name}"
        if any(path == e or path.startswith(e + "/") or e.startswith(path + "/") for e in entries):
            continue
        kind = draw(st.sampled_from(["file", "file", "dir", "link_file", "link_dir", "dangling"]))
        entries[path] = kind
        if kind == "dir" and path.count("/") < 4:
            dirs.append(path)
    for directory in ["", *dirs]:  # "" is the parent of the listed directory
        for ignore in IGNORE_FILES:
            if draw(st.integers(0, 4)) == 0:
                key = f"{directory}/{ignore}" if directory else ignore
                entries[key] = "\n".join(draw(st.lists(patterns(), min_size=1, max_size=3))) + "\n"
    return entries


def build(base: Path, tree: dict[str, object]) -> None:
    (base / "p").mkdir()
    for rel, kind in sorted(tree.items(), key=lambda item: item[0].count("/")):
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if kind == "dir":
            path.mkdir(exist_ok=True)
        elif kind == "file":
            path.write_text("x")
        elif kind == "link_file":
            (base / "target.txt").write_text("t")
            path.symlink_to(base / "target.txt")
        elif kind == "link_dir":
            (base / "target_dir").mkdir(exist_ok=True)
            (base / "target_dir" / "f.txt").write_text("t")
            path.symlink_to(base / "target_dir", target_is_directory=True)
        elif kind == "dangling":
            path.symlink_to(base / "nowhere")
        else:
            path.write_text(str(kind))


def rg_truth(root: Path) -> tuple[set[str], set[str]]:
    """(files directly in ``root``, subdirectories holding a listed file), from rg's full listing."""
    rg = find_rg(None)
    assert rg is not None
    args = [rg, "--files", "--null", "--hidden", "--no-require-git", "--no-messages", "--glob", "!.git"]
    for glob in GLOBS:
        args += ["--glob", glob]
    done = subprocess.run([*args, "--", str(root)], capture_output=True, timeout=RG_TIMEOUT_S, check=False)
    files, dirs = set(), set()
    for raw in filter(None, done.stdout.split(b"\0")):
        rel = os.fsdecode(raw)[len(str(root)) + 1 :]
        head, _, rest = rel.partition("/")
        (dirs if rest else files).add(head)
    return files, dirs


def shallow(root: Path) -> tuple[set[str], set[str]] | None:
    query = FileQuery(root, globs=GLOBS, max_depth=1, with_directories=True)
    rules = shallow_rules(query)
    if rules is None:
        return None
    try:
        result = list_shallow(query, rules, CancelToken(), limit=50_000, look=True)
    except InexactRules:  # met below the root, in a directory it looked into
        return None
    return {Path(f).name for f in result.files}, set(result.directories)


@pytest.fixture(autouse=True)
def _no_outside_rules(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """rg and the listing read the user's git excludes: a home of our own keeps them out."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("RIPGREP_CONFIG_PATH", raising=False)


@settings(max_examples=120)
@given(tree=trees(), nested=st.booleans())
def test_a_one_level_listing_is_what_rg_lists(tree: dict[str, object], nested: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(os.path.realpath(tmp))
        build(base, tree)
        root = base / "p"
        if nested:  # listed from below, with the ignore files of p/ and its parent above it
            subdirs = [rel for rel, kind in tree.items() if kind == "dir" and rel.count("/") == 1]
            if subdirs:
                root = base / sorted(subdirs)[0]
        ours = shallow(root)
        if ours is None:
            return  # deferred to rg: nothing of ours to compare
        assert ours == rg_truth(root)


def test_escaped_or_unusual_patterns_are_left_to_rg(tmp_path: Path) -> None:
    for line in ["\\#not-a-comment", "a**b", "{a,}", "[a-b-c]", "\\!x"]:
        root = tmp_path / f"case{abs(hash(line))}"
        root.mkdir()
        (root / ".gitignore").write_text(line + "\n")
        assert shallow_rules(FileQuery(root, globs=GLOBS, max_depth=1, with_directories=True)) is None, line


def test_rules_in_git_excludes_are_left_to_rg(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / ".git" / "info").mkdir(parents=True)
    query = FileQuery(root / ".", globs=GLOBS, max_depth=1, with_directories=True)
    (root / ".git" / "info" / "exclude").write_text("# only a comment\n")
    assert shallow_rules(query) is not None
    (root / ".git" / "info" / "exclude").write_text("*.log\n")
    assert shallow_rules(query) is None
    shutil.rmtree(root / ".git")
    home = Path(os.environ["HOME"])
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".config" / "git" / "ignore").write_text("*.tmp\n")
    assert shallow_rules(query) is None


@pytest.mark.xfail(strict=True, reason="the look below the root does not read a nested repository's info/exclude")
def test_a_nested_repositorys_excludes_are_rgs(tmp_path: Path) -> None:
    """rg reads the info/exclude of a repository below the listed directory too (a vendored
    checkout): a subdirectory holding only files it excludes is not shown."""
    root = tmp_path / "ws"
    (root / "checkout" / ".git" / "info").mkdir(parents=True)
    (root / "checkout" / ".git" / "info" / "exclude").write_text("*.txt\n")
    (root / "checkout" / "only.txt").write_text("x")
    (root / "top.md").write_text("x")
    assert rg_truth(root) == ({"top.md"}, set())
    assert shallow(root) in (None, rg_truth(root))  # rg's answer, or rg asked to give it


def test_a_git_config_rewritten_with_its_old_time_is_read_again(tmp_path: Path) -> None:
    """The excludes file git's configuration names is known again when the configuration is
    replaced by one of the same size and modification time (a copy that keeps times: rsync,
    ``cp -p``, a dotfiles manager)."""
    home = Path(os.environ["HOME"])
    (home / "ex_a").write_text("")
    (home / "ex_b").write_text("*.txt\n")
    config = home / ".gitconfig"
    config.write_text(f"[core]\n\texcludesFile = {home}/ex_a\n")
    before = config.stat()
    root = tmp_path / "ws"
    root.mkdir()
    query = FileQuery(root, globs=GLOBS, max_depth=1, with_directories=True)
    assert shallow_rules(query) is not None
    staged = home / ".gitconfig.new"
    staged.write_text(f"[core]\n\texcludesFile = {home}/ex_b\n")
    os.utime(staged, ns=(before.st_atime_ns, before.st_mtime_ns))
    staged.replace(config)
    assert config.stat().st_mtime_ns == before.st_mtime_ns and config.stat().st_size == before.st_size
    assert shallow_rules(query) is None  # ex_b has a rule: rg answers
