"""Fixtures for the transport tests: a real sshd (tests/sshd_fixture.py) and hermetic options."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.transport.factory import SshOptions
from tests.sshd_fixture import sshd  # noqa: F401  (re-exported fixture)


def hermetic_options(tmp: Path, **kw) -> SshOptions:
    """SshOptions that never read the machine's ~/.ssh, /etc/ssh or ssh-agent."""
    base = dict(
        known_hosts_path=tmp / "default_known_hosts",
        system_known_hosts_path=None,
        ssh_config_path=None,
        use_agent=False,
        look_for_keys=False,
        connect_timeout=5.0,
    )
    base.update(kw)
    return SshOptions(**base)


@pytest.fixture
def opts(tmp_path: Path) -> SshOptions:
    return hermetic_options(tmp_path)
