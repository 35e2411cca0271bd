"""The whole loop on the ifca lab, as the README demo runs it: scan -> plan -> ansible-playbook ->
verify. Asserts every high fault of the scenario is fixed, a second apply changes nothing, and
storage->worker and gpfs01->gpfs02 throughput recover. Needs root (CI is root)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.usefixtures("ansible_playbook")


BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[2]


def run(*argv, cwd=None, check=True):
    cp = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=1800)
    if check and cp.returncode not in (0, 2, 3):
        raise AssertionError(cp.stdout[-3000:] + cp.stderr[-3000:])
    return cp


def check_before(report: dict) -> None:
    """The mesh of the faulty site (issue 4's "done when"): storage->worker degraded, the reverse
    and the other groups fine, gpfs01->gpfs02 cut by the firewall, and the asymmetry diagnosis
    naming tcp_sack=0 on both GPFS servers."""
    by = {(p["src"], p["dst"]): p for p in report["mesh"]["paths"]}
    gpfs, wns = ("gpfs01", "gpfs02"), ("wn01", "wn02", "wn03", "wn04")

    def ratio(s: str, d: str) -> float:
        p = by[(s, d)]
        return 0.0 if p["status"] != "ok" else p["measured_bps"] / p["expected_bps"]

    for g in gpfs:
        for w in wns:
            assert ratio(g, w) < 0.5, by[(g, w)]
            assert ratio(w, g) >= 0.8, by[(w, g)]
        assert ratio("se01", g) >= 0.8 and ratio(g, "se01") >= 0.8, (by[("se01", g)], by[(g, "se01")])
    for a in wns:
        for b in wns:
            if a != b:
                assert ratio(a, b) >= 0.8, by[(a, b)]
    assert ratio("gpfs01", "gpfs02") < 0.7, by[("gpfs01", "gpfs02")]
    asym = [f for f in report["findings"] if f["rule_id"] == "MESH-ASYMMETRY" and f["status"] == "fail"]
    named = {h for f in asym if "tcp_sack" in f"{f.get('message')} {f.get('observed')}" for h in f["hosts"]}
    assert set(gpfs) <= named, [(f["hosts"], f.get("message")) for f in asym]
    check_causes(report)


def check_causes(report: dict) -> None:
    """The diagnosis (docs/diagnosis.md): a handful of causes, worst first, each on the host that has
    the fault: SACK off on both GPFS servers (predicted near line rate on the lossy LAN paths), the
    firewall on gpfs02, and the loss towards the workers as a repair by hand with a small gain
    after the plan; the GPFS and SAN baselines are hygiene; no clean host is blamed."""
    causes = report["causes"]
    assert 2 <= len(causes) <= 6, [c["title"] for c in causes]
    sack = [c for c in causes if any(ch["key"] == "net.ipv4.tcp_sack" for ch in c["changes"])]
    assert len(sack) == 1 and sack[0]["hosts"] == ["gpfs01", "gpfs02"] and sack[0]["kind"] == "change"
    assert causes[0]["id"] == sack[0]["id"], [c["title"] for c in causes]
    # SACK on a 0.5%-loss LAN path: Mathis with SACK at the flow's sub-millisecond RTT is above the link
    lan = sorted(p["after"] for p in sack[0]["predicted"] if p["metric"] == "throughput" and p["unit"] == "bps"
                 and p["subject"].startswith("gpfs") and "->wn" in p["subject"])
    assert len(lan) >= 6 and lan[len(lan) // 2] >= 0.85e9, sack[0]["predicted"]
    fw = [c for c in causes if any(ch["adapter"] == "firewall" for ch in c["changes"])]
    assert [c["hosts"] for c in fw] == [["gpfs02"]]
    loss = [c for c in causes if c["kind"] == "by_hand"]
    assert loss and set(loss[0]["hosts"]) <= {"gpfs01", "gpfs02"} and loss[0]["gain"] is not None and loss[0]["gain"] < 1
    # the blamed hosts' NIC counters over the tests' own windows: none rose (the worker switch drops the frames), so
    # the cause names no NIC and says why
    assert "No error or drop counter of gpfs0" in loss[0]["action"], loss[0]["action"]
    assert "rose during the tests: the frames are lost beyond the hosts' NICs" in loss[0]["action"], loss[0]["action"]
    for c in causes:
        assert not {"se01"} & set(c["hosts"]) and all(0 <= c["confidence"] <= 1 for c in causes)
    hygiene = {h["rule_id"] for h in report["hygiene"]}
    assert {"GPFS-PAGEPOOL-CLIENT", "SAN-READ-PREFETCH"} <= hygiene, hygiene
    assert {p["subject"] for p in report["plan_prediction"] if p["metric"] == "throughput"} == {
        f"{p['src']}->{p['dst']}" for p in report["mesh"]["paths"] if p["status"] == "ok"}


def console_lines(scan: Path) -> int:
    """The default console report of the scan at 120 columns, as ``storadvise scan`` prints it: the
    report, then the mesh grid (the slow paths are the causes' to name)."""
    from rich.console import Console

    from advisor.mesh.render import render_grid
    from advisor.report.console import render_scan
    from advisor.report.model import load_report

    report = load_report(scan)
    with open(os.devnull, "w") as sink:
        console = Console(width=120, record=True, file=sink)
        render_scan(report, console)
        render_grid(report.mesh, console, slow_paths=not report.causes)
        return len(console.export_text().splitlines())


def report_schema_errors(report: dict) -> list[str]:
    from tests.support.report_checks import errors

    return errors(report)


def ndjson_key_types(docs: list[dict]) -> dict[str, set[str]]:
    from tests.support.report_checks import key_types

    return key_types(docs)


def mesh_min_ratio() -> float:
    """The share of a path's expected rate below which MESH-PATH-SLOW fails it (rules/mesh.yml)."""
    return float(yaml.safe_load((ROOT / "rules" / "mesh.yml").read_text())["vars"]["mesh_min_ratio"])


def check_calibration(result: dict) -> None:
    """verify --plan: every path the plan predicted is within 0.75-1.33 of it, measured after, the
    storage->worker paths that the worker switch's loss (a by-hand cause) still holds included: the
    plan predicts them with that loss in place, so they count like every other path (``held``
    names them apart, inside ``n``). A path the new measurement calls inconclusive is not compared."""
    cal = result["calibration"]
    assert result["prediction_source"] == "plan" and cal["n"] + cal["inconclusive"] >= 28, cal
    assert 0.75 <= cal["median_ratio"] <= 1.33 and 0.75 <= cal["worst_ratio"] <= 1.33 and cal["outside"] == 0, \
        cal["misses"]
    assert cal["held"]["n"] + cal["inconclusive"] >= 8, cal  # the 8 storage->worker paths
    by_id = {c["id"]: c for c in result["causes"]}
    assert all(c["measured"] for c in by_id.values() if c["kind"] == "change"), result["causes"]


def test_ifca_loop(lab_registry, tmp_path):
    name = f"apply{os.getpid()}"
    run(BIN / "storadvise", "lab", "up", "--scenario", "ifca", "--name", name)
    try:
        scan = tmp_path / "scan.json"
        run(BIN / "storadvise", "scan", "--site", name, "-o", scan, "--json")
        check_before(json.loads(scan.read_text()))
        # a real report with a mesh and a diagnosis holds to the shipped JSON Schema (issue 28)
        assert report_schema_errors(json.loads(scan.read_text())) == []
        nd = run(BIN / "storadvise", "report", scan, "--ndjson", "-")
        docs = [json.loads(line) for line in nd.stdout.splitlines()]
        assert {d["doc_type"] for d in docs} == {"scan", "host", "finding", "path", "cause"}
        assert not {k: t for k, t in ndjson_key_types(docs).items() if len(t) > 1}
        assert console_lines(scan) <= 80
        run(BIN / "storadvise", "plan", "--site", name, "--scan", scan, "--out", tmp_path / "plan")
        plan = json.loads((tmp_path / "plan" / "plan.json").read_text())
        # issue 24: MESH-LOSS asks tcp_sack=1 on the workers, whose runtime is 1 and whose boot value
        # is the kernel default 1 (no file sets it): no row; the firewall rule shows its file line
        assert not [c for c in plan["changes"] if c["host"].startswith("wn") and c["key"] == "net.ipv4.tcp_sack"], \
            [c for c in plan["changes"] if c["key"] == "net.ipv4.tcp_sack"]
        fw = [c for c in plan["changes"] if c["host"] == "gpfs02" and c["adapter"] == "firewall"]
        assert fw and "rules.v4:" in str(fw[0]["persisted"]) and "60000/sec" in str(fw[0]["persisted"]), fw
        ap = run(shutil.which("ansible-playbook", path=str(BIN)), "apply-tuning.yml", cwd=tmp_path / "plan", check=False)
        assert ap.returncode == 0, ap.stdout[-3000:]
        again = run(shutil.which("ansible-playbook", path=str(BIN)), "apply-tuning.yml", cwd=tmp_path / "plan")
        assert "changed=0" in again.stdout.split("PLAY RECAP", 1)[1]
        # issue 24: the fix survives a reboot of gpfs02 (its rules.v4 said 60000/sec, the kernel
        # 62500/sec): the rescan, without the mesh and the active test, has no FW-STORAGE-NETWORK;
        # verify below then measures the rebooted host
        run(BIN / "storadvise", "lab", "reboot", "gpfs02", "--name", name)
        rescan = tmp_path / "rescan.json"
        run(BIN / "storadvise", "scan", "--site", name, "--no-mesh", "--no-efficiency", "-o", rescan, "--json")
        back = [f for f in json.loads(rescan.read_text())["findings"]
                if f["status"] == "fail" and f["rule_id"] == "FW-STORAGE-NETWORK" and "gpfs02" in f["hosts"]]
        assert not back, back
        cp = run(BIN / "storadvise", "verify", "--site", name, "--before", scan, "--plan", tmp_path / "plan", "--json",
                 check=False)
        result = json.loads(cp.stdout)
        check_calibration(result)
        # every high fault the scenario injected (tcp_sack=0, the gpfs02 firewall) is fixed; the
        # throughput rules are judged on the paths below
        assert not [f for f in result["findings"] if f["outcome"] != "fixed" and f["severity"] in ("high", "critical")
                    and not f["rule_id"].startswith("MESH-")]
        # storage->worker paths with the tcp_sack fault removed: each one several times faster, and
        # the calibration above holds it to the plan's own prediction. The 0.5% loss of the worker
        # switch stays (a by-hand cause): SACK on it carried 0.82-0.95 of the link here and 0.745 on
        # a CI machine (paths below 0.9 in a round are measured again alone: the mesh's retest_below).
        # A path still below MESH-PATH-SLOW's line (mesh_min_ratio) must be one verify explains: its
        # limit after is the loss, and the SACK cause's verdict names the remaining (by-hand) cause.
        slow_line = mesh_min_ratio()
        worker_paths = [p for p in result["paths"] if p["src"].startswith("gpfs") and p["dst"].startswith("wn")]
        assert len(worker_paths) == 8
        for p in worker_paths:
            assert p["ratio_after_before"] is not None and p["ratio_after_before"] >= 2.0, p
            if p["after_of_expected"] < slow_line:
                subject = f"{p['src']}->{p['dst']}"
                fixed_by = [c for c in result["causes"] if c["kind"] == "change"
                            and subject in {pr["subject"] for pr in c["predicted"]}]
                assert p["after"]["limited_by"] == "loss", p
                assert fixed_by and all("still at" in c["verdict"] and "the remaining cause is" in c["verdict"]
                                        for c in fixed_by), (p, [(c["title"], c["verdict"]) for c in result["causes"]])
        # the firewall cut between the GPFS servers is gone
        cut = next(p for p in result["paths"] if (p["src"], p["dst"]) == ("gpfs01", "gpfs02"))
        assert cut["ratio_after_before"] >= 1.8 and cut["after_of_expected"] >= slow_line, cut
        # the symptom: the active test job's CPU efficiency on the workers about doubles (IFCA: ~2x)
        eff = result["efficiency"]
        assert eff["before"] is not None and eff["after"] is not None
        assert eff["before"] < 0.6 and eff["after"] >= 0.85, eff
        assert eff["ratio"] >= 1.8, eff
        print(f"\nifca loop: storage->worker after/expected {sorted(round(p['after_of_expected'], 2) for p in worker_paths)}, "
              f"efficiency {eff['before']:.2f} -> {eff['after']:.2f} (x{eff['ratio']:.2f}), "
              f"calibration {result['calibration']}")
    finally:
        run(BIN / "storadvise", "lab", "down", "--name", name, check=False)
