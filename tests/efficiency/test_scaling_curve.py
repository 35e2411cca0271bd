"""The scaling curve's pure parts: a point from job outputs, the knee, the protocol table, spread."""

from __future__ import annotations

import pytest

from advisor.efficiency.protocols import EfficiencyTestError, parse_protocols
from advisor.efficiency.scaling_curve import compare_rows, find_knee, point_summary
from advisor.efficiency.scaling_run import spread

MIB = 1 << 20


def pt(clients, rate, eff, protocol="xrootd"):
    return {"clients": clients, "protocol": protocol, "rate_per_client_bps": rate, "efficiency": eff,
            "runtime_per_client_s": 1.0}


def test_knee_found_on_rate_drop():
    k = find_knee([pt(1, 100e6, 0.9), pt(5, 90e6, 0.85), pt(15, 80e6, 0.8), pt(30, 60e6, 0.7)])
    # 60 < 0.75 x 100: 30 clients degraded, the knee is 15
    assert (k["status"], k["clients"], k["first_degraded_clients"], k["reason"]) == ("found", 15, 30, "rate")
    assert k["baseline_rate_per_client_bps"] == 100e6


def test_knee_found_on_efficiency_and_order_independent():
    k = find_knee([pt(8, 99e6, 0.4), pt(1, 100e6, 0.9), pt(4, 98e6, 0.6)])
    assert (k["clients"], k["first_degraded_clients"], k["reason"]) == (4, 8, "efficiency")


def test_knee_not_reached_and_degraded_at_start_and_no_data():
    k = find_knee([pt(1, 100e6, 0.9), pt(2, 80e6, 0.9)])
    assert k["status"] == "not-reached" and k["clients"] is None and k["held_up_to"] == 2
    k = find_knee([pt(1, 100e6, 0.3), pt(2, 90e6, 0.3)])
    assert k["status"] == "degraded-at-start" and k["clients"] is None and k["first_degraded_clients"] == 1
    assert find_knee([{"clients": 1, "rate_per_client_bps": None, "efficiency": None}])["status"] == "no-data"


def test_knee_bounds_are_parameters():
    pts = [pt(1, 100e6, 0.9), pt(2, 85e6, 0.9)]
    assert find_knee(pts, rate_drop=0.25)["status"] == "not-reached"
    assert find_knee(pts, rate_drop=0.1)["clients"] == 1
    with pytest.raises(ValueError):
        find_knee(pts, rate_drop=1.5)


def _client(wall, cpu, nbytes, start):
    return {"cpu_seconds": cpu, "wall_seconds": wall, "bytes": nbytes, "events": nbytes // 65536,
            "read_wait_seconds": wall - cpu, "compute_seconds": cpu, "start": start}


def test_point_summary_over_two_nodes():
    outs = [("wn01", {"clients": [_client(2.0, 1.0, 16 * MIB, 100.0), _client(4.0, 1.0, 16 * MIB, 100.0)],
                      "cpu_count": 2, "start_late_s": 0.1}),
            ("wn02", {"clients": [_client(2.0, 2.0, 16 * MIB, 101.0)], "cpu_count": 2})]
    p = point_summary(outs, 3, "xcache", 16.0)
    assert p["clients"] == 3 and p["nodes"] == 2 and p["hosts"] == ["wn01", "wn02"]
    assert p["clients_per_node"] == {"wn01": 2, "wn02": 1}
    assert p["runtime_per_client_s"] == pytest.approx(8 / 3)
    bits = 16 * MIB * 8
    assert p["rate_per_client_bps"] == pytest.approx((bits / 2 + bits / 4 + bits / 2) / 3)
    assert p["efficiency"] == pytest.approx((0.5 + 0.25 + 1.0) / 3)
    # span: from the first start (100) to the last end (104)
    assert p["aggregate_read_mbps"] == pytest.approx(3 * bits / 1e6 / 4)
    assert p["start_late_s"] == 0.1


def test_compare_rows_one_row_per_count():
    points = [pt(1, 1, 1, "xrootd"), pt(2, 1, 1, "xrootd"), pt(1, 2, 1, "xcache"), pt(4, 2, 1, "xcache")]
    protocols, rows = compare_rows(points)
    assert protocols == ["xrootd", "xcache"]
    assert [r["clients"] for r in rows] == [1, 2, 4]
    assert rows[1]["xcache"] is None and rows[2]["xrootd"] is None
    assert rows[0]["xcache"]["rate_per_client_bps"] == 2


def test_spread_round_robin():
    assert spread(5, 2) == [3, 2]
    assert spread(1, 3) == [1]
    assert spread(60, 3) == [20, 20, 20]
    assert sum(spread(61, 4)) == 61


def test_parse_protocols():
    assert parse_protocols("xrootd, XCache,xrootd") == ["xrootd", "xcache"]
    assert parse_protocols(None) is None
    with pytest.raises(EfficiencyTestError):
        parse_protocols("nfs")


def _site(**ext):
    from advisor.site.model import Site

    return Site(name="s", hosts=[
        {"name": "xrd01", "address": "10.0.0.1", "roles": ["storage"],
         "vars": {"xrootd_port": 11094, "xrootd_export": "/data"}},
        {"name": "cache01", "address": "10.0.0.2", "roles": ["cache"]},
        {"name": "wn01", "roles": ["worker"]},
    ], extensions={"efficiency": ext} if ext else {})


def test_protocol_sources_defaults_and_settings():
    from advisor.efficiency.active_plan import protocol_sources
    from advisor.efficiency.protocols import job_spec

    src = protocol_sources(_site(), ["xrootd", "xcache"], {}, None)
    assert src["xrootd"]["url"] == "root://10.0.0.1:11094//data"
    # the cache: its own port default, the origin's directory
    assert src["xcache"]["url"] == "root://10.0.0.2:1094//data" and src["xcache"]["host"] == "cache01"
    assert job_spec(src["xcache"]) == "xrd:root://10.0.0.2:1094//data"
    cfg = {"xcache": {"host": "cache01", "port": 2094, "path": "/store/mc"}}
    assert protocol_sources(_site(), ["xcache"], cfg, None)["xcache"]["url"] == "root://10.0.0.2:2094//store/mc"
    assert protocol_sources(_site(), ["posix"], {}, "path:/gpfs/t")["posix"]["path"] == "/gpfs/t"
    assert protocol_sources(_site(), ["tcp"], {}, None)["tcp"]["host"] == "xrd01"


def test_posix_defaults_to_the_origins_local_file():
    from advisor.efficiency.active_plan import protocol_sources

    site = _site()
    site.host("xrd01").vars["xrootd_local_file"] = "/run/lab/hosts/xrd01/xrootd/data/store/file0000"
    assert protocol_sources(site, ["posix"], {}, None)["posix"]["path"] == "/run/lab/hosts/xrd01/xrootd/data/store/file0000"
    # an explicit path still wins
    assert protocol_sources(site, ["posix"], {}, "path:/gpfs/t")["posix"]["path"] == "/gpfs/t"
    site.host("xrd01").vars["xrootd_local_file"] = "relative/file"
    with pytest.raises(EfficiencyTestError, match="vars.xrootd_local_file: not an absolute"):
        protocol_sources(site, ["posix"], {}, None)


@pytest.mark.parametrize("cfg,source,msg", [
    ({}, None, "posix needs a file"),
    ({"xcache": {"path": "/a/../b"}}, None, "not an absolute directory"),
    ({"xcache": {"port": 70000}}, None, "not a port"),
    ({"xcache": {"host": "nope"}}, None, "xcache.host"),
])
def test_protocol_sources_refuse_bad_settings(cfg, source, msg):
    from advisor.efficiency.active_plan import protocol_sources

    protos = ["posix"] if msg.startswith("posix") else ["xcache"]
    with pytest.raises(EfficiencyTestError, match=msg.replace("(", r"\(")):
        protocol_sources(_site(), protos, cfg, source)


@pytest.mark.parametrize("args,msg", [
    (["--protocol", "nfs"], "--protocol: protocol 'nfs'"),
    (["--plot", "x.pdf"], "--plot x.pdf: give a .png or .svg"),
    (["--knee-drop", "1.5"], "--knee-drop 1.5"),
])
def test_cli_usage_errors(args, msg):
    import subprocess
    import sys

    cp = subprocess.run([sys.executable, "-m", "advisor.cli.root", "efficiency", "test", "--site", "nosuchsite", *args],
                        capture_output=True, text=True, timeout=60)
    assert cp.returncode == 1, (cp.returncode, cp.stderr)
    assert msg in cp.stderr and "Traceback" not in cp.stderr and len(cp.stderr.strip().splitlines()) == 1
