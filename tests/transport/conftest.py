"""Fixtures for the transport tests: hermetic SSH options (the real sshd is tests/support/sshd.py's fixture)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.transport.factory import SshOptions
from tests.support.sshd import hermetic_options


@pytest.fixture
def opts(tmp_path: Path) -> SshOptions:
    return hermetic_options(tmp_path)
