"""The active test's plan: built from a site file once, with every host, source and setting resolved.

The run (``run_active``) takes the plan, not the site: tests/efficiency/test_active.py runs one
over a real sshd after the site's host list was emptied.
"""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from advisor.efficiency.active import run_active
from advisor.efficiency.active_plan import ActiveTestPlan, EfficiencyTestError, build_active_plan
from advisor.site.file import load_site

SITE = """\
name: planned
transport: local
hosts:
  - {name: xrd01, address: 10.0.0.1, roles: [storage], link_rate: 10gbit,
     vars: {xrootd_port: 11094, xrootd_export: /data}}
  - {name: cache01, address: 10.0.0.2, roles: [cache]}
  - {name: wn01, roles: [worker], groups: [workers], link_rate: 1gbit}
  - {name: wn02, roles: [worker], groups: [workers]}
  - {name: wn03, roles: [worker]}
extensions:
  efficiency:
    mb: 8
    hosts: [workers]
    clients: [1, 4]
    protocols: [tcp, xrootd, xcache]
    healthy_rate: 2gbit
    scaling_host: wn02
    address: 10.9.9.1
    xcache: {port: 2094}
"""


@pytest.fixture
def site_file(tmp_path):
    def write(text: str = SITE) -> str:
        p = tmp_path / "planned.yml"
        p.write_text(text)
        return str(p)

    return write


def test_plan_from_a_site_file(site_file):
    site = load_site(site_file())
    plan = build_active_plan(site, {"clients": [1, 2, 8], "cpu_factor": 2, "nodes": 2, "progress": print})
    # the workers: the group, in the site's order, as the site's own Host objects
    assert [h.name for h in plan.workers] == ["wn01", "wn02"]
    assert all(h is site.host(h.name) for h in plan.workers)
    assert plan.protocols == ("tcp", "xrootd", "xcache") and plan.explicit_protocols
    # one source per protocol: the host serving it (an object) and its address
    tcp, xrd, xc = (plan.sources[p] for p in plan.protocols)
    assert tcp.host is site.host("xrd01") and plan.server_host is tcp.host
    assert dict(tcp.fields) == {"kind": "tcp", "host": "xrd01", "address": "10.9.9.1", "protocol": "tcp"}
    assert xrd.host is site.host("xrd01") and xrd.fields["url"] == "root://10.0.0.1:11094//data"
    assert xc.host is site.host("cache01") and xc.kind == "xcache"
    assert xc.fields["url"] == "root://10.0.0.2:2094//data"  # its own port, the origin's directory
    # the settings: the site's extension merged with the ones given (None: the site's)
    assert plan.clients == (1, 2, 8) and plan.nodes == 2 and plan.cpu_factor == 2.0
    assert plan.mb_per_host == 8.0 and plan.slots == 1 and plan.readahead == 1 and plan.block_kb == 1024
    assert plan.scaling_host is site.host("wn02") and plan.healthy_rate_bps == 2 * 10**9
    assert plan.python == "python3" and plan.timeout is None
    assert plan.config["mb"] == 8 and plan.config["clients"] == [1, 2, 8] and plan.config["hosts"] == ["workers"]
    assert "progress" not in plan.config  # the run's callbacks are not settings
    # a plain, frozen record
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.nodes = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        plan.config["mb"] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        plan.sources["tcp"].fields["address"] = "10.6.6.6"  # type: ignore[index]


def test_plan_defaults_without_an_efficiency_section(site_file):
    site = load_site(site_file(SITE.split("extensions:")[0]))
    plan = build_active_plan(site, {"source": "path:/gpfs/fs1/f"})
    assert [h.name for h in plan.workers] == ["wn01", "wn02", "wn03"]
    assert plan.protocols == ("posix",) and not plan.explicit_protocols
    assert plan.sources["posix"].host is None and plan.server_host is None
    assert dict(plan.sources["posix"].fields) == {"kind": "path", "path": "/gpfs/fs1/f", "protocol": "posix"}
    assert plan.clients == (1,) and plan.mb_per_host == 64.0 and plan.healthy_rate_bps is None


@pytest.mark.parametrize("ext,msg", [
    ("{hosts: [nope]}", "no host, group or role 'nope'"),
    ("{address: 'not an address!'}", "extensions.efficiency.address:"),
    ("{healthy_rate: fast}", "extensions.efficiency.healthy_rate:"),
    ("{scaling_host: wn09}", "extensions.efficiency.scaling_host: "),
    ("{xcache: {host: nope}, protocols: [xcache]}", "extensions.efficiency.xcache.host"),
    ("[1, 2]", "'extensions.efficiency' must be a mapping"),
])
def test_a_bad_setting_is_refused_while_building_naming_the_site_file(site_file, ext, msg):
    path = site_file(SITE.split("extensions:")[0] + f"extensions:\n  efficiency: {ext}\n")
    with pytest.raises(EfficiencyTestError) as e:
        build_active_plan(load_site(path))
    assert str(e.value).startswith(f"{path}: ") and msg in str(e.value), str(e.value)


@pytest.mark.parametrize("settings,msg", [
    ({"nodes": 4}, "nodes 4: between 1 and the 3 worker(s) of the test (wn01, wn02, wn03)"),
    ({"slots": 0}, "slots must be a positive integer, got 0"),
    ({"mb": -1}, "mb must be positive, got -1"),
    ({"knee_rate_drop": 1.5}, "knee: "),
])
def test_run_settings_are_refused_before_anything_runs(site_file, settings, msg):
    site = load_site(site_file(SITE.split("extensions:")[0]))
    with pytest.raises(EfficiencyTestError, match="^" + msg.replace("(", r"\(").replace(")", r"\)")):
        build_active_plan(site, {"source": "path:/x", **settings})


def test_the_run_takes_the_plan_not_the_site():
    params = inspect.signature(run_active).parameters
    assert list(params)[:2] == ["plan", "transport_factory"]
    assert params["plan"].annotation in (ActiveTestPlan, "ActiveTestPlan")
    assert not any("site" in name for name in params)
