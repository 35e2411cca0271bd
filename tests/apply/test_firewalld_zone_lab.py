"""A firewalld host in the lab: its zone file's rich rule drops a peer storage host; the scan finds
it in ``table inet firewalld``, the plan names it, real ansible-playbook removes it at run time and
the rich rule from the zone file (backup kept), a second apply changes nothing, `lab reboot` (which
loads the zone files as firewalld would) keeps the fix; rollback.yml restores the zone file byte for
byte and a reboot brings the drop back. A drop added to firewalld's table at run time only (in no
zone file) is refused with the firewall-cmd way, and left alone.

Needs root (CI is root). About 30 s on this 2-core machine.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path


import pytest

from advisor.lab.hosts import HOST_DIR_IN_HOST
from advisor.lab.records import host_ns
from tests.support.lab import lab_cli, require_root

pytestmark = pytest.mark.usefixtures("ansible_playbook")

BIN = Path(sys.executable).parent
PLAYBOOK = shutil.which("ansible-playbook", path=str(BIN))

SCENARIO = """
name: fwdzone
description: two storage hosts; st1's firewalld zone file drops st2 (written by the test)
hosts:
  - name: st1
    roles: [storage]
  - name: st2
    roles: [storage]
site:
  profiles: [generic]
  waivers:
    - rule: "NET-*"
      justification: this test is about the firewall
"""

ZONE = """<?xml version="1.0" encoding="utf-8"?>
<zone>
  <short>storage</short>
  <description>Storage network (written by an admin, not by firewall-cmd)</description>
  <service name="ssh"/>
  <rule family="ipv4">
    <source address="192.0.2.9"/>
    <port protocol="tcp" port="22"/>
    <drop/>
  </rule>
  <rule family="ipv4">
    <source address="{st2}"/>
    <port protocol="tcp" port="1191"/>
    <drop/>
  </rule>
  <rule family="ipv4">
    <source address="10.99.0.0/16"/>
    <accept/>
  </rule>
</zone>
"""


def run(argv: list, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=600)


def in_ns(name: str, host: str, *cmd: str) -> str:
    cp = run(["ip", "netns", "exec", host_ns(name, host), *cmd])
    assert cp.returncode == 0, cp.stderr
    return cp.stdout


def firewalld_rules(name: str) -> list[str]:
    out = in_ns(name, "st1", "nft", "list", "table", "inet", "firewalld")
    return [" ".join(l.split()) for l in out.splitlines()
            if l.strip() and not l.strip().startswith(("table", "chain", "type", "}", "jump"))]


def reboot(name: str, host: str) -> dict:
    return json.loads(lab_cli(["reboot", host, "--name", name, "--json"]).stdout)


def fw_findings(name: str, path: Path) -> list[dict]:
    run([BIN / "storadvise", "scan", "--site", name, "--sample-seconds", "0.2", "-o", path, "--json"])
    return [f for f in json.loads(path.read_text())["findings"] if f["status"] == "fail" and f["rule_id"].startswith("FW-")]


def recap(stdout: str) -> dict[str, dict[str, int]]:
    out = {}
    for line in stdout.split("PLAY RECAP", 1)[-1].splitlines():
        if ":" in line and "=" in line:
            host, rest = line.split(":", 1)
            out[host.strip()] = {k: int(v) for k, v in (p.split("=") for p in rest.split()) if v.isdigit()}
    return out


def test_firewalld_zone_rich_rule_removed_and_fix_survives_reboot(lab_registry: Path, tmp_path: Path) -> None:  # noqa: F811
    require_root()
    assert PLAYBOOK, "ansible-playbook not installed"
    scen = tmp_path / "fwdzone.yml"
    scen.write_text(SCENARIO)
    name = "t-fwdzone"
    try:
        info = json.loads(lab_cli(["up", "--scenario", str(scen), "--name", name, "--json"]).stdout)
        st2 = info["hosts"]["st2"]["address"]
        zones = Path(info["state_dir"]) / "hosts" / "st1" / "etc" / "firewalld" / "zones"
        zones.mkdir(parents=True)
        zone_text = ZONE.format(st2=st2)
        (zones / "storage.xml").write_text(zone_text)
        rb = reboot(name, "st1")
        assert str(zones / "storage.xml") in rb["firewall_files"]
        drop = f"ip saddr {st2} tcp dport 1191 drop"
        assert drop in firewalld_rules(name)
        # a runtime-only firewalld rule (as `firewall-cmd` without --permanent makes): in no zone file
        in_ns(name, "st1", "nft", "add", "rule", "inet", "firewalld", "filter_IN_storage_deny",
              "ip", "saddr", st2, "tcp", "dport", "2811", "drop")
        runtime_only = f"ip saddr {st2} tcp dport 2811 drop"

        found = fw_findings(name, tmp_path / "before.json")
        assert any("st1" in (f.get("hosts") or []) for f in found), found
        plan = tmp_path / "plan"
        cp = run([BIN / "storadvise", "plan", "--site", name, "--scan", tmp_path / "before.json", "--out", plan, "--json"])
        assert cp.returncode in (0, 2), cp.stderr
        planned = json.loads(cp.stdout)["hosts"]["st1"]["vars"]["firewall_remove_rules"]
        assert sorted(r["text"] for r in planned) == sorted([drop, runtime_only]), planned
        assert all((r["family"], r["table"]) == ("inet", "firewalld") for r in planned)

        ap = run([PLAYBOOK, "apply-tuning.yml"], cwd=plan)
        summary = json.loads((plan / "apply-summary.json").read_text())["hosts"]["st1"]
        changed = {c["setting"] for c in summary["changed"]}
        assert any(s.endswith(drop) for s in changed), (changed, ap.stdout[-3000:])
        # the zone file as the host sees it (its own directory of the lab, at one path in every host)
        assert any(drop in s and f"(in {HOST_DIR_IN_HOST}/etc/firewalld/zones/storage.xml)" in s for s in changed), changed
        failed = {f["setting"]: f["why"] for f in summary["failed"]}
        assert [s for s in failed if runtime_only in s], failed
        assert all("firewall-cmd --permanent" in why for why in failed.values()), failed
        assert ap.returncode == 2, ap.stdout[-3000:]  # one setting refused: non-zero, the rest applied
        rules = firewalld_rules(name)
        assert drop not in rules and runtime_only in rules
        assert "ip saddr 192.0.2.9 tcp dport 22 drop" in rules  # not a peer: left alone
        edited = (zones / "storage.xml").read_text()
        assert st2 not in edited
        # every other byte of the zone file stays: exactly the <rule> element is gone
        element = zone_text[zone_text.index(f'  <rule family="ipv4">\n    <source address="{st2}"/>'):]
        element = element[:element.index("</rule>\n") + len("</rule>\n")]
        assert edited == zone_text.replace(element, "")

        again = run([PLAYBOOK, "apply-tuning.yml"], cwd=plan)
        assert recap(again.stdout)["st1"]["changed"] == 0, again.stdout[-2000:]

        reboot(name, "st1")
        rules = firewalld_rules(name)
        assert drop not in rules and "ip saddr 192.0.2.9 tcp dport 22 drop" in rules
        assert not [f for f in fw_findings(name, tmp_path / "after.json") if "st1" in (f.get("hosts") or [])]

        rbk = run([PLAYBOOK, "rollback.yml"], cwd=plan)
        assert recap(rbk.stdout)["st1"]["failed"] == 0, rbk.stdout[-2000:]
        assert (zones / "storage.xml").read_text() == zone_text
        assert drop in firewalld_rules(name)
        reboot(name, "st1")
        assert drop in firewalld_rules(name)
    finally:
        lab_cli(["down", "--name", name], check=False)
