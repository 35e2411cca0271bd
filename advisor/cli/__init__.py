"""The storadvise command line: the root app (advisor.cli.root) and the commands that sit above
every stage they call."""
