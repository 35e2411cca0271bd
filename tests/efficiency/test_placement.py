"""`efficiency what-if` from a scan report's mesh RTTs (report shape of docs/report-schema.md)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from advisor.cli.root import app
from advisor.efficiency import latency
from advisor.efficiency.placement import what_if

runner = CliRunner()


def _path(src, dst, min_rtt_ms, rtt_ms=None, status="ok"):
    return {"src": src, "dst": dst, "status": status, "min_rtt_us": int(min_rtt_ms * 1000),
            "rtt_us": int((rtt_ms or min_rtt_ms * 3) * 1000), "measured_bps": 9e8}


def _report(efficiency=None):
    hosts = [{"name": "wn01", "roles": ["worker"]}, {"name": "wn02", "roles": ["worker"]},
             {"name": "se-local", "roles": ["storage"]}, {"name": "xcache01", "roles": ["cache"]},
             {"name": "se-remote", "roles": ["storage"]}]
    paths = []
    for w in ("wn01", "wn02"):
        paths += [_path(w, "se-local", 0.2), _path("se-local", w, 0.3), _path(w, "xcache01", 9.0),
                  _path(w, "se-remote", 150.0), _path("se-remote", w, 151.0)]
    paths += [_path("wn01", "wn02", 0.1), _path("se-local", "se-remote", 140.0),
              {"src": "wn02", "dst": "se-remote", "status": "failed", "min_rtt_us": None, "rtt_us": None}]
    return {"site": "t", "hosts": hosts, "mesh": {"paths": paths}, "efficiency": efficiency}


def test_losses_anchor_on_pic_ciemat_and_recommend():
    res = what_if(_report(), latency.reference_profile())
    by = {r["source"]: r for r in res["sources"]}
    assert by["xcache01"]["rtt_ms"] == 9.0 and abs(by["xcache01"]["loss"] - 0.02) < 0.001
    assert by["se-remote"]["worker_paths"] == 4 and by["se-remote"]["rtt_ms"] == 150.5  # min RTT, not loaded rtt
    assert abs(by["se-remote"]["loss"] - 0.15) < 0.002
    assert by["se-remote"]["via_cache"]["cache"] == "xcache01" and by["se-remote"]["via_cache"]["gain"] > 0.12
    assert res["recommend_cache_for"] == ["se-remote"]  # not the local SE, not the cache itself
    assert by["se-local"]["loss"] < 0.015


def test_profile_from_the_scans_active_test_and_cli(tmp_path):
    eff = {"mean": 0.8, "hosts": {"wn01": {"clients": 2, "mb_read": 400.0, "cpu_seconds": 50.0, "efficiency": 0.8}}}
    p = tmp_path / "scan.json"
    p.write_text(json.dumps(_report(eff)))
    r = runner.invoke(app, ["efficiency", "what-if", "--scan", str(p), "--json"])
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    assert res["profile"]["origin"] == "active_test"
    assert abs(res["profile"]["ops_per_second"] - 4.0 * 0.8 / latency.DEFAULT_MB_PER_READ) < 1e-3
    assert res["sources"][1]["efficiency"] < 0.8
    r = runner.invoke(app, ["efficiency", "what-if", "--scan", str(p), "--source", "nowhere"])
    assert r.exit_code == 1 and "no measured worker path to nowhere" in r.output
    p.write_text(json.dumps({"site": "t", "hosts": [], "mesh": None}))
    r = runner.invoke(app, ["efficiency", "what-if", "--scan", str(p)])
    assert r.exit_code == 1 and "no mesh paths" in r.output
