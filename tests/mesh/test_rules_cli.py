"""The mesh rules through the rule engine (IFCA-shaped results) and the mesh CLI."""

from __future__ import annotations

import json

from advisor.cli.root import main
from advisor.model.facts import FactSet, HostFacts, ProbeResult, ProbeStatus
from advisor.rules.engine import evaluate
from advisor.site.model import Site
from tests.support.ifca_mesh import GPFS, WN, ifca_facts, ifca_paths


def ifca_factset(paths=None) -> tuple[FactSet, Site]:
    groups = {**{g: ["gpfs"] for g in GPFS}, **{w: ["wn"] for w in WN}, "se01": ["doors"]}
    site = Site.model_validate({"name": "ifca", "hosts": [{"name": h, "groups": g} for h, g in groups.items()]})
    fs = FactSet(site="ifca", mesh={"rounds": 6, "paths": paths if paths is not None else ifca_paths()})
    for h, f in ifca_facts().items():
        fs.hosts[h] = HostFacts(name=h, groups=groups[h], probes={
            k: ProbeResult(probe=k, status=ProbeStatus.ok, facts=v) for k, v in f.items()})
    return fs, site


def by_rule(findings, status="fail"):
    out = {}
    for f in findings:
        if f.status.value == status:
            out.setdefault(f.rule_id, []).append(f)
    return out


def test_ifca_findings():
    fs, site = ifca_factset()
    ev = evaluate(fs, site, rule_filter=lambda r: r.id.startswith("MESH-"))
    fails = by_rule(ev.findings)
    assert sorted(f.subject for f in fails["MESH-PATH-SLOW"]) == sorted(f"{g}->{w}" for g in GPFS for w in WN)
    asym = fails["MESH-ASYMMETRY"]
    assert sorted(f.hosts[0] for f in asym) == GPFS
    for f in asym:
        assert "tcp_sack=0" in f.message and f.severity.value == "high"
        assert [(c.host, c.key, c.runtime, c.target) for c in f.changes if c.adapter == "sysctl"] == [
            (f.hosts[0], "net.ipv4.tcp_sack", "0", "1")]
        assert "IFCA" in f.rationale
    assert len(fails["MESH-LOSS"]) == 8
    failed = fails["MESH-TEST-FAILED"]
    assert sorted(f.subject for f in failed) == ["gpfs01->gpfs02", "gpfs02->gpfs01"]
    assert all("gpfs02" in f.message and "firewall" in f.message for f in failed)
    # the cut is gpfs02's firewall: the change names that host and the rule as the scan saw it
    assert failed[0].changes and {(c.host, c.adapter, c.target) for c in failed[0].changes} == {("gpfs02", "firewall", "absent")}
    assert "MESH-BUFFER-LIMITED" not in fails
    passes = by_rule(ev.findings, "pass")
    assert len(passes["MESH-PATH-SLOW"]) == len(fs.mesh["paths"]) - 10


def test_no_mesh_no_findings():
    fs, site = ifca_factset()
    fs.mesh = None
    ev = evaluate(fs, site, rule_filter=lambda r: r.id.startswith("MESH-"))
    assert ev.findings == []


def test_profile_var_changes_threshold():
    fs, site = ifca_factset()
    site.vars["mesh_min_ratio"] = 0.2  # 250-450 Mb/s of 1 Gb/s is then acceptable
    ev = evaluate(fs, site, rule_filter=lambda r: r.id.startswith("MESH-"))
    assert "MESH-PATH-SLOW" not in by_rule(ev.findings)


def _site_file(tmp_path, pairs="[{a: g}]", port=5901):
    p = tmp_path / "lo.yml"
    p.write_text(f"""name: lo
transport: local
hosts:
  - {{name: h1, address: 127.0.0.1, groups: [g], link_rate: 1gbit}}
  - {{name: h2, address: 127.0.0.1, groups: [g], link_rate: 1gbit}}
  - {{name: h3, address: 127.0.0.1, groups: [g], link_rate: 1gbit}}
mesh: {{duration: 1, omit: 0, port_base: {port}, pairs: {pairs}}}
""")
    return p


def test_cli_plan_json(tmp_path, capsys):
    assert main(["mesh", "plan", "--site", str(_site_file(tmp_path)), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["rounds"] == 3 and doc["methods"] == ["circle"] and len(doc["paths"]) == 6


def test_cli_plan_table(tmp_path, capsys):
    assert main(["mesh", "plan", "--site", str(_site_file(tmp_path))]) == 0
    assert "<->" in capsys.readouterr().out


def test_cli_errors_are_one_line(tmp_path, capsys):
    assert main(["mesh", "plan", "--site", str(_site_file(tmp_path, pairs="[{a: nosuch}]"))]) == 1
    e = capsys.readouterr().err.strip()
    assert e.startswith("storadvise: error:") and "nosuch" in e and "\n" not in e
    nomesh = tmp_path / "n.yml"
    nomesh.write_text("name: n\nhosts: [{name: a}]\n")
    assert main(["mesh", "run", "--site", str(nomesh)]) == 1
    assert "no 'mesh.pairs'" in capsys.readouterr().err
    assert main(["mesh", "run", "--site", str(_site_file(tmp_path)), "--parallel", "0"]) == 1


def test_cli_run_json_real_iperf3(tmp_path, capsys):
    rc = main(["mesh", "run", "--site", str(_site_file(tmp_path, port=5911)), "--json", "--parallel", "1"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0 and doc["rounds"] == 3
    assert all(p["status"] == "ok" and p["measured_bps"] > 0 for p in doc["paths"])


def test_ifca_lab_shape_rate_limited_gpfs_pair():
    """The lab's IFCA firewall is a hashlimit DROP on gpfs02 for packets from gpfs01: that path is
    slow rather than cut; gpfs01 is then blamed for 5 slow paths, and the slow gpfs01->gpfs02
    finding names gpfs02's limiting rule."""
    from tests.support.ifca_mesh import path
    from advisor.mesh.results import judge_paths

    paths = [p for p in ifca_paths() if {p["src"], p["dst"]} != set(GPFS)]
    paths += [path("gpfs01", "gpfs02", 410, retr=2000), path("gpfs02", "gpfs01", 930)]
    judge_paths(paths)
    fs, site = ifca_factset(paths)
    limit = {"backend": "iptables", "family": "ip", "table": "filter", "chain": "INPUT", "verdict": "drop",
             "limit": True, "addresses": ["198.18.0.11/32"], "interfaces": [],
             "text": "-A INPUT -s 198.18.0.11/32 -p tcp -m hashlimit --hashlimit-above 60000/sec -j DROP"}
    fs.hosts["gpfs02"].probes["firewall"].facts = {"rules": [limit], "chains": []}
    ev = evaluate(fs, site, rule_filter=lambda r: r.id.startswith("MESH-"))
    fails = by_rule(ev.findings)
    asym = {f.hosts[0]: f for f in fails["MESH-ASYMMETRY"]}
    assert set(asym) == set(GPFS) and "tcp_sack=0 on gpfs01" in asym["gpfs01"].message
    assert "5 slow path(s)" in asym["gpfs01"].observed
    (slow_pair,) = [f for f in fails["MESH-PATH-SLOW"] if f.subject == "gpfs01->gpfs02"]
    assert "gpfs02 has 1 firewall rule(s)" in slow_pair.message and "hashlimit" in slow_pair.evidence[1]
    assert "MESH-TEST-FAILED" not in fails
