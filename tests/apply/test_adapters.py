"""Each remediation adapter: the current value from the scan's facts, whether the host can make
a change, and the role variables it writes (the names the roles read, playbooks/roles/*/defaults)."""

from __future__ import annotations

from advisor.adapters import adapters, get_adapter
from advisor.model.findings import Change, ChangeScope
from probes.firewall import FirewallProbe
from probes.network import NetworkSysctlProbe
from probes.xcache import parse_xrootd_files
from tests.support.paths import FIXTURES
from tests.support.firewall_outputs import FULL


def change(adapter, key, target, host="h1", scope=ChangeScope.both, runtime=None, persisted=None):
    return Change(host=host, adapter=adapter, key=key, target=target, scope=scope, runtime=runtime, persisted=persisted)


def test_the_registry_holds_every_adapter_in_play_order_each_with_its_shipped_role():
    """The core adapters first, then each storage kind's in registry order; every role is shipped,
    and every shipped role but the controller's apply_summary and collect.yml's collect_batch has an
    adapter."""
    from advisor.util.resources import playbooks_dir
    from advisor.apply.role_docs import COLLECT_ROLE, SUMMARY_ROLE
    from advisor.storage_kinds import storage_kinds

    reg = adapters()
    assert list(reg)[:5] == ["firewall", "sysctl", "block", "nic", "cpufreq"]
    assert [a.role for a in reg.values()][:5] == ["firewall", "network_tuning", "block_tuning", "nic_tuning", "cpu_tuning"]
    kinds = [k for k in storage_kinds().values() if k.adapter_module]
    assert [reg[n].role for n in list(reg)[5:]] == [r for k in kinds for r in [k.role] + [
        get_adapter_of(m).role for m in k.extra_adapter_modules]]
    shipped = {p.name for p in (playbooks_dir() / "roles").iterdir() if p.is_dir()}
    assert {a.role for a in reg.values()} == shipped - {SUMMARY_ROLE, COLLECT_ROLE}


def get_adapter_of(module: str):
    import importlib

    return importlib.import_module(module).ADAPTER


def test_the_registry_is_built_once_and_rebuilt_when_something_registers():
    from advisor.adapters import register_adapter, unregister_adapter
    from advisor.adapters.sysctl import SysctlAdapter
    from advisor.storage_kinds import StorageKind, register_storage_kind, unregister_storage_kind

    first = adapters()
    assert adapters() == first and adapters() is not first  # one build, a copy per caller
    import advisor.adapters as registry

    builds = []
    real = registry._build_adapters
    registry._build_adapters = lambda: builds.append(1) or real()
    try:
        for _ in range(100):
            adapters()
        assert builds == []

        class Extra(SysctlAdapter):
            name = "extra_sysctl"

        register_adapter(Extra())
        assert "extra_sysctl" in adapters() and builds == [1]
        unregister_adapter("extra_sysctl")
        assert "extra_sysctl" not in adapters() and builds == [1, 1]
        register_storage_kind(StorageKind("cachetest", adapter_module="advisor.adapters.sysctl"))
        adapters()
        assert builds == [1, 1, 1]
    finally:
        registry._build_adapters = real
        unregister_storage_kind("cachetest")


def test_sysctl_adapter_on_a_namespace_capture():
    facts = {"network.sysctl": NetworkSysctlProbe().parse(
        (FIXTURES / "network" / "sysctl-netns-modes.txt").read_text()).model_dump(mode="json")}
    a = get_adapter("sysctl")
    assert a.current(facts, "net.ipv4.tcp_rmem") == ("4096 131072 33554432", None)
    assert a.cannot_change(facts, change("sysctl", "net.ipv4.tcp_sack", "1"), {}) is None
    assert "read-only /proc/sys entry (mode 444)" in a.cannot_change(facts, change("sysctl", "net.core.wmem_max", "1"), {})
    assert "does not exist on this host" in a.cannot_change(facts, change("sysctl", "net.core.default_qdisc", "fq"), {})
    assert a.resolve("net.ipv4.tcp_wmem", "4096 16384 4194304", "4096 65536 1048576") == "4096 65536 4194304"
    assert a.resolve("net.core.default_qdisc", "fq", "fq_codel") is None
    assert a.same("4096\t87380  16777216", "4096 87380 16777216") and not a.same("1", "0")
    assert a.role_vars([change("sysctl", "net.ipv4.tcp_sack", "1")], facts, {}) == {
        "network_tuning_sysctls": {"net.ipv4.tcp_sack": "1"}}


def test_firewall_adapter_finds_the_rule_it_removes():
    from advisor.adapters.firewall import rule_key

    fw = FirewallProbe().parse(FULL).model_dump(mode="json")
    facts = {"firewall": fw}
    a = get_adapter("firewall")
    dropping = next(r for r in fw["rules"] if str(r.get("verdict")).lower() == "drop")
    key = rule_key(dropping)
    assert a.current(facts, key) == ("present", None)
    assert a.current(facts, "nft inet filter input: tcp dport 1 drop") == ("absent", None)
    assert a.cannot_change(facts, change("firewall", key, "absent"), {}) is None
    assert "not in the ruleset" in a.cannot_change(facts, change("firewall", "nft x y z: nothing", "absent"), {})
    out = a.role_vars([change("firewall", key, "absent")], facts, {})["firewall_remove_rules"]
    assert out == [{k: dropping[k] for k in ("backend", "family", "table", "chain", "text", "handle") if dropping.get(k) is not None}]


def test_block_adapter_keys_are_device_and_attribute():
    facts = {"block.queue": {"devices": {"vda": {"read_ahead_kb": 128, "scheduler": "none",
                                                 "schedulers": ["mq-deadline", "kyber", "none"]}}}}
    a = get_adapter("block")
    assert a.current(facts, "vda/read_ahead_kb") == (128, None)
    assert a.normalize_target("vda/read_ahead_kb", "1024") == 1024
    assert a.cannot_change(facts, change("block", "vda/scheduler", "mq-deadline"), {}) is None
    assert "offers no scheduler bfq" in a.cannot_change(facts, change("block", "vda/scheduler", "bfq"), {})
    assert "not 'vda/rq_affinity'" in a.cannot_change(facts, change("block", "vda/rq_affinity", "2"), {})
    assert a.role_vars([change("block", "vda/read_ahead_kb", 1024), change("block", "vda/scheduler", "mq-deadline")],
                       facts, {}) == {"block_tuning_devices": {"vda": {"read_ahead_kb": 1024, "scheduler": "mq-deadline"}}}


def test_block_adapter_request_queue_and_device_queue_depth():
    facts = {"block.queue": {"devices": {
        "sda": {"scheduler": "mq-deadline", "schedulers": ["mq-deadline", "none"], "nr_requests": 64, "queue_depth": 1},
        "sdb": {"scheduler": "none", "schedulers": ["mq-deadline", "none"], "nr_requests": 32, "queue_depth": 32},
        "nvme0n1": {"scheduler": "none", "schedulers": ["none"], "nr_requests": 1023, "queue_depth": None}}}}
    a = get_adapter("block")
    assert a.current(facts, "sda/nr_requests") == (64, None)
    assert a.current(facts, "sda/queue_depth") == (1, None)
    assert a.normalize_target("sda/queue_depth", "31") == 31
    assert a.cannot_change(facts, change("block", "sda/nr_requests", "128"), {}) is None
    assert a.cannot_change(facts, change("block", "sda/queue_depth", "31"), {}) is None
    assert "no SCSI device queue depth" in a.cannot_change(facts, change("block", "nvme0n1/queue_depth", 31), {})
    # without a scheduler nr_requests is the tag depth: the kernel refuses a larger value
    assert "hardware tag depth (32)" in a.cannot_change(facts, change("block", "sdb/nr_requests", 128), {})
    assert a.cannot_change(facts, change("block", "sdb/nr_requests", 16), {}) is None
    assert "positive integer" in a.cannot_change(facts, change("block", "sda/queue_depth", "deep"), {})
    assert "positive integer" in a.cannot_change(facts, change("block", "sda/nr_requests", 0), {})
    assert a.role_vars([change("block", "sda/nr_requests", "128"), change("block", "sda/queue_depth", 31)], facts, {}) \
        == {"block_tuning_devices": {"sda": {"nr_requests": 128, "queue_depth": 31}}}


def test_gpfs_adapter_runtime_from_mmdiag_persisted_from_mmlsconfig_and_groups():
    facts = {"gpfs.mmlsconfig": {"effective": {"pagepool": {"value": "1G"}}},
             "gpfs.mmdiag": {"active": {"pagepool": {"value": "536870912"}}}}
    a = get_adapter("gpfs")
    assert a.current(facts, "pagepool") == ("536870912", "1G")
    # persisted right, daemon not: a restart-pending attribute
    pending = a.role_vars([change("gpfs", "pagepool", "1G", scope=ChangeScope.runtime)], facts,
                          {"inventory_name": "st01", "gpfs_node": "st01-ib"})
    assert pending == {"gpfs_config": {"pagepool": "1G"}, "gpfs_tuning_node_name": "st01-ib",
                       "gpfs_tuning_pending_attrs": ["pagepool"]}
    members = {h: a.role_vars([change("gpfs", "pagepool", v, host=h)], facts, {"inventory_name": h})
               for h, v in (("st01", "1G"), ("st02", "1G"), ("st03", "2G"))}
    assert a.finish(members, {}) is None
    assert members["st01"]["gpfs_tuning_group"] == ["st01", "st02"] and members["st02"]["gpfs_tuning_runner"] == "st01"
    # the node name is written only where it is not the inventory name (identical hosts share their vars)
    assert not [h for h, v in members.items() if "gpfs_tuning_node_name" in v]
    same = a.role_vars([change("gpfs", "pagepool", "1G", host="st04")], facts, {"inventory_name": "st04", "gpfs_node": "st04"})
    assert same == {"gpfs_config": {"pagepool": "1G"}}
    assert members["st03"]["gpfs_tuning_group"] == ["st03"]


def test_san_adapter_needs_controllers():
    facts = {"san.logical_drives": {"generation": "DS4000", "controllers": [],
                                    "drives": {"data01": {"name": "data01", "read_cache": False}}}}
    a = get_adapter("san")
    assert a.current(facts, "data01/readCacheEnabled") == ("FALSE", "FALSE")
    c = change("san", "data01/readCacheEnabled", "TRUE")
    assert "no SAN controllers known" in a.cannot_change(facts, c, {})
    assert a.cannot_change(facts, c, {"san_controllers": ["ctl-a"]}) is None
    assert a.role_vars([c], facts, {"san_controllers": ["ctl-a", "ctl-b"]}) == {
        "san_logical_drives": {"data01": {"readCacheEnabled": "TRUE"}}, "san_controllers": ["ctl-a", "ctl-b"]}
    assert a.resolve("data01/writeCacheEnabled", "TRUE", "FALSE") is None


def test_xcache_adapter_on_the_osg_configuration():
    cfg = "/etc/xrootd/xrootd-xcache.cfg"
    lines = (FIXTURES / "samples" / "xcache-osg-40-osg-xcache.cfg").read_text().splitlines()
    inst = parse_xrootd_files([(cfg, list(enumerate(lines, start=1)))], cfg)
    facts = {"xcache.config": {"cache": inst.model_dump(mode="json")}}
    a = get_adapter("xcache")
    c = change("xcache", "pfc.diskusage", "0.90 0.95")
    assert a.cannot_change(facts, c, {}) is None
    v = a.role_vars([c], facts, {})
    assert v["xcache_directives"] == {"pfc.diskusage": "0.90 0.95"} and v["xcache_config_file"] == cfg
    assert v["xcache_service"] == "xrootd@xcache"
    assert "names no XCache configuration file" in a.cannot_change({}, c, {})
    # an instance no systemd unit runs (a container, a lab host): the site's restart command instead
    v = a.role_vars([c], facts, {"xcache_restart_command": "/bin/sh /srv/xcache/restart.sh"})
    assert v["xcache_restart_command"] == "/bin/sh /srv/xcache/restart.sh" and "xcache_service" not in v


def test_verify_measures_the_mesh_again_when_a_change_acts_on_the_network():
    from advisor.apply.verify import network_touched
    from advisor.model.findings import Finding, FindingStatus, Severity
    from advisor.report.model import ScanReport, ScanSummary

    def report(*changes):
        f = Finding(rule_id="X-Y", hosts=["h1"], status=FindingStatus.fail, severity=Severity.high, changes=list(changes))
        s = ScanSummary(hosts=1, unreachable=0, probe_errors=0, by_status={}, failed_by_severity={},
                        worst_failed_severity=None, incomplete=False)
        return ScanReport(tool_version="t", site="s", profiles=[], started_at="-", finished_at="-", duration_s=0,
                          hosts=[], findings=[f], summary=s)

    assert network_touched(report(change("sysctl", "net.ipv4.tcp_sack", "1")))
    assert network_touched(report(change("firewall", "nft inet filter input: drop", "absent")))
    assert not network_touched(report(change("block", "sda/read_ahead_kb", 1024)))
    assert not network_touched(report())


def test_lustre_persisted_value_is_the_mgs_params_log_and_finish_moves_it_there():
    """A client's persisted value is the MGS's last matching set_param -P record (read through the
    adapter's site facts); the plan persists the clients' asks on the MGS, one pattern per OST."""
    from advisor.adapters.base import SITE_FACTS

    a = get_adapter("lustre")
    key = "osc.atlas-OST0000-osc-ffff88203b1e4000.max_rpcs_in_flight"
    client = {"lustre.params": {"osc": {"atlas-OST0000-osc-ffff88203b1e4000": {"values": {"max_rpcs_in_flight": 8}}},
                                "mgs": False}}
    mgs = {"mgs": True, "permanent": [
        {"index": 2, "parameter": "osc.*.max_rpcs_in_flight", "value": "32", "line": "-"},
        {"index": 4, "parameter": "osc.atlas-OST0000-osc-*.max_rpcs_in_flight", "value": "16", "line": "-"}]}
    site = {"lustre.params": {"wn01": client["lustre.params"], "mgs01": mgs}}
    runtime, persisted = a.current({**client, SITE_FACTS: site}, key)
    assert (runtime, persisted) == ("8", "16")
    # no record matches: the boot value is the client's documented default; no MGS read: unknown
    mgs_empty = {"mgs": True, "permanent": []}
    facts = {**client, SITE_FACTS: {"lustre.params": {"mgs01": mgs_empty}}}
    assert a.current(facts, key) == ("8", None) and a.boot(facts, key, None).value == "8"
    assert a.boot({**client, SITE_FACTS: {"lustre.params": {}}}, key, None) is None
    members = {h: a.role_vars([change("lustre", key.replace("ffff88203b1e4000", inst), "16", host=h)], {}, {})
               for h, inst in (("wn01", "ffff88203b1e4000"), ("wn02", "ffff000011112222"))}
    notices = a.finish(members, {"wn01": client, "mgs01": {"lustre.params": mgs_empty}})
    assert members["mgs01"]["lustre_permanent"] == {"osc.atlas-OST0000-osc-*.max_rpcs_in_flight": "16"}
    assert members["wn01"]["lustre_persisted_by"] == "mgs01" and "lustre_permanent_asks" not in members["wn02"]
    assert notices and notices[0].startswith("mgs01: lctl set_param -P")
    # without an MGS in the scan nothing is persisted, and the plan says so
    members = {"wn01": a.role_vars([change("lustre", key, "16")], {}, {})}
    notices = a.finish(members, {"wn01": client})
    assert set(members) == {"wn01"} and "runtime only" in notices[0]
