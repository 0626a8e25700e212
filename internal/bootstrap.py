"""Starting a Python process that runs this very package's code, installed or not.

Installed, the package is ``agent_toolsmith``; from a checkout it is ``internal/`` loaded under
that name (cmd/source_tree.py). A child started with ``python -m`` would find neither the same
way, so :func:`entry_argv` hands it the package's directory: the child loads it as
``agent_toolsmith`` and exits with what ``module.function(*args)`` returns.
"""

from __future__ import annotations

import sys
from pathlib import Path

_ENTRY = """\
import importlib, importlib.util, sys
package, module, function, *args = sys.argv[1:]
spec = importlib.util.spec_from_file_location(
    "agent_toolsmith", package + "/__init__.py", submodule_search_locations=[package]
)
sys.modules["agent_toolsmith"] = loaded = importlib.util.module_from_spec(spec)
spec.loader.exec_module(loaded)
sys.exit(getattr(importlib.import_module("agent_toolsmith." + module), function)(*args))
"""


def entry_argv(module: str, function: str, *args: str) -> list[str]:
    """The command that runs ``agent_toolsmith.<module>.<function>(*args)`` in a new interpreter
    (this one's), with this package's code; its exit status is what the function returns."""
    return [sys.executable, "-c", _ENTRY, str(Path(__file__).resolve().parent), module, function, *args]
