"""MCP over HTTP under abuse, against a real server process and real sockets: sessions that are
opened and abandoned count and expire, half-sent requests are closed on time, a flood of idle
connections does not keep a client out, and the workers behind the front come back when one dies
and go when the front goes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import time
from pathlib import Path

import httpx
from agent_toolsmith.mcp_server.http_limits import (
    BODY_READ_TIMEOUT_S,
    HEADER_READ_TIMEOUT_S,
    MAX_PENDING_CONNECTIONS,
)

from tests.reliability.test_mcp_transport import INITIALIZE, TOKEN_A, WAIT_S, Server, _env

#: Half-sent requests are all closed within this long (the issue's bound): the head deadline,
#: or the body deadline after a complete head, plus scheduling slack.
HALF_SENT_CLOSED_S = 30.0
assert HEADER_READ_TIMEOUT_S < HALF_SENT_CLOSED_S and BODY_READ_TIMEOUT_S < HALF_SENT_CLOSED_S


def initialize(server: Server) -> httpx.Response:
    return server.post(INITIALIZE)


def test_abandoned_sessions_count_against_the_limit_and_expire(
    workspace: Path, tmp_path: Path, servers: list[Server]
) -> None:
    server = Server(workspace, tmp_path, "--max-sessions", "3", "--session-idle", "2")
    servers.append(server)
    opened = [initialize(server) for _ in range(3)]
    assert all(r.status_code == 200 for r in opened), [r.text for r in opened]
    ids = [r.headers["mcp-session-id"] for r in opened]
    refused = initialize(server)  # three initialized sessions, no call among them: the limit holds
    assert refused.status_code == 503
    assert "--max-sessions 3" in refused.json()["error"]["message"]
    deadline = time.monotonic() + WAIT_S
    reopened = 0
    while reopened < 3:  # the idle ones close after ~2 s, freeing their slots (a ping would keep them)
        answer = initialize(server)
        if answer.status_code == 200:
            reopened += 1
            continue
        assert answer.status_code == 503, answer.text
        assert time.monotonic() < deadline, "abandoned sessions were never closed"
        time.sleep(0.2)
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    gone = [server.post(ping, **{"mcp-session-id": i, "mcp-protocol-version": "2025-11-25"}) for i in ids]
    assert [r.status_code for r in gone] == [404, 404, 404]


def _half_sent(port: int, complete_head: bool) -> socket.socket:
    sock = socket.create_connection(("127.0.0.2", port), timeout=WAIT_S)
    body = json.dumps(INITIALIZE).encode()
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.2:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\n"
    ).encode()
    sock.sendall(head + b"\r\n" + body[:10] if complete_head else head)
    return sock


def _closed_by_server(sock: socket.socket, deadline: float) -> bool:
    """Whether the server closed ``sock`` before ``deadline`` (reading whatever it answered)."""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        sock.settimeout(remaining)
        try:
            if not sock.recv(65536):
                return True
        except TimeoutError:
            return False
        except ConnectionResetError:
            return True


def test_half_sent_requests_are_closed_and_others_are_served_meanwhile(
    workspace: Path, tmp_path: Path, servers: list[Server]
) -> None:
    server = Server(workspace, tmp_path)
    servers.append(server)
    started = time.monotonic()
    # 100 that stop in the middle of their heads, 100 that stop in the middle of their bodies.
    held = [_half_sent(server.port, complete_head=i % 2 == 1) for i in range(200)]
    try:
        served = initialize(server)
        assert served.status_code == 200, served.text
        deadline = started + HALF_SENT_CLOSED_S
        still_open = [i for i, sock in enumerate(held) if not _closed_by_server(sock, deadline)]
        assert not still_open, f"{len(still_open)} half-sent requests still open after {HALF_SENT_CLOSED_S:.0f} s"
    finally:
        for sock in held:
            sock.close()


def test_a_kept_connection_whose_next_head_stalls_is_closed(
    workspace: Path, tmp_path: Path, servers: list[Server]
) -> None:
    """After a first request the worker serves the connection (keep-alive), beyond the front: a
    second head that stops halfway is closed on the same deadline."""
    server = Server(workspace, tmp_path)
    servers.append(server)
    sock = socket.create_connection(("127.0.0.2", server.port), timeout=WAIT_S)
    with sock:
        first = f"DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.2:{server.port}\r\nMcp-Session-Id: 0-unknown\r\n\r\n"
        sock.sendall(first.encode())
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += sock.recv(65536)
        assert answer.startswith(b"HTTP/1.1 404")
        started = time.monotonic()
        sock.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.2:{server.port}\r\n".encode())
        assert _closed_by_server(sock, started + HALF_SENT_CLOSED_S)


def test_a_flood_of_silent_connections_does_not_keep_a_client_out(
    workspace: Path, tmp_path: Path, servers: list[Server]
) -> None:
    server = Server(workspace, tmp_path)
    servers.append(server)
    count = MAX_PENDING_CONNECTIONS + 50
    silent = [socket.create_connection(("127.0.0.2", server.port), timeout=WAIT_S) for _ in range(count)]
    try:
        started = time.monotonic()
        served = initialize(server)  # the front closes the longest-waiting silent connections for it
        assert served.status_code == 200, served.text
        assert time.monotonic() - started < HEADER_READ_TIMEOUT_S, "the client waited for the flood to time out"
        first = silent[0]
        assert _closed_by_server(first, time.monotonic() + WAIT_S)
    finally:
        for sock in silent:
            sock.close()


def test_healthz_answers_without_token_or_host_and_the_rest_requires_the_token_before_the_body(
    workspace: Path, tmp_path: Path, servers: list[Server]
) -> None:
    server = Server(workspace, tmp_path, env=_env(tmp_path, TOOLSMITH_MCP_TOKEN=TOKEN_A))
    servers.append(server)
    with httpx.Client(timeout=WAIT_S) as client:
        health = client.get(f"http://127.0.0.2:{server.port}/healthz", headers={"host": "10.1.2.3:8765"})
    assert health.status_code == 200 and health.json()["status"] == "ok"
    assert initialize(server).status_code == 401
    # Without the token, not even a body is waited for: the refusal comes at once.
    started = time.monotonic()
    sock = _half_sent(server.port, complete_head=True)
    with sock:
        sock.settimeout(WAIT_S)
        assert sock.recv(65536).startswith(b"HTTP/1.1 401")
    assert time.monotonic() - started < BODY_READ_TIMEOUT_S


def _workers_of(pid: int) -> list[int]:
    """The worker processes of the server ``pid`` (its children running the worker bootstrap)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                is_worker = b"\0worker_main\0" in cmdline.read()
        except (OSError, ValueError, IndexError):
            continue
        if parent == pid and is_worker:
            found.append(int(entry))
    return found


def _wait(condition: object, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.05)


def test_a_worker_that_dies_is_replaced_and_workers_die_with_the_front(
    workspace: Path, tmp_path: Path, servers: list[Server]
) -> None:
    server = Server(workspace, tmp_path, "--workers", "2")
    servers.append(server)
    _wait(lambda: len(_workers_of(server.process.pid)) == 2, "two workers run")
    victim = _workers_of(server.process.pid)[0]
    os.kill(victim, signal.SIGKILL)
    _wait(lambda: len(_workers_of(server.process.pid)) == 2 and victim not in _workers_of(server.process.pid),
          "the dead worker is replaced")  # fmt: skip
    _wait(lambda: initialize(server).status_code == 200, "the server serves again")
    workers = _workers_of(server.process.pid)
    server.process.kill()  # no chance to stop its workers: they must notice by themselves
    server.process.wait(WAIT_S)
    _wait(lambda: not any(_running(pid) for pid in workers), "the workers are gone")


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not; one that is ours is reaped here)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    if state == "Z":
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        return False
    return True
