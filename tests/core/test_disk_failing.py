"""DISK-FAILING (Caltech's failing disk) on real smartctl --json documents (tests/fixtures/real/disk.smart),
joined with kernel I/O errors and the disk's await against its peers; the finding names the disk and what the
host serves from it."""

from __future__ import annotations

from pathlib import Path

from advisor.model.facts import FactSet, HostFacts, ProbeResult, ProbeStatus
from advisor.model.findings import FindingStatus
from advisor.rules.engine import evaluate
from advisor.rules.specs import load_catalog
from probes.smart import SmartProbe

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "disk.smart"


def ok(probe: str, facts: dict) -> ProbeResult:
    return ProbeResult(probe=probe, status=ProbeStatus.ok, facts=facts)


def smart(*names: str) -> dict:
    devices: dict = {}
    for name in names:
        devices.update(SmartProbe().parse((REAL / name).read_text()).model_dump()["devices"])
    return {"devices": devices}


def disk(await_ms: float, r_s: float = 50.0) -> dict:
    return {"partition": False, "await_ms": await_ms, "r_s": r_s, "w_s": 0.0, "util_pct": 40.0}


def failing_findings(hosts: dict[str, HostFacts]) -> dict:
    report = evaluate(FactSet(site="t", hosts=hosts), profiles=["generic"], catalog=load_catalog())
    return {(f.hosts[0], f.subject): f for f in report.findings if f.rule_id == "DISK-FAILING"}


def test_smart_failure_names_the_disk_and_the_service_on_it():
    cache = HostFacts(name="xcache1", roles=["cache"], reachable=True, probes={
        "disk.smart": ok("disk.smart", smart("scrutiny-smart-fail2.txt", "exporter-INTEL_SSDPE2KX080T8_1.txt")),
        "block.ioerrors": ok("block.ioerrors", {"source": "dmesg", "log_lines": 900, "total": 0, "errors_by_device": {}}),
        "mounts": ok("mounts", {"mounts": [
            {"device": "/dev/sdc1", "mountpoint": "/data/xcache", "fstype": "xfs", "kind": "local"},
            {"device": "/dev/nvme0n1p2", "mountpoint": "/", "fstype": "ext4", "kind": "local"}]}),
        "services.xrootd": ok("services.xrootd", {"units": {"xrootd@xcache.service": {
            "unit": "xrootd@xcache.service", "daemon": "xrootd", "load": "loaded", "active": "active", "sub": "running"}}}),
    })
    found = failing_findings({"xcache1": cache})
    bad = found[("xcache1", "sdc")]
    assert bad.status == FindingStatus.fail and bad.severity.value == "high"
    assert bad.message == "sdc on xcache1 is failing (mounted at /data/xcache; cache host; serving xrootd@xcache.service)"
    assert "xcache1: sdc SMART overall health FAILED" in bad.evidence
    assert "xcache1: sdc reallocated sectors 1975" in bad.evidence and "xcache1: sdc pending sectors 8" in bad.evidence
    assert bad.remediation.text.startswith("Drain sdc (mounted at /data/xcache; cache host;")
    assert found[("xcache1", "nvme0n1")].status == FindingStatus.passed


def test_nvme_media_errors_fail():
    host = HostFacts(name="fs1", roles=["storage"], reachable=True, probes={
        "disk.smart": ok("disk.smart", smart("scrutiny-smart-nvme-failed.txt"))})
    f = failing_findings({"fs1": host})[("fs1", "nvme0n1")]
    assert f.status == FindingStatus.fail and "fs1: nvme0n1 media errors 7" in f.evidence


def test_without_smart_io_errors_on_a_slow_disk_fail_and_on_a_normal_one_do_not():
    def host(name: str, sdb_await: float) -> HostFacts:
        return HostFacts(name=name, roles=["storage"], reachable=True, probes={
            "disk.smart": ProbeResult(probe="disk.smart", status=ProbeStatus.not_applicable, message="smartctl not found"),
            "block.ioerrors": ok("block.ioerrors", {"source": "dmesg", "log_lines": 500, "total": 3, "errors_by_device": {
                "sdb": {"count": 3, "lines": ["[ 12.3] blk_update_request: I/O error, dev sdb, sector 2048 op 0x0:(READ)"]}}}),
            "block.diskstats": ok("block.diskstats", {"devices": {
                "sda": disk(8.0), "sdb": disk(sdb_await), "sdc": disk(9.0), "sdd": disk(7.5)}}),
        })
    found = failing_findings({"slow": host("slow", 140.0), "fine": host("fine", 9.5)})
    slow = found[("slow", "sdb")]
    assert slow.status == FindingStatus.fail
    assert "slow: sdb kernel I/O errors 3" in slow.evidence
    assert any(e.startswith("slow: sdb await 140.0 ms > 24.0 ms (3 x peers' median 8.0 ms)") for e in slow.evidence)
    assert found[("fine", "sdb")].status == FindingStatus.passed  # errors alone: DISK-IO-ERRORS says so, not this
    assert ("slow", "sda") not in found  # no SMART data, no errors, not slow: nothing to say


def test_no_smart_and_no_kernel_log_is_not_applicable():
    host = HostFacts(name="w1", roles=["worker"], reachable=True, probes={
        "disk.smart": ProbeResult(probe="disk.smart", status=ProbeStatus.not_applicable, message="smartctl not found")})
    found = failing_findings({"w1": host})
    assert [f.status for f in found.values()] == [FindingStatus.not_applicable]
