"""The host's network layer in the lab (advisor/lab/scenarios/nic.yml): real MTUs on the veths (st01 and st02 at
9000 behind switch ports at 1500), real loss on st03's port, and the NIC and cpufreq emulator
(advisor/lab/emulators/nic.py) for what a veth cannot show. One lab for the module: a scan's findings and causes
first, then scan -> plan -> real ansible-playbook -> second apply -> lab reboot -> verify, as a site runs it.
Real namespace hosts and sshd; needs root (CI is root)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from tests.support.ansible import play_recap, run_playbook
from tests.support.cli import storadvise
from tests.support.lab import REPO, lab_cli, lab_traces, no_traces, require_root, ssh

SCENARIO = REPO / "advisor" / "lab" / "scenarios" / "nic.yml"
pytestmark = pytest.mark.usefixtures("ansible_playbook")


@pytest.fixture(scope="module")
def nic_lab(lab_registry: Path, tmp_path_factory: pytest.TempPathFactory):
    """The nic lab up and scanned once: (lab name, its state dir, the scan file, the scan)."""
    require_root()
    name = f"t-nic{os.getpid() % 10000}"
    tmp = tmp_path_factory.mktemp("nic")
    try:
        up = json.loads(lab_cli(["up", "--scenario", str(SCENARIO), "--name", name, "--json"]).stdout)
        cp = storadvise("scan", "--site", name, "--json", "--no-history", "--sample-seconds", "2")
        assert cp.returncode == 2, cp.stderr[-3000:]
        (tmp / "scan.json").write_text(cp.stdout)
        yield name, Path(up.get("state_dir") or lab_registry / name), tmp, json.loads(cp.stdout)
    finally:
        lab_cli(["down", "--name", name], check=False)
        assert no_traces(lab_traces(name)), lab_traces(name)


def failing(scan: dict) -> set[tuple[str, str, str | None]]:
    return {(f["rule_id"], h, f.get("subject")) for f in scan["findings"] if f["status"] == "fail" for h in f["hosts"]}


def test_each_nic_fault_is_found_on_its_host(nic_lab) -> None:
    _name, _state, _tmp, scan = nic_lab
    expected = yaml.safe_load(SCENARIO.read_text())["expect"]
    found = failing(scan)
    for e in expected:
        assert any(r == e["rule"] and h == e["host"] and (e.get("subject") is None or s == e["subject"])
                   for r, h, s in found), (e, sorted(x for x in found if x[0].startswith(("NIC", "CPU"))))
    # and on no other host: the clean NICs pass
    nic_rules = {e["rule"] for e in expected}
    assert {(r, h) for r, h, _s in found if r in nic_rules} == {(e["rule"], e["host"]) for e in expected}
    ports = {h["name"]: h["facts"].get("nic.ports") for h in scan["hosts"]}
    assert all(ports[h] for h in ports), "every host's emulated eth0 is a physical NIC to the probe"


def test_the_lossy_port_is_named_by_its_rising_counter(nic_lab) -> None:
    scan = nic_lab[3]
    (loss,) = [c for c in scan["causes"] if c["kind"] == "by_hand" and c["title"].startswith("packet loss")]
    assert loss["hosts"] == ["st03"], loss
    assert "st03 eth0 rx_crc_errors +" in loss["title"] and loss["title"].endswith(": cable or optic"), loss["title"]
    assert "replace or reseat the cable or optic of st03 eth0" in loss["action"]
    assert ("NIC-ERRORS-RISING", "eth0") in {(f["rule_id"], f.get("subject")) for f in loss["findings"]}
    # the tests' own counters said it: st03's port, during the tests, on the paths into it
    into = [p for p in scan["mesh"]["paths"] if p["dst"] == "st03" and p["status"] == "ok"]
    assert into and all((p["nic_errors"]["dst"]["rises"] or {}).get("rx_crc_errors", 0) > 0 for p in into)
    # every lossy path into st03 is the loss's, wn01's behind its 100 Mb/s NIC too (capped there)
    lossy = {f"{p['src']}->st03" for p in into if p["limited_by"] == "loss"}
    assert lossy and lossy <= {r["subject"] for r in loss["explains"]}, (lossy, loss["explains"])
    assert not [u for u in scan["unexplained"] if u["subject"] in lossy], scan["unexplained"]


def test_the_black_hole_is_a_cause_on_its_paths(nic_lab) -> None:
    scan = nic_lab[3]
    (hole,) = [c for c in scan["causes"] if "black hole" in c["title"]]
    assert hole["hosts"] == ["st01", "st02"] and hole["title"].startswith("path-MTU black hole: 9000-byte frames")
    assert {p["subject"] for p in hole["predicted"]} == {"st01->st02", "st02->st01"}
    assert "raise the MTU of every switch port on the paths between st01, st02 to 9000" in hole["action"]
    by = {(p["src"], p["dst"]): p for p in scan["mesh"]["paths"]}
    assert by[("st01", "st02")]["status"] == "failed" and by[("st01", "st02")]["path_mtu"]["carried"] is False
    assert by[("st01", "st03")]["status"] == "ok"  # a 1500 receiver: TCP's MSS keeps to it, no black hole


def test_the_nic_negotiated_low_is_named_with_where_to_act(nic_lab) -> None:
    scan = nic_lab[3]
    (low,) = [c for c in scan["causes"] if "negotiated" in c["title"]]
    assert low["hosts"] == ["wn01"] and low["title"].startswith("wn01 eth0 negotiated 100 Mb/s of the 1.00 Gb/s")
    assert "the switch port of wn01 eth0 advertises at most 100 Mb/s" in low["action"]
    assert all(p["model"] == "link" and p["after"] > 0.9e9 for p in low["predicted"] if p["subject"].startswith("wn01"))


def test_plan_apply_survives_reboot_and_verify(nic_lab, tmp_path: Path) -> None:
    name, state, tmp, _scan = nic_lab
    plan = tmp_path / "plan"
    cp = storadvise("plan", "--site", name, "--scan", tmp / "scan.json", "--out", plan, "--json")
    assert cp.returncode == 0, cp.stderr[-3000:]
    hv = yaml.safe_load((plan / "host_vars" / "st01.yml").read_text().replace("!unsafe ", ""))
    assert hv["nic_tuning_interfaces"]["eth0"] == {"ring_rx": 4096, "gro": "on", "mtu": 1500}, hv
    assert hv["cpu_tuning_governor"] == "performance"
    text = (plan / "PLAN.md").read_text()
    for where in ("the switch port of wn01 eth0", "replace or reseat the cable or optic of st03 eth0",
                  "NIC-IRQ-ONE-CPU on st02 (eth0)", "systemctl enable --now irqbalance", "NIC-HALF-DUPLEX"):
        assert where in text, where  # the by-hand items say where to act
    run_playbook(plan, "apply-tuning.yml")
    again = run_playbook(plan, "apply-tuning.yml")
    assert all(c.get("changed") == 0 for h, c in play_recap(again.stdout).items() if h != "localhost"), again.stdout[-2000:]
    udev = (state / "hosts" / "st01" / "etc" / "udev" / "rules.d" / "81-storadvise-nic.rules").read_text()
    assert 'NAME=="eth0"' in udev and "-G $name rx 4096" in udev and "-K $name gro on" in udev, udev
    assert (state / "hosts" / "st01" / "etc" / "systemd" / "system" / "multi-user.target.wants"
            / "storadvise-cpu-governor.service").is_symlink()
    assert not Path("/etc/udev/rules.d/81-storadvise-nic.rules").exists()  # the machine's /etc is never written
    for host in ("st01", "st02"):
        lab_cli(["reboot", host, "--name", name, "--json"])
    st01 = json.loads((state / "record.json").read_text())["hosts"]["st01"]["address"]
    out = ssh(state, st01, "ethtool -g eth0; ethtool -k eth0; cat /sys/class/net/eth0/mtu "
                            "/sys/devices/system/cpu/cpufreq/policy0/scaling_governor").stdout
    assert "RX:\t\t\t4096" in out.split("Current hardware settings:")[1], out
    assert "generic-receive-offload: on" in out and "\n1500\nperformance" in out, out

    cp = storadvise("verify", "--site", name, "--before", tmp / "scan.json", "--json", "--no-history",
                    "--sample-seconds", "2")
    result = json.loads(cp.stdout)
    outcome = {(f["rule_id"], f["host"]): f["outcome"] for f in result["findings"]}
    for rule, host in (("NIC-RING-BELOW-MAX", "st01"), ("NIC-GRO-OFF", "st01"), ("CPU-GOVERNOR", "st01"),
                       ("NIC-RX-DROPS", "st01"), ("NIC-MTU-MISMATCH", "st01"), ("NIC-MTU-MISMATCH", "st02"),
                       ("MESH-TEST-FAILED", "st01")):
        assert outcome[(rule, host)] == "fixed", (rule, host, outcome.get((rule, host)))
    for rule, host in (("NIC-ERRORS-RISING", "st03"), ("NIC-IRQ-ONE-CPU", "st02"), ("NIC-SPEED-BELOW-MAX", "wn01"),
                       ("NIC-HALF-DUPLEX", "wn02")):
        assert outcome[(rule, host)] == "still_failing", (rule, host, outcome.get((rule, host)))
