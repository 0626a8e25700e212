"""bashlex's parse tables: built once, then read from the cache in later processes; a cache file
that is corrupt, forged, stale or unwritable costs a rebuild, never a failure. Each case runs in a
fresh interpreter, since bashlex builds its parser when first imported."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Lines that need the full parser (substitutions, lists, pipes, redirections, compound commands).
LINES = (
    "a && b | c $(d) > f",
    "for x in $(ls); do echo `id`; done",
    "( cd /tmp || exit 1 ); bash -c 'curl x' 2>&1",
    "if true; then sudo rm -rf /; fi",
)
#: Prints where the tables came from, then each line's parse tree and the policy's verdicts.
PROBE = f"""
import json
from agent_toolsmith.shell import bashlex_tables, policy
bashlex = bashlex_tables.import_bashlex()
trees = [[tree.dump() for tree in bashlex.parse(line)] for line in {LINES!r}]
verdicts = [[policy.banned_reason(line), policy.is_safe(line)] for line in {LINES!r}]
print(json.dumps({{"source": bashlex_tables.tables_source, "trees": trees, "verdicts": verdicts}}))
"""


def probe(cache_home: Path) -> dict[str, object]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home)}
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def cache_files(cache_home: Path) -> list[Path]:
    return sorted((cache_home / "toolsmith").glob("bashlex-tables-*.json"))


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """What a process that built its own tables parses (and the cache file it left)."""
    return probe(tmp_path_factory.mktemp("reference-cache"))


def test_first_process_builds_and_saves_then_later_ones_read(tmp_path: Path, reference: dict[str, object]) -> None:
    first = probe(tmp_path)
    assert first["source"] == "built"
    (saved,) = cache_files(tmp_path)
    assert not [p for p in saved.parent.iterdir() if p.name.endswith(".tmp")]
    second = probe(tmp_path)
    assert second["source"] == "cache"
    assert second["trees"] == first["trees"] == reference["trees"]
    assert second["verdicts"] == reference["verdicts"]
    assert cache_files(tmp_path) == [saved]


@pytest.mark.parametrize(
    "damage",
    ["truncated", "garbage", "body edited (digest no longer matches)", "forged (digest matches, a state out of range)"],
)
def test_a_damaged_cache_is_rebuilt(tmp_path: Path, reference: dict[str, object], damage: str) -> None:
    probe(tmp_path)
    (saved,) = cache_files(tmp_path)
    text = saved.read_text()
    header, body = text.split("\n", 1)
    if damage == "truncated":
        saved.write_text(text[: len(text) // 2])
    elif damage == "garbage":
        saved.write_bytes(os.urandom(4096))
    elif damage.startswith("body edited"):
        saved.write_text(header + "\n" + body.replace("1", "2", 1))
    else:
        tables = json.loads(body)
        first_row = tables["goto"][0]
        first_row[next(iter(first_row))] = 10**6
        forged = json.dumps(tables)
        digest = hashlib.sha256(forged.encode()).hexdigest()
        saved.write_text(json.dumps({**json.loads(header), "sha256": digest}) + "\n" + forged)
    rebuilt = probe(tmp_path)
    assert rebuilt["source"] == "built"
    assert rebuilt["trees"] == reference["trees"]
    assert rebuilt["verdicts"] == reference["verdicts"]
    assert probe(tmp_path)["source"] == "cache"  # the rebuild replaced the damaged file


def test_an_unwritable_cache_costs_only_the_rebuild(tmp_path: Path, reference: dict[str, object]) -> None:
    (tmp_path / "toolsmith").write_text("a file where the cache directory would go\n")
    for _ in range(2):
        result = probe(tmp_path)
        assert result["source"] == "built"
        assert result["trees"] == reference["trees"]


def test_a_file_from_another_format_is_ignored(tmp_path: Path, reference: dict[str, object]) -> None:
    probe(tmp_path)
    (saved,) = cache_files(tmp_path)
    header, body = saved.read_text().split("\n", 1)
    saved.write_text(json.dumps({**json.loads(header), "format": -1}) + "\n" + body)
    assert probe(tmp_path)["source"] == "built"
