"""Every test's scans go to a history database of its own, never the user's (~/.local/share/storadvise)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _private_scan_history(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("STORADVISE_HISTORY", str(tmp_path_factory.mktemp("history") / "history.db"))
