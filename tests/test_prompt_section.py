"""Session.prompt_section(): the tools section for a host's system prompt."""

from __future__ import annotations

from pathlib import Path

from agent_toolsmith import Config, ToolPolicy, tool
from agent_toolsmith.llm.tools.prompt_section import first_sentence
from agent_toolsmith.session import Session

from tests.tools.test_custom import add_tool, tools_dir


@tool(read_only=True)
def lookup(key: str) -> str:
    """Looks a key up in the team's settings.

    Keys are dotted paths (`ci.timeout`). Ask before guessing one."""
    return key


def test_every_offered_tool_gets_a_line_and_custom_and_function_tools_their_guidance(workspace: Path) -> None:
    add_tool(tools_dir(workspace), "deploy.sh", "echo deployed\n",
             "---\ndescription: Deploys the app to staging. Takes a while.\n---\nPass the service name.\n"
             "Never deploy on Fridays.\n")  # fmt: skip
    session = Session(workspace, config=Config(lsp_enabled=False), tools=[lookup])
    section = session.prompt_section()
    head, *guidance = section.split("\n### ")
    lines = head.splitlines()
    assert lines[:2] == ["## Tools", ""]
    listed = [line.split("`")[1] for line in lines[2:] if line]
    assert listed == [info.name for info in session.tools()] and {"deploy", "lookup", "view", "bash"} <= set(listed)
    assert "- `deploy`: Deploys the app to staging." in lines  # the first sentence only
    assert "- `lookup`: Looks a key up in the team's settings." in lines
    view_line = next(line for line in lines if line.startswith("- `view`: "))
    assert view_line == "- `view`: " + first_sentence(next(i.description for i in session.tools() if i.name == "view"))
    assert guidance == [
        "deploy\n\nPass the service name.\nNever deploy on Fridays.\n",
        "lookup\n\nKeys are dotted paths (`ci.timeout`). Ask before guessing one.\n",
    ]


def test_a_policy_leaves_out_what_the_session_does_not_offer(workspace: Path) -> None:
    add_tool(tools_dir(workspace), "deploy.sh", "echo deployed\n", "---\ndescription: Deploys.\n---\nGuidance.\n")
    session = Session(workspace, config=Config(lsp_enabled=False), tools=[lookup],
                      tool_policy=ToolPolicy(read_only=True))  # fmt: skip
    section = session.prompt_section()
    assert "`view`" in section and "`lookup`" in section and "### lookup" in section
    assert "`bash`" not in section and "`deploy`" not in section and "### deploy" not in section
    only_view = session.prompt_section(ToolPolicy(allow=["view"]))
    assert [line for line in only_view.splitlines() if line.startswith("- ")] == [
        line for line in section.splitlines() if line.startswith("- `view`")
    ]
