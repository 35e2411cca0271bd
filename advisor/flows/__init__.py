"""Production flows: the site's live storage connections as paths (``network.flows`` on every host,
joined by address: advisor/flows/paths.py), what held each (advisor/flows/limits.py), the ports
sampled (advisor/flows/ports.py) and where a mesh measured the same path differently
(advisor/flows/compare.py)."""
