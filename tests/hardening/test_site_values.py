"""Site-file values that are not legal for their field are refused with one line naming file,
line and field, before any host is contacted (exit 1, no traceback)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.cli import storadvise

def _scan(tmp_path: Path, host_yaml: str) -> subprocess.CompletedProcess:
    site = tmp_path / "site.yml"
    site.write_text("name: t\nhosts:\n  - name: a\n" + host_yaml)
    return storadvise("scan", "--site", site, "--json", cwd=tmp_path, timeout=60)


@pytest.mark.parametrize("host_yaml, field, why", [
    ("    link_rate: 10\n", "link_rate", "below 1 Mbit/s"),
    ("    link_rate: 10bit\n", "link_rate", "below 1 Mbit/s"),
    ("    link_rate: '" + "9" * 400 + "gbit'\n", "link_rate", "too long"),
    ("    link_rate: " + "9" * 400 + "\n", "link_rate", "too large"),
])
def test_bad_site_values_are_one_line_errors(tmp_path, host_yaml, field, why):
    cp = _scan(tmp_path, host_yaml)
    assert cp.returncode == 1, cp.stderr
    lines = cp.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in cp.stderr
    assert "site.yml:" in lines[0] and field in lines[0] and why in lines[0]


def test_rates_with_units_are_read():
    from advisor.site.model import Host

    assert Host(name="a", link_rate="10G").link_rate == 10**10
    assert Host(name="a", link_rate=10**9).link_rate == 10**9


@pytest.mark.parametrize("host_yaml, field", [
    ("    address: '-oProxyCommand=touch /tmp/x'\n", "address"),
    ("    address: 'a;touch /tmp/x'\n", "address"),
    ("    address: '$(id)'\n", "address"),
    ("    user: '-oProxyCommand=id'\n", "user"),
    ("    user: '`id`'\n", "user"),
    ("    known_hosts: \"/tmp/k\\n-oProxyCommand=id\"\n", "known_hosts"),
    ("    key: '-oProxyCommand=id'\n", "key"),
    ("    san_controllers: ['ctl;reboot']\n", "san_controllers"),
    ("    gpfs_node: 'n1 n2'\n", "gpfs_node"),
    ("    groups: ['a b']\n", "groups"),
])
def test_hostile_connection_fields_are_refused(tmp_path, host_yaml, field):
    cp = _scan(tmp_path, host_yaml)
    assert cp.returncode == 1 and "Traceback" not in cp.stderr, cp.stderr
    lines = cp.stderr.strip().splitlines()
    if field in ("san_controllers", "gpfs_node"):  # storage kinds' host settings live in the host's vars
        assert len(lines) == 1 and "hosts.0.vars" in lines[0] and f"{field}:" in lines[0], lines
    else:
        assert len(lines) == 1 and f"hosts.0.{field}" in lines[0], lines


def test_real_addresses_pass():
    from advisor.site.model import Host

    for a in ("10.0.0.1", "fd00::1", "gpfs01.ifca.es", "localhost", "wn-01.example.org."):
        assert Host(name="a", address=a).address == a
