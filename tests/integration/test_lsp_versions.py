"""Diagnostics that mean this version, against the marker server playing basedpyright's ways: pull
diagnostics registered only dynamically, a stale first push for a new version, refresh requests
that must be answered, and a question that outlives the call that asked it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_toolsmith.config import Config
from agent_toolsmith.lsp.client import LspClient
from agent_toolsmith.lsp.manager import WAIT_CAP_S, LspManager

from tests.integration.test_lsp import Driver
from tests.integration.test_lsp_robust import marker


def _client(d: Driver) -> LspClient:
    manager = d.session.ctx.lsp
    assert isinstance(manager, LspManager)
    (client,) = manager.clients.values()
    return client


@pytest.fixture
def pyrightish(workspace: Path) -> Iterator[Driver]:
    d = Driver(workspace, Config(lsp_servers={"marker": marker(PULL_DYNAMIC="1", STALE_PUSH="1")}))
    yield d
    d.close()


def test_a_stale_push_for_the_new_version_is_never_taken_for_this_version(pyrightish: Driver) -> None:
    d = pyrightish
    (d.workspace / "a.mark").write_text("ERROR: old trouble\n")
    d.run("view", {"file_path": "a.mark"})
    # The server's first publish for the new version repeats "old trouble"; its pull answer is
    # for the text just sent.
    broken = d.run("edit", {"file_path": "a.mark", "old_string": "old trouble", "new_string": "new trouble"})
    assert "Error: a.mark:1:1 [marker][M1] new trouble" in broken.content and "old trouble" not in broken.content
    fixed = d.run("edit", {"file_path": "a.mark", "old_string": "ERROR: new trouble", "new_string": "fine"})
    # The fix never shows the fixed error.
    assert "trouble" not in fixed.content and "unconfirmed" not in fixed.content, fixed.content
    client = _client(d)
    assert client.pull_registrations == {"marker-pull"}  # registered after initialized
    assert client.alive  # its workspace/diagnostic/refresh requests were answered


def test_a_server_that_cannot_be_asked_is_listened_to(workspace: Path) -> None:
    d = Driver(workspace, Config(lsp_servers={"marker": marker()}))
    try:
        (workspace / "b.mark").write_text("one\n")
        d.run("view", {"file_path": "b.mark"})
        r = d.run("edit", {"file_path": "b.mark", "old_string": "one", "new_string": "ERROR: pushed"})
        assert "Error: b.mark:1:1 [marker][M1] pushed" in r.content
        assert _client(d).pull_refused  # it answered "method not found" once: never asked again
    finally:
        d.close()


def test_a_question_that_runs_out_keeps_running_and_its_answer_comes_later(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_toolsmith.lsp.documents import ServerDocuments

    asked: list[str] = []
    fetch = ServerDocuments._fetch

    async def counted(self: ServerDocuments, uri: str, state: int) -> object:
        asked.append(uri)
        return await fetch(self, uri, state)

    monkeypatch.setattr(ServerDocuments, "_fetch", counted)
    d = Driver(workspace, Config(lsp_servers={"marker": marker(PULL="1")}))
    try:
        (workspace / "c.mark").write_text("fine\n")
        d.run("view", {"file_path": "c.mark"})
        slow = "DELAY_MS 6000\nERROR: slow answer"
        edited = d.run("edit", {"file_path": "c.mark", "old_string": "fine", "new_string": slow})
        assert f"unconfirmed: marker is still analysing c.mark after {WAIT_CAP_S:.0f} s" in edited.content
        before = len(asked)
        answer = d.run("lsp", {"file_path": "c.mark"})  # the same question, still running
        assert "Diagnostics that arrived since your last edit of this file:" in answer.content, answer.content
        assert "Error: c.mark:2:1 [marker][M1] slow answer" in answer.content
        assert len(asked) == before  # not asked again: the edit's question answered it
    finally:
        d.close()
