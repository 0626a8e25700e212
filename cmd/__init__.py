"""Thin entry points (``python -m cmd.tools``). Library code never imports this package.

Run from the repository root, this package shadows the standard library's ``cmd`` module, which
``pdb`` (and so pytest, debuggers, breakpoint()) needs. To keep those working, it loads the
standard library module from its file and re-exports its public names.
"""

import importlib.util as _util
import os as _os
import sysconfig as _sysconfig

_spec = _util.spec_from_file_location("_stdlib_cmd", _os.path.join(_sysconfig.get_path("stdlib"), "cmd.py"))
if _spec is not None and _spec.loader is not None:
    _stdlib_cmd = _util.module_from_spec(_spec)
    _spec.loader.exec_module(_stdlib_cmd)
    Cmd = _stdlib_cmd.Cmd
    PROMPT = _stdlib_cmd.PROMPT
    IDENTCHARS = _stdlib_cmd.IDENTCHARS

__all__ = ["IDENTCHARS", "PROMPT", "Cmd"]
