"""The link rate comes from physical NICs only, and the findings say which NIC (or the site file) set the
targets (issue 37, item 3). The NIC outputs are real: the development VM's root namespace (a virtio NIC
that reports speed -1, three veths of a lab that report 10000, ifb, lo; the current script, with the
``device`` lines) and a lab host's namespace captured before the script said whether a device is behind
an interface (veths named stor0/stor1: told apart by their driver)."""

from __future__ import annotations

from pathlib import Path

from advisor.model.facts import FactSet, HostFacts, ProbeResult, ProbeStatus
from advisor.model.findings import FindingStatus
from advisor.rules.engine import evaluate
from advisor.site.model import Site
from probes import all_probes
from probes.network import SysctlFacts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "network"


def _nic(name: str) -> dict:
    return all_probes()["network.nic"].parse((FIXTURES / name).read_text()).model_dump(mode="json")


def _sysctls() -> dict:
    return SysctlFacts.model_validate({"sysctls": {
        k: {"runtime": v, "runtime_ints": [int(x) for x in v.split()], "line": f"{k} = {v}"}
        for k, v in {"net.ipv4.tcp_rmem": "4096 131072 6291456", "net.ipv4.tcp_wmem": "4096 16384 4194304",
                     "net.core.rmem_max": "212992", "net.core.wmem_max": "212992"}.items()}}).model_dump(mode="json")


def _evaluate(nic: dict, link_rate: str | None = None):
    facts = FactSet(site="t")
    facts.hosts["st01"] = HostFacts(name="st01", roles=["storage"], probes={
        "network.nic": ProbeResult(probe="network.nic", status=ProbeStatus.ok, facts=nic),
        "network.sysctl": ProbeResult(probe="network.sysctl", status=ProbeStatus.ok, facts=_sysctls())})
    host = {"name": "st01", "roles": ["storage"], **({"link_rate": link_rate} if link_rate else {})}
    site = Site(name="t", hosts=[host])
    return [f for f in evaluate(facts, site, profiles=["generic"]).findings
            if f.rule_id in ("NET-TCP-BUFFER-MAX", "NET-CORE-BUFFER-MAX", "NET-TXQUEUELEN")]


def test_veth_bridge_and_loopback_are_virtual_the_virtio_nic_is_not():
    nic = _nic("nic-vm-virtio-veth.txt")["interfaces"]
    assert nic["eth0"]["virtual"] is False and nic["eth0"]["speed_mbps"] is None  # virtio: speed -1
    assert all(nic[n]["virtual"] for n in ("lo", "ifb0", "salab0", "salab1", "salab2"))
    assert nic["salab0"]["speed_mbps"] == 10000  # what a veth claims
    old = _nic("nic-netns-veth.txt")["interfaces"]  # no 'device' lines: the veth driver says it
    assert old["stor0"]["virtual"] and old["lo"]["virtual"]


def test_a_veth_never_sets_the_buffer_targets_or_fails_txqueuelen():
    findings = _evaluate(_nic("nic-vm-virtio-veth.txt"))
    assert not [f for f in findings if f.rule_id == "NET-TXQUEUELEN" and f.status == FindingStatus.fail]
    sized = [f for f in findings if f.rule_id in ("NET-TCP-BUFFER-MAX", "NET-CORE-BUFFER-MAX")]
    assert sized and all(f.status == FindingStatus.not_applicable for f in sized), sized
    assert all("no physical NIC reports its speed" in f.message and "link_rate" in f.message for f in sized)
    assert "10.00 Gb/s" not in str([f.model_dump() for f in findings])


def test_the_findings_name_what_set_the_targets():
    nic = _nic("nic-vm-virtio-veth.txt")
    nic["interfaces"]["eth0"]["speed_mbps"] = 25000  # a NIC that reports its speed
    by_nic = [f for f in _evaluate(nic) if f.rule_id == "NET-TCP-BUFFER-MAX"]
    assert by_nic and all("fasterdata for 25.00 Gb/s, from NIC eth0" in str(f.expected) for f in by_nic), by_nic
    assert "from NIC eth0" in by_nic[0].failure
    by_site = [f for f in _evaluate(_nic("nic-vm-virtio-veth.txt"), "1gbit") if f.rule_id == "NET-CORE-BUFFER-MAX"]
    assert by_site and all("from the site file's link_rate" in str(f.expected) for f in by_site), by_site
