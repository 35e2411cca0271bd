"""storadvise lab: a miniature grid site in network namespaces (see docs/lab.md)."""
