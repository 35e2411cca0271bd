"""Scan history: every scan stored in SQLite (advisor/history/store.py), queried by ``storadvise history``
(advisor/cli/history.py)."""
