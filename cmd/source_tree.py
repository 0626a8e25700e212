"""Run the entry points from a checkout: load ``internal/`` as the package ``agent_toolsmith``.

Installed, the source directory ``internal/`` is the package ``agent_toolsmith`` (pyproject's
``package-dir``). From the repository root, ``python -m cmd.tools`` should run this checkout's
code whether or not (and whichever version) is installed, so the package is loaded from here
under its installed name. Its imports are relative, so the name is all it needs.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "internal"

#: Import names of the runtime dependencies (pyproject.toml), checked so that running the
#: checkout with a Python that lacks them says "install first" instead of failing mid-call.
RUNTIME_MODULES = (
    "bashlex", "bs4", "charset_normalizer", "httpx", "lsprotocol", "markdownify", "pygls", "unidiff", "yaml"
)


def make_importable() -> None:
    if "agent_toolsmith" not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            "agent_toolsmith", SOURCE / "__init__.py", submodule_search_locations=[str(SOURCE)]
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["agent_toolsmith"] = module
        spec.loader.exec_module(module)
    missing = [name for name in RUNTIME_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        sys.stderr.write(
            f"toolsmith: this Python ({sys.executable}) lacks the project's dependencies "
            f"({', '.join(missing)}). Install the project first: `make run` creates .venv with everything "
            "(then use .venv/bin/python -m cmd.tools or .venv/bin/toolsmith), or `pip install .`.\n"
        )
        raise SystemExit(2)
