"""Config files: layering, validation that names file, key and type, and every front door reading them."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from agent_toolsmith.config import Config, ConfigError
from agent_toolsmith.config_file import CONFIG_KEYS
from agent_toolsmith.lsp.servers import configured_servers
from agent_toolsmith.session import Session

from tests.test_cli import cli


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "xdg-config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return home


def test_every_key_maps_to_a_config_field() -> None:
    fields = set(Config.__dataclass_fields__)
    assert {key.field for key in CONFIG_KEYS.values()} <= fields


def test_layers_user_then_workspace_then_explicit(workspace: Path, tmp_path: Path, _no_user_config: Path) -> None:
    write(_no_user_config / "toolsmith" / "config.toml", "max_output_lines = 10\nuser_agent = 'from-user'\n")
    write(workspace / ".toolsmith" / "config.toml", "max_output_lines = 20\n")
    explicit = write(tmp_path / "extra.toml", "allowed_dirs = ['../shared']\n[lsp]\nenabled = false\n")
    config = Config.load(workspace, file=explicit)
    assert config.max_output_lines == 20 and config.user_agent == "from-user"
    assert config.allowed_dirs == [workspace / "../shared"]  # relative to the workspace, not the process cwd
    assert config.lsp_enabled is False
    assert Config.load(workspace, user=False).user_agent != "from-user"
    assert Config.load(workspace, max_output_lines=5).max_output_lines == 5  # keyword overrides win


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("max_output_line = 3\n", "unknown key 'max_output_line'. Did you mean 'max_output_lines'?"),
        ("max_output_lines = '3'\n", "'max_output_lines' must be an integer >= 1, got a string."),
        ("max_output_lines = 0\n", "'max_output_lines' must be an integer >= 1, got 0."),
        ("confine_writes = 1\n", "'confine_writes' must be true or false, got the number 1."),
        ("allowed_dirs = 'x'\n", "'allowed_dirs' must be a list of strings, got a string."),
        ("[lsp]\nenabeld = true\n", "unknown key 'lsp.enabeld'. Did you mean 'lsp.enabled'?"),
        ("lsp = 3\n", "'lsp' must be a table, got the number 3."),
        ("[lsp.servers.mine]\ncommand = ['x']\n", "'lsp.servers.mine' is not a built-in server"),
        ("[lsp.servers.pylsp]\ncommand = 'pylsp'\n", "'lsp.servers.pylsp.command' must be a list of strings, got a"),
        ("[lsp.servers.pylsp]\nsetting = {}\n", "'lsp.servers.pylsp.setting'. Did you mean '"),
        ("[lsp.servers.pylsp]\ncommand = []\n", "'lsp.servers.pylsp.command' must not be empty."),
        ("x = [\n", "invalid TOML"),
    ],
)
def test_invalid_files_name_the_file_the_key_and_the_expected_type(workspace: Path, text: str, message: str) -> None:
    path = write(workspace / ".toolsmith" / "config.toml", text)
    with pytest.raises(ConfigError) as caught:
        Config.load(workspace)
    assert str(caught.value).startswith(f"{path}: ") and message in str(caught.value)


def test_programmatic_servers_are_validated_too() -> None:
    with pytest.raises(ConfigError, match=r"'lsp\.servers\.mine' is not a built-in server"):
        Config(lsp_servers={"mine": {"extensions": [".x"]}})
    with pytest.raises(ConfigError, match="must be a list of strings"):
        Config(lsp_servers={"pylsp": {"extensions": ".py"}})


def test_settings_only_entry_merges_into_the_default(workspace: Path, tmp_path: Path) -> None:
    write(
        workspace / ".toolsmith" / "config.toml",
        '[lsp.servers.basedpyright]\nsettings = { "basedpyright.analysis" = { typeCheckingMode = "strict" } }\n'
        "[lsp.servers.pylsp]\ndisabled = true\n",
    )
    # A server's command runs a program: only the user's own config names one (not the workspace's).
    mine = write(tmp_path / "mine.toml", "[lsp.servers.marker]\ncommand = ['marker-lsp']\nextensions = ['mark']\n"
                                         "root_markers = ['m.toml']\n")  # fmt: skip
    config = Config.load(workspace, file=mine)
    servers = {s.name: s for s in configured_servers(config.lsp_servers)}
    based = servers["basedpyright"]
    assert based.command == ("basedpyright-langserver", "--stdio") and ".py" in based.extensions
    assert based.settings == {"basedpyright.analysis": {"typeCheckingMode": "strict"}}
    assert "pylsp" not in servers
    assert servers["marker"].extensions == (".mark",) and servers["marker"].root_markers == ("m.toml",)
    assert next(iter(servers)) == "marker"  # user-defined servers come first


def test_cli_reads_the_workspace_file_and_config_flag(workspace: Path, tmp_path: Path) -> None:
    (workspace / "f.txt").write_text("".join(f"{i}\n" for i in range(50)))
    write(workspace / ".toolsmith" / "config.toml", "max_output_lines = 10\n")
    viewed = json.loads(cli("--cwd", str(workspace), "--json", "view", '{"file_path": "f.txt"}').stdout)
    assert viewed["metadata"]["lines_shown"] == 10
    extra = write(tmp_path / "x.toml", "max_output_lines = 4\n")
    out = cli("--cwd", str(workspace), "--config", str(extra), "--json", "view", '{"file_path": "f.txt"}').stdout
    viewed = json.loads(out)
    assert viewed["metadata"]["lines_shown"] == 4
    bad = write(tmp_path / "bad.toml", "nope = 1\n")
    proc = cli("--cwd", str(workspace), "--config", str(bad), "view", '{"file_path": "f.txt"}')
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        f"toolsmith: {bad}: unknown key 'nope'. Known keys: " + proc.stderr.split("Known keys: ")[1].strip()
    ]
    missing = cli("--cwd", str(workspace), "--config", str(tmp_path / "none.toml"), "ls", "{}")
    assert missing.returncode == 2 and "config file not found" in missing.stderr


def test_embedding_api_opts_in(workspace: Path) -> None:
    write(workspace / ".toolsmith" / "config.toml", "max_output_lines = 3\n[lsp]\nenabled = false\n")
    (workspace / "f.txt").write_text("a\nb\nc\nd\ne\n")
    plain = Session(workspace)  # the file is read only when asked for
    assert plain.ctx.config.max_output_lines != 3
    session = Session(workspace, config=Config.load(workspace))
    response = asyncio.run(session.run("view", {"file_path": "f.txt"}))
    assert response.metadata["lines_shown"] == 3
    assert session.ctx.lsp is None and plain.ctx.lsp is not None  # [lsp] enabled = false took effect


@pytest.mark.parametrize(
    ("entry", "needs", "not_named"),
    [
        ({"command": ["x"]}, "needs 'extensions' (e.g. [\".ml\"]).", "'command'"),
        ({"extensions": [".x"]}, "needs 'command' (a list of strings).", "'extensions'"),
        ({"language_id": "x"}, "needs 'command' (a list of strings) and 'extensions'", None),
    ],
)
def test_a_new_server_is_told_exactly_which_keys_it_lacks(
    entry: dict[str, object], needs: str, not_named: str | None
) -> None:
    with pytest.raises(ConfigError) as caught:
        Config(lsp_servers={"mine": entry})
    assert needs in str(caught.value)
    if not_named is not None:
        assert not_named not in str(caught.value)


def test_the_lsp_idle_timeout_is_a_config_key(workspace: Path) -> None:
    write(workspace / ".toolsmith" / "config.toml", "[lsp]\nidle_timeout = 30\n")
    assert Config.load(workspace, user=False).lsp_idle_s == 30
    assert Config().lsp_idle_s == 300


def test_max_jobs_is_a_bash_key(tmp_path: Path) -> None:
    from agent_toolsmith.config import DEFAULT_MAX_JOBS, ConfigError

    assert Config().max_jobs == DEFAULT_MAX_JOBS == 16
    (tmp_path / "c.toml").write_text("[bash]\nmax_jobs = 3\n")
    assert Config.load(tmp_path, file=tmp_path / "c.toml", user=False).max_jobs == 3
    (tmp_path / "bad.toml").write_text("[bash]\nmax_jobs = 0\n")
    with pytest.raises(ConfigError, match=re.escape("'bash.max_jobs' must be an integer >= 1")):
        Config.load(tmp_path, file=tmp_path / "bad.toml", user=False)
