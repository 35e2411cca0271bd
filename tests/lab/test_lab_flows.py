"""Diagnosis from production traffic alone, end to end on the shipped ``flows`` scenario
(advisor/lab/scenarios/flows.yml): no host runs iperf3 and the site defines no mesh; readers on the
workers read from the storage servers on XRootD's port, stor02 reads stor01's data on GPFS's port.

scan --no-mesh names each fault on its host from the kernels' view of the live connections
(network.flows): stor01's 128 KiB send buffer, wn02's 128 KiB receive window, stor02's packet-rate
firewall, and the 0.5% loss on wn04's port as a repair by hand with no setting promised to cure
it; wn03's reader is slow on purpose and is never blamed; the console stays within 100 lines.
Then plan, a real ansible-playbook apply-tuning.yml, and verify, which re-samples the flows (there
is no mesh to run): the three changes are applied and their paths no longer held; the loss remains.

One lab for the module (brought up once, every step reads the previous one's files, brought down
at the end, also when a step fails). Real namespaces, sshd, Ansible; needs root (CI is root).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.support.ansible import run_playbook
from tests.support.cli import storadvise
from tests.support.lab import REPO, lab_cli, lab_traces, no_traces, require_root

pytestmark = pytest.mark.usefixtures("ansible_playbook")

SCENARIO = REPO / "advisor" / "lab" / "scenarios" / "flows.yml"
#: the readers' first requests, before the scan's window opens
WARM_UP_S = 5
SLOW_READER = "wn03"


@pytest.fixture(scope="module")
def flows_lab(lab_registry: Path, tmp_path_factory: pytest.TempPathFactory):
    """The lab's name and a directory for the steps' files."""
    require_root()
    name = f"t-flw{os.getpid() % 10000}"
    work = tmp_path_factory.mktemp("flows")
    try:
        lab_cli(["up", "--scenario", str(SCENARIO), "--name", name, "--json"], timeout=600)
        time.sleep(WARM_UP_S)
        yield name, work
    finally:
        lab_cli(["down", "--name", name], check=False)
        assert no_traces(lab_traces(name))


@pytest.fixture(scope="module")
def scanned(flows_lab):
    name, work = flows_lab
    out = work / "scan.json"
    cp = storadvise("scan", "--site", name, "--no-mesh", "--no-history", "-o", out)
    assert cp.returncode == 2, cp.stdout[-3000:] + cp.stderr[-2000:]  # failures at or above high
    return cp.stdout, json.loads(out.read_text()), out


@pytest.fixture(scope="module")
def applied(flows_lab, scanned):
    name, work = flows_lab
    plan = work / "plan"
    cp = storadvise("plan", "--site", name, "--scan", scanned[2], "--out-dir", plan)
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-2000:]
    ap = run_playbook(plan, "apply-tuning.yml")
    return plan, ap


@pytest.fixture(scope="module")
def verified(flows_lab, scanned, applied):
    name, _work = flows_lab
    cp = storadvise("verify", "--site", name, "--before", scanned[2], "--plan", applied[0], "--json",
                    "--no-history")
    assert cp.returncode in (0, 2), cp.stdout[-3000:] + cp.stderr[-2000:]
    return json.loads(cp.stdout)


def _causes(report: dict) -> dict[str, dict]:
    """Each cause by what it is: the (host, key) its one change sets, or by_hand."""
    out = {}
    for c in report["causes"]:
        if c["kind"] == "by_hand":
            out["by_hand"] = c
        else:
            assert len(c["changes"]) == 1, c
            ch = c["changes"][0]
            out[f"{ch['host']} {ch['adapter'] if ch['adapter'] == 'firewall' else ch['key']}"] = c
    return out


def test_scan_names_each_fault_on_its_host_from_production_flows(scanned):
    console, report, _ = scanned
    assert report["mesh"] is None and report["flows"]["paths"], report["flows"]
    assert len(console.splitlines()) <= 100, console
    assert "production flows over" in console
    causes = _causes(report)
    assert set(causes) == {"stor01 net.ipv4.tcp_wmem", "wn02 net.ipv4.tcp_rmem", "stor02 firewall", "by_hand"}, \
        [c["title"] for c in report["causes"]]
    held = {p["src"] + "->" + p["dst"]: p["limited_by"] for p in report["flows"]["paths"]}
    # the send buffer and the receive window, each as the kernel's chronographs said it
    assert {e["subject"] for e in causes["stor01 net.ipv4.tcp_wmem"]["explains"]} >= {"stor01->wn01"}
    assert held["stor01->wn01"] == "sender_buffer"
    assert {e["subject"] for e in causes["wn02 net.ipv4.tcp_rmem"]["explains"]} >= {"stor02->wn02"}
    assert held["stor02->wn02"] == "receiver_window"
    # the packet-rate firewall: the replication from stor01 loses packets at its limit
    assert [e["subject"] for e in causes["stor02 firewall"]["explains"]] == ["stor01->stor02"]
    assert "hashlimit" in causes["stor02 firewall"]["changes"][0]["key"]
    # the lossy port: by hand, on wn04, no setting promised to cure it
    loss = causes["by_hand"]
    assert loss["changes"] == [] and "wn04" in loss["hosts"] and loss["title"].startswith("packet loss")
    # the servers' paths to wn04 (each as the window caught it: a reader reads one server at a time)
    lossy = {e["subject"] for e in loss["explains"]}
    assert lossy and lossy <= {"stor01->wn04", "stor02->wn04"}, loss


def test_the_slow_reader_is_the_application_never_a_cause(scanned):
    console, report, _ = scanned
    # its paths are the application's (its Recv-Q full, its window closed), or at worst unknown (a
    # window that did not show in two samples): never the network's or a setting's
    to_reader = {p["src"]: p for p in report["flows"]["paths"] if p["dst"] == SLOW_READER}
    assert to_reader and all(p["limited_by"] in ("application", "unknown") for p in to_reader.values()), to_reader
    assert any(p["limited_by"] == "application" and "reader" in p["evidence"] for p in to_reader.values())
    for c in report["causes"]:
        assert SLOW_READER not in c["hosts"] and all(ch["host"] != SLOW_READER for ch in c["changes"]), c
        assert not any(SLOW_READER in e["hosts"] for e in c["explains"]), c
    assert not [f for f in report["findings"] if f["status"] == "fail" and f["rule_id"] != "NET-NO-METRICS-SAVE"
                and SLOW_READER in f["hosts"]]
    assert f"{SLOW_READER}: nothing failed" in console


def test_plan_holds_the_three_changes_and_the_loss_by_hand(scanned, applied):
    plan, ap = applied
    data = json.loads((plan / "plan.json").read_text())
    planned = {(c["host"], c["adapter"], c["key"] if c["adapter"] != "firewall" else "firewall") for c in data["changes"]}
    assert planned == {("stor01", "sysctl", "net.ipv4.tcp_wmem"), ("wn02", "sysctl", "net.ipv4.tcp_rmem"),
                       ("stor02", "firewall", "firewall")}, data["changes"]
    assert [c["kind"] for c in data["causes"] if not c["planned"]] == ["by_hand"]
    recap = ap.stdout.split("PLAY RECAP", 1)[1]
    for host in ("stor01", "stor02", "wn02"):
        assert any(line.startswith(host) and "changed=1" in line and "failed=0" in line for line in recap.splitlines())


def test_verify_from_flows_alone(verified):
    s = verified["summary"]
    assert s["flows_sampled"] is True and s["mesh_ran"] is False
    by_title = {c["title"]: c for c in verified["causes"]}
    for title, c in by_title.items():
        if c["kind"] == "by_hand":
            # the loss is repaired by nobody: still seen, or not concluded where the servers' links were
            # full in the new window (each flow its share), or not seen or not measured in that window;
            # never said gone
            assert (c["verdict"].startswith("still in place: ") and "->wn04" in c["verdict"]
                    or c["verdict"].startswith(("not concluded", "not seen in the new scan's flows",
                                                "not measured again"))), c["verdict"]
        else:
            assert c["applied"] is True and c["verdict"].startswith("the changes were applied; ") \
                and "still at" not in c["verdict"], (title, c["verdict"])
    outcome = {(f["rule_id"], f["subject"]): f["outcome"] for f in verified["findings"]}
    assert outcome[("FW-STORAGE-NETWORK", "storage network")] == "fixed"
    assert outcome[("NET-TCP-BUFFER-MAX", "net.ipv4.tcp_wmem")] == "fixed"
    assert outcome[("NET-TCP-BUFFER-MAX", "net.ipv4.tcp_rmem")] == "fixed"
    assert outcome[("FLOW-PATH-HELD", "stor01->stor02")] == "fixed"
    after = {p["src"] + "->" + p["dst"]: p for p in verified["paths"]}
    assert all(r["source"] == "flows" for r in after.values())
    # the replication, no longer policed, runs several times faster (16 -> 158 Mb/s in a run here)
    assert after["stor01->stor02"]["ratio_after_before"] > 3, after["stor01->stor02"]
    assert not any(SLOW_READER in c["verdict"] for c in verified["causes"])
