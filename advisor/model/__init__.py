"""What the stages hand each other: facts (collect -> rules), findings (rules -> report),
the --fail-on threshold over them, link rates, the content-addressed output store."""
