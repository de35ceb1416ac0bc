"""``python -m mr2``: the command line (``mr2.cli``)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
