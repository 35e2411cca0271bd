"""Every test's scans go to a history database of its own, never the user's (~/.local/share/storadvise).

The harnesses of tests/support/ are fixtures for every test; tests/support/tiers.py marks each test from the
fixtures it takes (the tiers) and schedules the quiet ones alone.
"""

from __future__ import annotations

import pytest

pytest.register_assert_rewrite("tests.support")

pytest_plugins = [
    "tests.support.tiers",
    "tests.support.ansible",
    "tests.support.lab",
    "tests.support.netns",
    "tests.support.ns_host",
    "tests.support.sshd",
]


@pytest.fixture(autouse=True)
def _private_scan_history(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("STORADVISE_HISTORY", str(tmp_path_factory.mktemp("history") / "history.db"))
