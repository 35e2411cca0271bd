"""The real samples in tests/fixtures/samples/ ingest to the values they contain."""

import json

import pytest

from advisor.efficiency import fjr
from advisor.efficiency.htcondor import record_from_ad
from advisor.efficiency.ingest import iter_file
from advisor.efficiency.records import JobRecord, ParseIssue


def _all(path, fmt="auto"):
    items = list(iter_file(path, fmt))
    return [i for i in items if isinstance(i, JobRecord)], [i for i in items if isinstance(i, ParseIssue)]


def test_condor_q_running_job_pairs_cumulative_cpu_with_wall(sample):
    recs, issues = _all(sample("htcondor-condor_q-json-running-job-unattributed.txt"))
    assert issues == []
    (r,) = recs
    assert r.job_id == "3472942.81"
    assert r.host == "notch009.int.chpc.utah.edu"  # slot1_6@glidein_...@ stripped
    assert r.cores == 1
    assert r.cpu_seconds == 38388.0 + 347.0  # Cumulative*, not RemoteUserCpu 1452 (the trap)
    # RemoteWallClockTime of past runs + the current run (ServerTime - JobCurrentStartDate)
    assert r.wall_seconds == 37327.0 + (1617117434 - 1617115471)
    assert r.efficiency == pytest.approx(38735 / 39290)
    assert r.status == "running"
    assert r.line == 5


def test_condor_q_sample_trap_would_give_nonsense():
    # pairing the current-run CPU with all-runs wall would claim 4% efficiency
    assert (1452 + 19) / 37327 < 0.04


def test_cms_jobmonitoring_document_matches_cms_cpueff(sample):
    """The JobMonitoring excerpt is `grep -n` output; rebuild the ad from its lines."""
    lines = [l for l in open(sample("cms-htcondor-es-JobMonitoring-json-excerpt.txt")) if not l.startswith("#")]
    body = ",".join(l.split(":", 1)[1].strip().rstrip(",") for l in lines if l.strip())
    ad = json.loads("{" + body + "}")
    ad.update(ClusterId=1, ProcId=0, JobStatus=4)
    r = record_from_ad(ad)
    cms = ad["CpuEff"] / 100  # 95.5166 from RemoteSys+User / RemoteWallClockTime / RequestCpus
    assert r.cpu_seconds == pytest.approx(98.1 + 4312.1)
    assert r.wall_seconds == 4617
    assert r.efficiency == pytest.approx(cms, abs=0.001)
    assert r.status == "completed" and r.exit_code == 0
    assert r.read_mb == pytest.approx(682.977179)


def test_sacct_sample(sample):
    recs, issues = _all(sample("slurm-sacct-P-green-algorithms-sample.txt"))
    assert issues == []
    by = {r.job_id: r for r in recs}
    assert len(recs) == 8
    r = by["55236675"]
    assert (r.cores, r.wall_seconds, r.status) == (32, 3 * 3600 + 30, "timeout")
    assert r.cpu_seconds == 0.0 and r.efficiency == 0.0  # TotalCPU 00:00:00 in the sample
    assert by["55176141"].wall_seconds == 4 * 3600 + 25
    assert by["57365466"].status == "failed"
    assert by["55236694"].status == "completed"
    assert by["62064000"].status == "cancelled" and by["62064000"].efficiency is None
    assert by["6733976_[0-3]"].status == "cancelled" and by["6733976_[0-3]"].cores is None


def test_fjr_sample(sample):
    path = sample("cmssw-fjr-performance-WMCore-XrdSiteStatistics.xml")
    recs, issues = _all(path)
    assert issues == []
    (r,) = recs
    assert r.cpu_seconds == 155.483 and r.wall_seconds == 153.001 and r.cores == 2
    assert r.efficiency == pytest.approx(155.483 / (153.001 * 2))
    assert r.events == 3 and r.status == "completed"
    with open(path, "rb") as f:
        rep = fjr.parse_fjr(f, path)
    p = rep.profile
    # WMCore: the first Timing-<4 letters>-read(v)-numOperations that is non-zero, in document order
    assert p.read_method == "file"
    assert p.read_total_mb == pytest.approx(5.43017)
    assert p.read_msecs == pytest.approx(61.8403)
    assert p.read_ops == 4680
    assert p.read_mb_per_sec == pytest.approx(5.43017 / 61.8403 * 1000)
    assert set(p.sites) == {"roma1.infn.it", "T2_IT_BARI", "recas.ba.infn.it", "cern.ch"}
    assert p.sites["cern.ch"] == {"mb": pytest.approx(0.251508), "ms": pytest.approx(48.8356), "ops": 1.0}
    assert p.remote_read_ops == 72 + 2 + 99 + 5 + 101 + 15 + 0 + 1
    assert rep.storage["Timing-tstoragefile-readActual-totalMegabytes"] == 104.821
