"""The library's loggers (internal/logs.py): logging is imported when something logs, and the
settings given before that (the package's NullHandler, the CLI's log file) are in place by then.
Fresh processes, since this test process has logging loaded already."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from agent_toolsmith.logs import logger


def run_python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})  # fmt: skip


def test_a_record_made_after_a_deferred_log_file_setting_goes_to_that_file(tmp_path: Path) -> None:
    log_file = tmp_path / "toolsmith.log"
    proc = run_python(
        """
import sys
from pathlib import Path
from agent_toolsmith.state import log_to_file
from agent_toolsmith.logs import logger

log_to_file(Path(sys.argv[1]), ("toolsmith",))
print("loaded before the record:", "logging" in sys.modules)
logger("toolsmith.probe").warning("the answer is %s", 42)
""",
        str(log_file),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "loaded before the record: False\n"
    assert proc.stderr == ""  # not Python's last-resort handler
    assert log_file.stat().st_mode & 0o777 == 0o600
    assert log_file.read_text().rstrip().endswith("WARNING toolsmith.probe the answer is 42")


def test_a_record_in_a_process_that_configured_no_logging_is_not_printed() -> None:
    """The package's NullHandler, set when the first record is made: nothing reaches stderr."""
    proc = run_python(
        """
import sys
import agent_toolsmith
from agent_toolsmith.logs import logger

print("loaded by the package:", "logging" in sys.modules)
try:
    raise RuntimeError("boom")
except RuntimeError:
    logger("toolsmith").exception("it failed")
"""
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "loaded by the package: False\n"
    assert proc.stderr == ""


def test_settings_given_after_logging_is_loaded_apply_at_once(tmp_path: Path) -> None:
    """An application (or a library) loaded logging first: its own loggers' records, which do not
    go through ours, are routed from the moment the setting is given."""
    log_file = tmp_path / "mcp.log"
    proc = run_python(
        """
import logging, sys
from pathlib import Path
from agent_toolsmith.state import log_to_file

log_to_file(Path(sys.argv[1]), ("toolsmith", "mcp"))
logging.getLogger("mcp.server").warning("from the SDK")
""",
        str(log_file),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert "WARNING mcp.server from the SDK" in log_file.read_text()


def test_a_record_names_the_caller_as_its_source(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("INFO", logger="toolsmith"):
        logger("toolsmith.probe").info("hello %s", "there")
    [record] = caplog.records
    assert (record.name, record.getMessage()) == ("toolsmith.probe", "hello there")
    assert (record.filename, record.funcName) == ("test_logs.py", "test_a_record_names_the_caller_as_its_source")
