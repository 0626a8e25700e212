"""``python -m cmd.tools``: the CLI. All logic lives in internal.cli."""

import sys

from internal.cli import main

if __name__ == "__main__":
    sys.exit(main())
