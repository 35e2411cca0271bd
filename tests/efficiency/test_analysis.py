import pytest

from advisor.efficiency.analysis import Summary, site_group_mapper
from advisor.efficiency.aggregate_findings import (baseline_finding, failed_wall_finding, io_bound_finding,
                                          load_scan, related_scan_findings)
from advisor.efficiency.records import EfficiencyInputError, JobRecord
from advisor.site.model import Host, Site


def job(i, host, events, cpu_per_event, wall_per_event, status="completed", cores=1):
    return JobRecord(job_id=str(i), host=host, cores=cores, cpu_seconds=cpu_per_event * events,
                     wall_seconds=wall_per_event * events, status=status, events=events)


def ifca_like(slow_hosts=("wn02",), n=10):
    """Short jobs near 80% everywhere; jobs > 1000 events take ~2x the wall on the slow hosts."""
    recs = []
    i = 0
    for events, bins_wall in ((100, 1.25), (1000, 1.25), (10000, 1.25), (100000, 1.25)):
        for h in ("wn01", "wn02", "wn03"):
            for k in range(n):
                w = bins_wall * (2.2 if (h in slow_hosts and events > 1000) else 1.0)
                recs.append(job(i, h, events - k, 1.0, w))
                i += 1
    return recs


def test_distributions_per_bin_host_group():
    s = Summary().extend(ifca_like())
    d = s.to_dict()
    assert d["records"] == 120 and d["length_kind"] == "events"
    bins = {r["bin"]: r for r in d["by_length"]}
    assert set(bins) == {"<=100", "101-1000", "1001-10000", "10001-100000"}
    assert bins["<=100"]["median"] == pytest.approx(0.8, abs=0.005)
    assert bins["<=100"]["cpu_per_event_median"] == pytest.approx(1.0, rel=0.01)
    assert d["by_host"]["wn01"]["median"] == pytest.approx(0.8, abs=0.005)
    assert d["by_host"]["wn02"]["p10"] < 0.4
    assert d["by_group"]["wn"]["count"] == 120  # host prefix without a site file
    assert d["efficiency"]["count"] == 120


def test_io_bound_signature_names_hosts_and_scan_findings(fix):
    s = Summary().extend(ifca_like())
    scan = load_scan(fix("scan-CONSTRUCTED.json"))
    f = io_bound_finding(s, scan)
    assert f.status.value == "fail" and f.rule_id == "EFF-IO-BOUND"
    assert f.hosts == ["wn02"]
    rel = {r["rule_id"] for r in f.observed["related_findings"]}
    assert rel == {"MESH-SLOW-PATH", "NET-RMEM-MAX"}  # failed, on wn02 (not the passed one, not wn09)
    assert f.evidence[0].split()[:2] == ["events", "jobs"]
    assert any("MESH-SLOW-PATH" in e for e in f.evidence)


def test_io_bound_all_hosts_slow_without_scan():
    s = Summary().extend(ifca_like(slow_hosts=("wn01", "wn02", "wn03")))
    f = io_bound_finding(s)
    assert f.status.value == "fail" and f.hosts == ["wn01", "wn02", "wn03"]
    assert f.observed["relative_drop"] == pytest.approx(1 - 1 / 2.2, abs=0.01)
    assert f.severity.value == "high"


def test_no_signature_when_cpu_per_event_grows():
    recs = [job(i, "wn01", ev - k, cpe, cpe / 0.8 * (1.5 if ev > 1000 else 1))
            for i, (ev, cpe) in enumerate(((100, 1.0), (1000, 1.0), (10000, 2.0), (100000, 3.0))) for k in range(10)]
    f = io_bound_finding(Summary().extend(recs))
    assert f.status.value == "pass" and "CPU per event" in f.message


def test_healthy_site_passes_and_wall_bins_not_applicable():
    assert io_bound_finding(Summary().extend(ifca_like(slow_hosts=()))).status.value == "pass"
    recs = [JobRecord(str(i), "wn01", 1, 800.0, 1000.0, "completed") for i in range(20)]
    s = Summary().extend(recs)
    assert s.length_kind == "wall" and s.to_dict()["by_length"][0]["bin"] == "10m-1h"
    assert io_bound_finding(s).status.value == "not_applicable"


def test_failed_wall():
    recs = [JobRecord("1", "wn01", 4, 100.0, 3600.0, "failed"), JobRecord("2", "wn02", 4, 4000.0, 3600.0, "completed"),
            JobRecord("3", "wn01", 1, 10.0, 3600.0, "removed")]
    f = failed_wall_finding(Summary().extend(recs))
    assert f.status.value == "fail" and f.hosts == ["wn01"]
    assert f.observed["wasted_share"] == pytest.approx(5 / 9, abs=1e-4)
    assert f.observed["wasted_core_hours"] == 5.0


def test_baseline_and_target():
    ours = Summary().extend(ifca_like(slow_hosts=("wn01", "wn02", "wn03")))
    theirs = Summary().extend(ifca_like(slow_hosts=()))
    f = baseline_finding(ours, theirs)
    assert f.status.value == "fail" and f.observed["ratio"] < 0.9
    assert any("x0.4" in e or "x0.5" in e for e in f.evidence)
    assert baseline_finding(theirs, target=0.75).status.value == "pass"
    assert baseline_finding(ours, target=0.75).status.value == "fail"


def test_site_groups():
    site = Site(name="s", hosts=[Host(name="wn01", groups=["workers"]), Host(name="gpfs01", groups=["gpfs"])])
    s = Summary(site_group_mapper(site)).extend(
        [JobRecord("1", "wn01.example.org", 1, 50.0, 100.0, "completed"), JobRecord("2", "other", 1, 50.0, 100.0, "completed")])
    assert set(s.to_dict()["by_group"]) == {"workers", "(not in site)"}


def test_related_by_subject():
    scan = [{"rule_id": "MESH", "hosts": [], "status": "fail", "subject": "gpfs01->wn05"}]
    assert related_scan_findings(scan, ["wn05.example.org"])[0]["rule_id"] == "MESH"


def test_bad_scan(tmp_path):
    p = tmp_path / "scan.json"
    p.write_text("{\n  \"findings\": [1,\n")
    with pytest.raises(EfficiencyInputError, match=r"scan.json:\d+: not JSON"):
        load_scan(str(p))
    p.write_text('{"findings": [{"hosts": []}]}')
    with pytest.raises(EfficiencyInputError, match="rule_id"):
        load_scan(str(p))


def test_quantiles_one_sort_match_the_definition():
    """quantiles(*qs): type 7 (linear between the ranks floor(h) and floor(h) + 1, h = q * (n - 1)) over the
    values while the histogram keeps them, else over the values of their bins."""
    import random

    from advisor.efficiency.analysis import Histogram

    def type7(values, q):
        v = sorted(values)
        h = q * (len(v) - 1)
        lo = int(h)
        return v[lo] + (h - lo) * (v[min(lo + 1, len(v) - 1)] - v[lo])

    rnd = random.Random(3)
    assert Histogram().quantiles(0.5, 0.1) == [None, None]
    for _ in range(200):
        h = Histogram(log=rnd.random() < 0.3)
        values = [rnd.choice((0.0, rnd.uniform(0, 1.5), rnd.uniform(1e-3, 1e4))) for _ in range(rnd.randint(1, 40))]
        for v in values:
            h.add(v)
        binned = [h._value(k) for k, n in h.bins.items() for _ in range(n)]
        for q in (0.0, 0.1, 0.5, 0.9, 1.0):
            assert h.quantile(q) == pytest.approx(type7(values, q), rel=1e-12, abs=1e-12)
        assert h.quantiles(0.5, 0.1, 0.9) == [h.quantile(0.5), h.quantile(0.1), h.quantile(0.9)]
        h.exact = None  # as a histogram whose values were dropped (more than EXACT_LIMIT)
        for q in (0.0, 0.1, 0.5, 0.9, 1.0):
            assert h.quantile(q) == pytest.approx(type7(binned, q), rel=1e-12, abs=1e-12)


def test_to_dict_groups_and_hosts_from_the_same_merge():
    s = Summary(group_of=lambda h: ["g" + h[-1], "all"])
    for i in range(60):
        s.add(JobRecord(job_id=str(i), host=f"wn{i % 4}", cores=1 + i % 3, cpu_seconds=50.0 + i,
                        wall_seconds=100.0 + 30 * i, status="completed" if i % 5 else "failed"))
    d = s.to_dict()
    assert d["by_host"] == {k: v.stats() for k, v in sorted(s.hosts.items())}
    assert d["by_group"] == {k: v.stats() for k, v in sorted(s.groups.items())}
    assert d["by_group"]["all"]["count"] == d["efficiency"]["count"] == 60
