"""A scan from an Ansible inventory with group_vars: each host is judged against its own group's link_rate, and a
host in a group no --role-map covers is named on stderr and never scanned. Real ansible-inventory, real sshd in a
namespace of this test's own (three inventory names for its one sshd)."""

from __future__ import annotations

import json

import pytest

from tests.support.ns_host import STORADVISE, requirements_missing

pytestmark = pytest.mark.skipif(requirements_missing() is not None or STORADVISE is None,
                                reason=str(requirements_missing() or "storadvise not installed in the venv"))


def incomplete_parts(report: dict) -> list:
    """What made a scan incomplete: its error findings and unreachable hosts, for a failure message."""
    return ([f for f in report.get("findings", []) if f.get("status") == "error"]
            + [h for h in report.get("hosts", []) if isinstance(h, dict) and not h.get("reachable", True)])


def test_scan_uses_each_hosts_group_link_rate_and_names_the_skipped_hosts(ns_hosts):
    host, cleanup = ns_hosts("iv01", {})
    try:
        inv = host.dir / "inventory"
        (inv / "group_vars").mkdir(parents=True)
        common = {"ansible_host": "127.0.0.1", "ansible_user": "root", "ansible_ssh_private_key_file": str(host.key)}
        (inv / "hosts.yml").write_text(json.dumps({"all": {"children": {
            "fast": {"hosts": {"fast01": common}}, "slow": {"hosts": {"slow01": common}},
            "monitoring": {"hosts": {"mon01": common}}}}}))
        (inv / "group_vars" / "fast.yml").write_text("link_rate: 100gbit\n")
        (inv / "group_vars" / "slow.yml").write_text("link_rate: 1gbit\n")
        home = host.dir / "home"
        (home / ".ssh").mkdir(parents=True)
        (home / ".ssh" / "known_hosts").write_text(host.known_hosts.read_text())
        cp = host.controller([STORADVISE, "scan", "--inventory", str(inv), "--role-map", "fast=storage",
                              "--role-map", "slow=storage", "--json", "--no-history", "--no-mesh", "--no-efficiency"],
                             check=False, env_extra={"HOME": str(home)})
        report = json.loads(cp.stdout) if cp.stdout.strip() else {}
        assert cp.returncode in (0, 2), json.dumps(incomplete_parts(report))[-4000:]
        expected = {}
        for f in report["findings"]:
            if f["rule_id"] == "NET-CORE-BUFFER-MAX":
                for h in f["hosts"]:
                    expected.setdefault(h, set()).add(f["expected"])
        # each host against its own group's rate (fasterdata: 512 MB at 40G and up, 64 MB below 10G)
        assert expected["fast01"] == {">= 536870912 (fasterdata for 100.00 Gb/s, from the site file's link_rate)"}, expected
        assert expected["slow01"] == {">= 67108864 (fasterdata for 1.00 Gb/s, from the site file's link_rate)"}, expected
        # the host of the unmapped group: named on stderr, nowhere in the report
        assert "mon01" not in json.dumps(report)
        assert "skipped 1 inventory host(s)" in cp.stderr and "mon01" in cp.stderr, cp.stderr[-2000:]
        # plan takes the same inventory and role map (as verify and audit do): each host's own target, no mon01
        (host.dir / "scan.json").write_text(cp.stdout)
        pl = host.controller([STORADVISE, "plan", "--inventory", str(inv), "--role-map", "fast=storage",
                              "--role-map", "slow=storage", "--scan", str(host.dir / "scan.json"), "--out",
                              str(host.dir / "plan")], check=False, env_extra={"HOME": str(home)})
        assert pl.returncode == 0, pl.stdout[-2000:] + pl.stderr[-2000:]
        assert "mon01" in pl.stderr and not (host.dir / "plan" / "host_vars" / "mon01.yml").exists()
        import yaml

        class Loader(yaml.SafeLoader):  # host_vars mark every value !unsafe (never templated by Ansible)
            pass

        Loader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))
        # (net.core.* is not per namespace, so the plan leaves it out here; net.ipv4.tcp_wmem is per namespace)
        wanted = {c["host"]: c["target"] for f in report["findings"] if f["rule_id"] == "NET-TCP-BUFFER-MAX"
                  for c in f.get("changes") or [] if c["key"] == "net.ipv4.tcp_wmem"}
        planned = {h: str(yaml.load((host.dir / "plan" / "host_vars" / f"{h}.yml").read_text(), Loader)
                          ["network_tuning_sysctls"]["net.ipv4.tcp_wmem"]) for h in ("fast01", "slow01")}
        assert planned == wanted and planned["fast01"] != planned["slow01"], (planned, wanted)
    finally:
        cleanup()
