"""Which files import a changed file (Python, TS/JS, Go): the patterns run through real rg."""

from __future__ import annotations

import subprocess
from pathlib import Path

from agent_toolsmith.lsp.importers import go_import_path, importer_pattern
from agent_toolsmith.ripgrep import find_rg


def _rg(workspace: Path, changed: Path) -> set[str]:
    found = importer_pattern(changed, workspace)
    assert found is not None
    pattern, include = found
    rg = find_rg(None)
    assert rg is not None, "rg is required (the dev extra's ripgrep wheel provides it)"
    done = subprocess.run([rg, "-l", "-e", pattern, "--glob", include, str(workspace)],
                          capture_output=True, text=True, timeout=30)  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    return {Path(line).relative_to(workspace).as_posix() for line in done.stdout.splitlines()}


def test_typescript_importers(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "shapes.ts").write_text("export const area = 1;\n")
    (tmp_path / "src" / "a.ts").write_text("import { area } from './shapes';\n")
    (tmp_path / "src" / "b.tsx").write_text('import * as s from "../src/shapes.js"\n')
    (tmp_path / "src" / "c.js").write_text("const s = require('./shapes')\n")
    (tmp_path / "src" / "d.ts").write_text("import { x } from './shapes-extra';\nconst shapes = 1;\n")
    assert _rg(tmp_path, tmp_path / "src" / "shapes.ts") == {"src/a.ts", "src/b.tsx", "src/c.js"}


def test_go_importers_by_package_path(tmp_path: Path) -> None:
    (tmp_path / "go.mod").write_text("module example.com/demo\n\ngo 1.21\n")
    (tmp_path / "geo").mkdir()
    (tmp_path / "geo" / "geo.go").write_text("package geo\n")
    (tmp_path / "main.go").write_text('package main\n\nimport (\n\t"fmt"\n\t"example.com/demo/geo"\n)\n')
    (tmp_path / "one.go").write_text('package main\n\nimport g "example.com/demo/geo"\n')
    (tmp_path / "other.go").write_text('package main\n\nimport "example.com/demo/geology"\n')
    assert go_import_path(tmp_path / "geo", tmp_path) == "example.com/demo/geo"
    assert _rg(tmp_path, tmp_path / "geo" / "geo.go") == {"main.go", "one.go"}


def test_python_importers(tmp_path: Path) -> None:
    (tmp_path / "shapes.py").write_text("def area(): ...\n")
    (tmp_path / "a.py").write_text("from shapes import area\n")
    (tmp_path / "b.py").write_text("import shapes\n")
    (tmp_path / "c.py").write_text("import shapeshifter\n")
    assert _rg(tmp_path, tmp_path / "shapes.py") == {"a.py", "b.py"}
