"""Scan history: every scan stored in SQLite (advisor/history_store.py), queried by ``storadvise history``."""
