"""``python -m advisor.cli``: the storadvise command line, as the console script runs it."""

from advisor.cli.root import main

main()
