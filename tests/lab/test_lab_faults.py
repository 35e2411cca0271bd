"""The fault suite: a 16-host lab with every fault the transport must survive, all at once.

h01 down (its sshd killed before the scan); h02 sshd killed while its probes run; h03 a wrong host
key; h04 behind a 100%-loss link (TCP connects hang; an nft
drop-everything table in its namespace, as this kernel has no netem); h05 a command that never returns (a FIFO in
its /etc/sysctl.d, read by the sysctl probe); h06 frozen mid-scan (every process of the host
stopped with SIGSTOP while its probes run); h07 without iperf3 (in the mesh with h08); h09 answers
with garbage (its login shell prints random bytes and exits); h10 answers with an endless stream.
h11-h16 and h08 are healthy.

The scan must finish within its budget (connect timeout + one probe's timeout + the grace, plus
the mesh of one pair), keep every healthy host's results, name each failure once per host with
its cause, and exit 3. Hosts are cheap (no GPFS, no SAN): CI share about 1.5 minutes.
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from tests.support.lab import lab_cli, require_root
from tests.support.lab_faults import (CONNECT_TIMEOUT, GRACE, MESH_ALLOWANCE, NAME, PROBE_TIMEOUT, SCENARIO,
                                      inject_and_scan, signal_pids)


@pytest.fixture(scope="module")
def fault_lab(lab_registry: Path, tmp_path_factory: pytest.TempPathFactory):
    require_root()
    from advisor.lab.records import LabRecord

    tmp = tmp_path_factory.mktemp("faults")
    scen = tmp / "faults.yml"
    scen.write_text(SCENARIO)
    stopped: list[int] = []
    try:
        t0 = time.monotonic()
        lab_cli(["up", "--scenario", str(scen), "--name", NAME, "--json"], timeout=600)
        print(f"fault lab up in {time.monotonic() - t0:.1f}s")
        rec = LabRecord.load(NAME)
        yield {"rec": rec, "tmp": tmp, "stopped": stopped}
    finally:
        signal_pids(stopped, signal.SIGCONT)
        t0 = time.monotonic()
        lab_cli(["down", "--name", NAME], check=False)
        print(f"fault lab down in {time.monotonic() - t0:.1f}s")


@pytest.fixture(scope="module")
def scanned(fault_lab: dict) -> dict:
    return inject_and_scan(fault_lab)


def test_scan_finishes_within_budget_and_exits_3(scanned: dict) -> None:
    cp = scanned["cp"]
    assert cp.returncode == 3, cp.stderr[-2000:]
    assert "Traceback" not in cp.stderr
    budget = CONNECT_TIMEOUT + PROBE_TIMEOUT + GRACE + MESH_ALLOWANCE + 15.0
    assert scanned["took"] < budget, f"scan took {scanned['took']:.0f}s, budget {budget:.0f}s"


def test_healthy_hosts_keep_their_results(scanned: dict) -> None:
    hosts = {h["name"]: h for h in scanned["report"]["hosts"]}
    for h in ["h08"] + [f"h{i}" for i in range(11, 17)]:
        info = hosts[h]
        assert info["reachable"], (h, info)
        statuses = info["probes"]
        assert statuses and all(s in ("ok", "not_applicable") for s in statuses.values()), (h, statuses)


def test_each_failure_named_once_per_host_with_its_cause(scanned: dict) -> None:
    findings = scanned["report"]["findings"]
    errors: dict[str, list[dict]] = {}
    for f in findings:
        if f["status"] == "error":
            for h in f["hosts"]:
                errors.setdefault(h, []).append(f)
    causes = {
        "h01": "connection refused", "h03": "host key", "h04": "timed out", "h09": "",
        "h10": "",
    }
    for h, word in causes.items():
        assert len(errors.get(h, [])) == 1, (h, [(f["rule_id"], f["message"]) for f in errors.get(h, [])])
        assert word.lower() in errors[h][0]["message"].lower(), (h, errors[h][0]["message"])
    # h02 (sshd killed), h05 (a command that never returns), h06 (frozen): reachable at first; each
    # cause is one finding, and no rule repeats it
    for h in ("h02", "h05", "h06"):
        msgs = [f["message"] for f in errors.get(h, [])]
        assert msgs and len(msgs) == len(set(msgs)), (h, msgs)
        assert all(f["rule_id"].startswith("SCAN-") for f in errors[h]), (h, [f["rule_id"] for f in errors[h]])
    assert any("timed out after 30s" in m for m in (f["message"] for f in errors["h05"])), errors["h05"]
    assert not any("after 0 s" in (f.get("message") or "") for f in findings)


def test_host_without_iperf3_is_named_in_the_mesh(scanned: dict) -> None:
    mesh = scanned["report"].get("mesh") or {}
    text = json.dumps(mesh)
    assert "h07" in text and "iperf3" in text.lower(), text[:2000]
