"""``storadvise audit``: the acceptance checklist of a new installation (advisor/audit/checklist.py)."""
