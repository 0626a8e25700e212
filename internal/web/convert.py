"""Converting a page within the fetch's time budget: a timeout or a cancel stops the work.

A small page converts in a worker thread that checks for a stop between elements (the HTML
parse of a page this size is one short step). A large page converts in a child process, because
BeautifulSoup's parse of a pathological megabyte runs for many seconds in one call that nothing
can interrupt: the child is killed the moment the caller stops waiting, so neither the tool call,
the session's next call, nor the CLI process at exit waits for it.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

from ..cancel import CancelToken, in_thread, race_cancel
from ..errors import ToolError
from ..proc import spawn
from ..state import StateDir
from . import html as html_module

#: Pages up to this many characters of HTML convert in a thread; larger ones in a child process.
IN_THREAD_MAX_CHARS = 100_000


async def convert_page(html: str, fmt: str, base_url: str, state: StateDir, token: CancelToken) -> tuple[str, str]:
    """``html`` as ``fmt`` ("text" or "markdown") and a note, stoppable at any moment."""
    if len(html) <= IN_THREAD_MAX_CHARS:
        return await in_thread(lambda check: html_module.convert(html, fmt, base_url, check), token)
    return await race_cancel(_convert_in_child(html, fmt, base_url, state), token)


async def _convert_in_child(html: str, fmt: str, base_url: str, state: StateDir) -> tuple[str, str]:
    handle, source = tempfile.mkstemp(prefix="page-", suffix=".html", dir=state.directory("convert"))
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(html)
        # -P: the script's own directory (web/, with our html.py) must not shadow the stdlib html.
        child = await spawn([sys.executable, "-P", html_module.__file__, fmt, base_url, source])
        try:
            output, errors = await asyncio.gather(child.stdout.read(), _read_all(child.stderr))
            status = await child.wait()
        finally:
            await child.stop(grace_s=0)  # at once: on a timeout or cancel, and a no-op after the exit
    finally:
        Path(source).unlink(missing_ok=True)
    if status != 0:
        detail = errors.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit status {status}"]
        raise ToolError(f"Converting the page failed: {detail[0]}", code="conversion_failed")
    result = json.loads(output)
    return str(result["text"]), str(result["note"])


async def _read_all(stream: asyncio.StreamReader | None) -> bytes:
    return await stream.read() if stream is not None else b""
