"""What `pip install .` gives a user: one package `agent_toolsmith` (distribution `agent-toolsmith`), usable
beside their own `internal`/`cmd`; the commands keep the name `toolsmith`."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheels")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (built,) = out.glob("agent_toolsmith-*.whl")
    return built


@pytest.fixture(scope="module")
def sdist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The source distribution, built offline with the installed setuptools (as pip's
    --no-build-isolation does for the wheel)."""
    out = tmp_path_factory.mktemp("sdists")
    subprocess.run(
        [sys.executable, "-c", f"from setuptools import build_meta; build_meta.build_sdist({str(out)!r})"],
        cwd=ROOT, check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    (built,) = out.glob("agent_toolsmith-*.tar.gz")
    return built


def test_the_sdist_carries_the_docs_the_readme_links_and_the_license(sdist: Path) -> None:
    import re
    import tarfile

    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
        info = archive.extractfile(next(n for n in archive.getnames() if n.endswith("/PKG-INFO")))
        assert info is not None
        metadata = info.read().decode()
    docs = {f"docs/{page.name}" for page in (ROOT / "docs").glob("*.md")}
    linked = set(re.findall(r"\]\((docs/[\w.-]+\.md)", (ROOT / "README.md").read_text()))
    assert docs and linked <= docs <= names, sorted(docs - names)
    assert {"LICENSE", "README.md", "pyproject.toml", "internal/__init__.py"} <= names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert "License-Expression: MIT" in metadata and "License-File: LICENSE" in metadata
    assert "Project-URL: " not in metadata  # none invented: the project has no public home yet (pyproject.toml)


def test_wheel_holds_only_the_agent_toolsmith_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names}
    assert {t for t in top if not t.endswith(".dist-info")} == {"agent_toolsmith"}
    packaged = {os.path.dirname(n) for n in names if n.endswith("/__init__.py")}
    source = set()
    for init in (ROOT / "internal").rglob("__init__.py"):
        relative = init.parent.relative_to(ROOT / "internal").as_posix()
        source.add("agent_toolsmith" if relative == "." else f"agent_toolsmith/{relative}")
    assert packaged == source, "pyproject's package list is out of date"
    assert "agent_toolsmith/py.typed" in names and "agent_toolsmith/__main__.py" in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "toolsmith = agent_toolsmith.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: MIT" in metadata and "License-File: LICENSE" in metadata
    license_file = next(n for n in names if n.endswith(".dist-info/licenses/LICENSE"))
    assert zipfile.ZipFile(wheel).read(license_file) == (ROOT / "LICENSE").read_bytes()


def test_fresh_venv_install_works_beside_a_users_own_internal_and_cmd(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    # Dependencies from the test environment (the install itself is the wheel's, not editable).
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    Path(site, "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")

    project = tmp_path / "user-project"
    for package in ("internal", "cmd"):
        (project / package).mkdir(parents=True)
        (project / package / "__init__.py").write_text(f"WHO = 'the user {package}'\n")
    (project / "notes.txt").write_text("hello\n")
    script = (
        "import asyncio, internal, cmd, agent_toolsmith\n"
        "from agent_toolsmith import Session, CancelToken, Config\n"
        "assert internal.WHO == 'the user internal' and cmd.WHO == 'the user cmd'\n"
        "assert 'site-packages' in agent_toolsmith.__file__, agent_toolsmith.__file__\n"
        "r = asyncio.run(Session('.', config=Config(lsp_enabled=False)).run('view', {'file_path': 'notes.txt'}))\n"
        "print(r.content)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    used = subprocess.run([str(python), "-c", script], cwd=project, capture_output=True, text=True, timeout=60, env=env)
    assert used.returncode == 0 and "     1|hello" in used.stdout, used.stderr
    listed = subprocess.run([str(python), "-m", "agent_toolsmith", "--list"], cwd=project, capture_output=True,
                            text=True, timeout=60, env=env)  # fmt: skip
    assert listed.returncode == 0 and listed.stdout.startswith("bash ")
    script_run = subprocess.run([str(venv / "bin" / "toolsmith"), "view", '{"file_path": "notes.txt"}'], cwd=project,
                                capture_output=True, text=True, timeout=60, env=env)  # fmt: skip
    assert script_run.returncode == 0 and "     1|hello" in script_run.stdout, script_run.stderr


def test_checkout_without_dependencies_says_install_first(tmp_path: Path) -> None:
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    proc = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "cmd.tools", "view", '{"file_path": "README.md"}'],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "lacks the project's dependencies" in proc.stderr and "Install the project first" in proc.stderr
    assert "Traceback" not in proc.stderr
