"""BLOCK-NR-REQUESTS and BLOCK-QUEUE-DEPTH from the shipped rule pack on block.queue facts parsed from the
probe's output: a SATA disk with NCQ off and the scheduler's default request queue fails both with a change for
the block adapter; a SAS disk passes; NVMe (no SCSI queue depth) is not applicable to the depth rule; virtual
devices are skipped."""

from __future__ import annotations

from advisor.model.facts import FactSet, HostFacts, ProbeResult, ProbeStatus
from advisor.model.findings import FindingStatus
from advisor.rules.engine import evaluate
from advisor.rules.specs import load_catalog
from probes.block import BlockQueueProbe

# constructed in the probe's layout with kernel-default values: sda a SATA disk under mq-deadline with NCQ
# switched off (nr_requests 2 * min(32, 128) = 64), sdb a SAS disk (tag depth 254), nvme0n1 without a SCSI queue
PROBE_OUTPUT = """\
@@section device sda
link=../devices/pci0000:00/0000:00:17.0/ata1/host0/target0:0:0/0:0:0:0/block/sda
read_ahead_kb=4096
scheduler=[mq-deadline] kyber bfq none
nr_requests=64
rotational=1
queue_depth=1
@@section device sdb
link=../devices/pci0000:00/0000:00:1c.0/0000:02:00.0/host1/port-1:0/end_device-1:0/target1:0:0/1:0:0:0/block/sdb
read_ahead_kb=4096
scheduler=[mq-deadline] kyber bfq none
nr_requests=256
rotational=1
queue_depth=254
@@section device nvme0n1
link=../devices/pci0000:00/0000:00:1d.0/0000:03:00.0/nvme/nvme0/nvme0n1
read_ahead_kb=4096
scheduler=[none] mq-deadline
nr_requests=1023
rotational=0
@@section device loop0
link=../devices/virtual/block/loop0
read_ahead_kb=128
scheduler=[none] mq-deadline
nr_requests=128
@@section end
"""


def findings_of(rule_id: str) -> dict:
    facts = BlockQueueProbe().parse(PROBE_OUTPUT).model_dump()
    fs = FactSet(site="t", hosts={"fs1": HostFacts(name="fs1", roles=["storage"], reachable=True, probes={
        "block.queue": ProbeResult(probe="block.queue", status=ProbeStatus.ok, facts=facts)})})
    report = evaluate(fs, profiles=["generic"], catalog=load_catalog())
    return {f.subject: f for f in report.findings if f.rule_id == rule_id}


def test_probe_reads_the_device_queue_depth():
    devices = BlockQueueProbe().parse(PROBE_OUTPUT).devices
    assert (devices["sda"].queue_depth, devices["sdb"].queue_depth, devices["nvme0n1"].queue_depth) == (1, 254, None)


def test_nr_requests_rule():
    found = findings_of("BLOCK-NR-REQUESTS")
    assert {s: f.status for s, f in found.items()} == {
        "sda": FindingStatus.fail, "sdb": FindingStatus.passed, "nvme0n1": FindingStatus.passed}
    assert [(c.adapter, c.key, c.target) for c in found["sda"].changes] == [("block", "sda/nr_requests", 128)]


def test_queue_depth_rule():
    found = findings_of("BLOCK-QUEUE-DEPTH")
    assert {s: f.status for s, f in found.items()} == {
        "sda": FindingStatus.fail, "sdb": FindingStatus.passed, "nvme0n1": FindingStatus.not_applicable}
    assert [(c.adapter, c.key, c.target) for c in found["sda"].changes] == [("block", "sda/queue_depth", 31)]
    assert found["sda"].observed == 1
