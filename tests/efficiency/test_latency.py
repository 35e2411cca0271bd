import json

import pytest
from typer.testing import CliRunner

from advisor.efficiency import fjr, latency
from advisor.efficiency.cli import app


def test_anchors_hold_for_reference_job():
    assert latency.loss(9) == pytest.approx(0.02)
    assert latency.loss(150) == pytest.approx(0.15)
    assert latency.loss(50) > latency.loss(9)
    assert latency.T0_SECONDS * 1000 == pytest.approx(9.44, abs=0.01)


def test_fjr_profile(sample):
    path = sample("cmssw-fjr-performance-WMCore-XrdSiteStatistics.xml")
    with open(path, "rb") as f:
        prof = latency.profile_from_fjr(fjr.parse_fjr(f, path), path)
    assert prof.ops_per_second == pytest.approx(295 / 153.001)
    # more remote reads per second than the reference job: a larger loss at the same RTT
    assert latency.loss(150, prof.ops_per_second) > 0.15


def test_whatif_cli_json(sample):
    r = CliRunner().invoke(app, ["whatif", "--rtt-ms", "9", "--rtt-ms", "fnal=150", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    est = d["estimates"]
    assert est[0]["loss"] == pytest.approx(0.02) and est[0]["recommend_cache"] is False
    assert est[1]["path"] == "fnal" and est[1]["loss"] == pytest.approx(0.15) and est[1]["recommend_cache"] is True
    f = d["findings"][0]
    assert f["rule_id"] == "EFF-LATENCY-CACHE" and f["status"] == "fail" and f["hosts"] == ["fnal"]
    r = CliRunner().invoke(app, ["whatif", "--rtt-ms", "150", "--profile",
                                 sample("cmssw-fjr-performance-WMCore-XrdSiteStatistics.xml"), "--json"])
    d = json.loads(r.output)
    assert d["profile"]["origin"] == "fjr" and d["estimates"][0]["efficiency"] < 0.508


def test_whatif_threshold_and_errors(tmp_path):
    r = CliRunner().invoke(app, ["whatif", "--rtt-ms", "150", "--threshold", "0.2", "--json"])
    assert json.loads(r.output)["estimates"][0]["recommend_cache"] is False
    r = CliRunner().invoke(app, ["whatif", "--rtt-ms", "abc"])
    assert r.exit_code == 1 and r.output.count("\n") == 1 and "--rtt-ms" in r.output
    bad = tmp_path / "x.xml"
    bad.write_text("<FrameworkJobReport><PerformanceReport>\n<oops")
    r = CliRunner().invoke(app, ["whatif", "--rtt-ms", "9", "--profile", str(bad)])
    assert r.exit_code == 1 and "x.xml" in r.output and "Traceback" not in r.output
