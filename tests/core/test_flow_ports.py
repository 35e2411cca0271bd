"""The storage ports a scan samples production flows on: the site file's ``flow_ports`` (else the
probe's defaults) with each of the site's storage kinds' ports (advisor/flows/ports.py), as the
probe's context gets them."""

from __future__ import annotations

import pytest

from advisor.collect.collector import probe_context
from advisor.util.errors import SiteFileError
from advisor.flows.ports import site_flow_ports
from advisor.site.file import load_site
from probes.flows import DEFAULT_FLOW_PORTS, FlowsProbe

HOSTS = "hosts:\n  - {name: st01, address: 192.0.2.1, roles: [storage]}\n"


def site(tmp_path, extra: str):
    p = tmp_path / "site.yml"
    p.write_text("name: s\n" + extra + HOSTS)
    return load_site(str(p))


def test_defaults_then_the_storage_kinds_ports_each_once(tmp_path):
    plain = site(tmp_path, "storage_kind: gpfs\n")
    assert plain.flow_ports is None
    assert site_flow_ports(plain) == list(DEFAULT_FLOW_PORTS)  # GPFS's 1191 is a default already
    two = site(tmp_path, "storage_systems: [cephfs, lustre]\n")
    ports = site_flow_ports(two)
    assert ports[:len(DEFAULT_FLOW_PORTS)] == list(DEFAULT_FLOW_PORTS)
    assert ports[len(DEFAULT_FLOW_PORTS):] == ["3300", "6789", "6800-7300", "988"]


def test_the_sites_own_ports_replace_the_defaults_and_reach_the_probe(tmp_path):
    s = site(tmp_path, "storage_kind: lustre\nflow_ports: [1094, '20000-25000', 1094]\n")
    assert s.flow_ports == ["1094", "20000-25000"]
    ctx = probe_context(s, s.hosts[0], is_local=False, sample_seconds=2)
    assert ctx.flow_ports == ["1094", "20000-25000", "988"]
    script = FlowsProbe().script(ctx)
    assert "echo '1094 20000-25000 988'" in script and "sport >= :20000" in script


@pytest.mark.parametrize("value, message", [
    ("[]", "names no port"),
    ("[http]", "http"),
    ("[70000]", "70000"),
    ("[25000-20000]", "25000-20000"),
    ("[true]", "True"),
    ("1094", "a list of ports"),
])
def test_a_bad_port_list_is_a_one_line_error_naming_the_key(tmp_path, value, message):
    with pytest.raises(SiteFileError) as exc:
        site(tmp_path, f"flow_ports: {value}\n")
    text = str(exc.value)
    assert "flow_ports" in text and message in text and "\n" not in text.strip(), text
