"""``python -m advisor.cli``: the storadvise command line, as the console script runs it (its exit status too)."""

import sys

from advisor.cli.root import main

sys.exit(main())
