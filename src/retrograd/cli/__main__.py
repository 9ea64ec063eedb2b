"""`python -m retrograd.cli`: the same as the installed `retrograd` command."""

import sys

from . import main

sys.exit(main())
