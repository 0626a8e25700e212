"""The bash sandbox: what the denylist cannot stop, the kernel does.

Every bypass below first runs without the sandbox to prove it really reaches a loopback
server (the denylist misses it), then inside the sandbox, where it must not.
"""

from __future__ import annotations

import asyncio
import base64
import os
import shutil
import socket
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.session import Session
from agent_toolsmith.shell import sandbox


class Listener:
    """A loopback TCP server that counts connections (and answers HTTP minimally)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.settimeout(1)
            try:
                conn.recv(1024)
                conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
            except OSError:
                pass
            conn.close()

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


def bypasses(port: int) -> list[str]:
    url = f"http://127.0.0.1:{port}/"
    tcp = f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo REACHED"
    encoded = base64.b64encode(tcp.encode()).decode()
    out = [
        f"bash -c '{tcp}'",
        f"echo {encoded} | base64 -d | bash",
        f"bash <<'EOF'\n{tcp}\nEOF",
        # python3 from PATH, not this run's interpreter: that may live under /tmp, hidden in the sandbox.
        f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port})); print('REACHED')\"",
        f"perl -MIO::Socket::INET -e 'IO::Socket::INET->new(\"127.0.0.1:{port}\") and print \"REACHED\\n\"'",
    ]
    curl = shutil.which("curl")
    if curl:
        out += [
            f"$(echo curl) -s {url} && echo REACHED",
            f"X=cur; ${{X}}l -s {url} && echo REACHED",
            f"cp {curl} ./c && ./c -s {url} && echo REACHED",  # a copied binary has another name
        ]
    return out


def run_all(workspace: Path, commands: list[str], config: Config) -> list[str]:
    async def main() -> list[str]:
        session = Session(workspace, config=config)
        return [(await session.run("bash", {"command": c, "timeout": 20_000})).content for c in commands]

    return asyncio.run(main())


def test_bypasses_reach_loopback_without_the_sandbox_and_not_with_it(
    bwrap: str, workspace: Path, listener: Listener
) -> None:
    commands = bypasses(listener.port)
    plain = run_all(workspace, commands, Config(lsp_enabled=False))
    assert all("REACHED" in out for out in plain), plain  # every one of them slips past the denylist
    reached_plain = listener.connections
    assert reached_plain >= len(commands)
    boxed = run_all(workspace, commands, Config(lsp_enabled=False, bash_sandbox=True))
    assert not any("REACHED" in out for out in boxed), boxed
    assert listener.connections == reached_plain  # not one more connection


def test_the_sandbox_confines_writes_to_the_workspace(bwrap: str, workspace: Path, tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True, timeout=30)
    outside = tmp_path / "outside"
    outside.mkdir()
    home_file = Path.home() / f".toolsmith-sandbox-{uuid.uuid4().hex}"
    config = Config(lsp_enabled=False, bash_sandbox=True)
    outputs = run_all(
        workspace,
        [
            f"echo x > {outside}/escaped.txt",
            f"echo x > {home_file}",
            "echo x > .git/hooks/pre-commit",
            "echo '[core]' >> .git/config",
            "mkdir -p .toolsmith && echo x > .toolsmith/config.toml",
            "echo inside > inside.txt && mkdir -p sub && cd sub && export MARK=kept",
            "pwd; echo $MARK; echo tmp > /tmp/private && cat /tmp/private",
        ],
        config,
    )
    assert not (outside / "escaped.txt").exists() and not home_file.exists()
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    assert "[core]\n[core]" not in (workspace / ".git" / "config").read_text()
    assert not (workspace / ".toolsmith" / "config.toml").exists()
    assert (workspace / "inside.txt").read_text() == "inside\n"
    assert outputs[-1].splitlines() == [str(workspace / "sub"), "kept", "tmp"]  # cwd/env persist; /tmp private
    assert os.listdir(workspace / ".toolsmith") == []


def test_banned_commands_become_advice_in_the_sandbox(bwrap: str, workspace: Path) -> None:
    from agent_toolsmith.permission import Decision, PermissionRequest

    asked: list[PermissionRequest] = []

    async def ask(request: PermissionRequest) -> Decision:
        asked.append(request)
        return Decision.ALLOW_ONCE

    async def main() -> tuple[str, str]:
        plain = Session(workspace, asker=ask, config=Config(lsp_enabled=False))
        boxed = Session(workspace, asker=ask, config=Config(lsp_enabled=False, bash_sandbox=True))
        refused = await plain.run("bash", {"command": "curl --version"})
        allowed = await boxed.run("bash", {"command": "sudo true || echo no-sudo-here"})
        return refused.content, allowed.content

    refused, allowed = asyncio.run(main())
    assert refused.startswith("Command refused: 'curl' is not allowed")
    assert "Command refused" not in allowed
    assert any("(note: 'sudo' is not allowed outside the sandbox)" in r.description for r in asked)


def test_an_unavailable_sandbox_refuses_instead_of_running_unconfined(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox, "find_bwrap", lambda: None)
    outputs = run_all(workspace, ["echo ran > ran.txt"], Config(lsp_enabled=False, bash_sandbox=True))
    assert "bubblewrap (bwrap) is not installed: nothing was run" in outputs[0]
    assert not (workspace / "ran.txt").exists()
