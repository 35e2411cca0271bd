"""Building blocks every stage uses and none owns: user-facing errors, units, atomic files,
bounded YAML, host ranges, the shipped module_utils, the layout of --help."""
