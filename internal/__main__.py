"""``python -m agent_toolsmith``: the CLI."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
