"""The container recipe (Containerfile): its command, as written, serves MCP with the token from
the secret's file and answers its health check. No container runtime runs here (nor a registry
for the base image), so the image itself is checked by hand (docs/mcp.md, "Scaling"); this runs
the recipe's ENTRYPOINT and HEALTHCHECK commands on this machine."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import httpx

from tests.reliability.test_mcp_transport import INITIALIZE, TOKEN_A, WAIT_S, _env

ROOT = Path(__file__).resolve().parents[1]
RECIPE = (ROOT / "Containerfile").read_text()
SECRET = "/run/secrets/toolsmith_mcp_token"


def _instruction(name: str) -> str:
    """The text of the recipe's ``name`` instruction, continuation lines joined."""
    joined = RECIPE.replace("\\\n", " ")
    found = re.search(rf"^{name} (.+)$", joined, re.MULTILINE)
    assert found, name
    return found.group(1)


def test_the_recipe_serves_with_the_secret_token_and_answers_its_health_check(workspace: Path, tmp_path: Path) -> None:
    entrypoint = json.loads(_instruction("ENTRYPOINT"))
    assert entrypoint[:2] == ["toolsmith-mcp", "--http"] and "--allow-remote" in entrypoint
    token_file = tmp_path / "secret"
    token_file.write_text(TOKEN_A + "\n")
    argv = [str(token_file) if a == SECRET else str(workspace) if a == "/workspace" else "0" if a == "8765" else a
            for a in entrypoint[1:]]  # fmt: skip
    server = subprocess.Popen([sys.executable, "-m", "cmd.mcp", *argv], cwd=ROOT, env=_env(tmp_path),
                              stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert server.stderr is not None
        found = re.search(r"http://0\.0\.0\.0:(\d+)/mcp", server.stderr.readline())
        assert found, "the recipe's command did not start serving"
        port = found.group(1)
        check = _instruction("HEALTHCHECK").split(" CMD ", 1)[1].replace("8765", port)
        probe = subprocess.run(["sh", "-c", check.replace("python ", f"{sys.executable} ", 1)], timeout=WAIT_S)
        assert probe.returncode == 0, "the health check failed"
        url = f"http://127.0.0.1:{port}/mcp"
        headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        with httpx.Client(timeout=WAIT_S) as client:
            assert client.post(url, json=INITIALIZE, headers=headers).status_code == 401
            served = client.post(url, json=INITIALIZE, headers={**headers, "authorization": f"Bearer {TOKEN_A}"})
        assert served.status_code == 200 and served.headers.get("mcp-session-id")
    finally:
        server.terminate()
        server.wait(WAIT_S)
