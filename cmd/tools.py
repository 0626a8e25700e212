"""``python -m cmd.tools`` from the repository root: the CLI. All logic lives in agent_toolsmith.cli."""

import sys

from . import source_tree

source_tree.make_importable()

from agent_toolsmith.cli import main  # noqa: E402 - importable only after the line above

if __name__ == "__main__":
    sys.exit(main())
