"""Test support for the mesh: a subprocess transport on this machine (namespaces: tests/support/netns.py)."""

from __future__ import annotations

import pytest

from tests.support.subprocess_transport import SubprocessTransport


@pytest.fixture
def loopback_transport() -> SubprocessTransport:
    return SubprocessTransport()

