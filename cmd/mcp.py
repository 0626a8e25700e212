"""``python -m cmd.mcp`` from the repository root: the MCP server. All logic lives in
agent_toolsmith.mcp_server (the package)."""

import sys

from . import source_tree

source_tree.make_importable()

from agent_toolsmith.mcp_server import main  # noqa: E402 - importable only after the line above

if __name__ == "__main__":
    sys.exit(main())
