"""`python -m retrograd.cli`: the same as the installed `retrograd` command."""

import sys

from . import main

if __name__ == "__main__":  # importing it (e.g. to document it) runs nothing
    sys.exit(main())
