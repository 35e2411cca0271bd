"""The firewall role removes exactly the rules the scan named (an nft rule and an iptables rule on the
storage network) in a namespace of this test's own, keeps every other rule, and rollback puts them back."""

from __future__ import annotations

import json

import pytest

from tests.support.ansible import ANSIBLE_PLAYBOOK, play_recap
from tests.support.ns_host import STORADVISE, requirements_missing

pytestmark = [
    pytest.mark.skipif(requirements_missing() is not None, reason=str(requirements_missing())),
    pytest.mark.usefixtures("ansible_playbook"),
]

NFT = """table inet sa_test {
  chain input {
    type filter hook input priority 0; policy accept;
    tcp dport 22 accept
    ip saddr 10.77.0.5 tcp dport 1191 limit rate over 1000/second drop
    tcp dport 2049 counter accept
  }
}
"""
IPT = [
    "-A INPUT -p tcp -m tcp --dport 22 -j ACCEPT",
    "-A INPUT -s 10.77.0.6/32 -p tcp -m hashlimit --hashlimit-above 40000/sec --hashlimit-burst 4000 "
    "--hashlimit-mode srcip --hashlimit-name gpfs -j DROP",
    "-A INPUT -s 192.0.2.9/32 -j DROP",
]


def nft_rules(host) -> list[str]:
    out = host.on_host("nft list chain inet sa_test input").stdout
    return [" ".join(l.split()) for l in out.splitlines() if l.strip() and not l.strip().startswith(("table", "chain", "type", "}"))]


def ipt_rules(host) -> list[str]:
    return [l for l in host.on_host("iptables -w -S INPUT").stdout.splitlines() if l.startswith("-A ")]


@pytest.fixture(scope="module")
def world(ns_hosts):
    host, cleanup = ns_hosts("fw01", {})
    try:
        host.on_host("nft -f -  <<'EOF'\n" + NFT + "EOF\n" + "".join(f"iptables -w {r}\n" for r in IPT))
        site = host.site_file(host.dir / "site.yml", ["storage"],
                              extra={"waivers": [{"rule": "NET-*", "justification": "this test is about the firewall"}]})
        scan = host.dir / "scan.json"
        host.controller([STORADVISE, "scan", "--site", str(site), "--sample-seconds", "0.2", "-o", str(scan), "--json"],
                        check=False)
        plan = host.dir / "plan"
        cp = host.controller([STORADVISE, "plan", "--site", str(site), "--scan", str(scan), "--out", str(plan), "--json"])
        yield {"host": host, "plan": plan, "summary": json.loads(cp.stdout),
               "nft_before": nft_rules(host), "ipt_before": ipt_rules(host)}
    finally:
        cleanup()


def playbook(world, book, *args, check=True):
    return world["host"].controller([ANSIBLE_PLAYBOOK, book, *args], cwd=world["plan"], check=check)


def test_plan_names_exactly_the_two_rules(world):
    rules = world["summary"]["hosts"]["fw01"]["vars"]["firewall_remove_rules"]
    texts = sorted(r["text"] for r in rules)
    assert len(texts) == 2, texts
    assert any("hashlimit" in t and t.startswith("-A INPUT -s 10.77.0.6/32") for t in texts)
    assert any("10.77.0.5" in t and "drop" in t for t in texts)
    assert world["summary"]["hosts"]["fw01"]["roles"] == ["firewall"]


def test_check_mode_then_apply_removes_only_those(world):
    host = world["host"]
    cp = playbook(world, "apply-tuning.yml", "--check", "--diff")
    assert play_recap(cp.stdout)["fw01"]["changed"] == 1
    assert nft_rules(host) == world["nft_before"] and ipt_rules(host) == world["ipt_before"]
    cp = playbook(world, "apply-tuning.yml")
    assert play_recap(cp.stdout)["fw01"]["changed"] == 1
    nft_after, ipt_after = nft_rules(host), ipt_rules(host)
    assert nft_after == [r for r in world["nft_before"] if "10.77.0.5" not in r]
    assert ipt_after == [r for r in world["ipt_before"] if "10.77.0.6" not in r]
    assert len(nft_after) == 2 and len(ipt_after) == 2
    backup = json.loads((host.backup_dir / "firewall.json").read_text())
    assert len(backup["removed"]) == 2


def test_second_run_changes_nothing(world):
    cp = playbook(world, "apply-tuning.yml")
    assert play_recap(cp.stdout)["fw01"]["changed"] == 0


def test_rollback_puts_them_back_in_place(world):
    host = world["host"]
    cp = playbook(world, "rollback.yml")
    assert play_recap(cp.stdout)["fw01"]["failed"] == 0
    assert nft_rules(host) == world["nft_before"]
    assert ipt_rules(host) == world["ipt_before"]
    cp = playbook(world, "rollback.yml")
    assert play_recap(cp.stdout)["fw01"]["changed"] == 0 and "nothing to roll back" in cp.stdout


def test_a_rule_named_loosely_is_left_alone(world):
    """Issue 13: matching is exact after normalisation. A plan naming 'ip saddr X drop' must not remove
    'ip saddr X tcp dport 1191 counter drop' (the old loose subsequence match did)."""
    host = world["host"]
    host.on_host("nft add rule inet sa_test input ip saddr 10.77.0.8 tcp dport 1191 counter drop")
    before = nft_rules(host)
    rules = [{"backend": "nft", "family": "inet", "table": "sa_test", "chain": "input", "text": "ip saddr 10.77.0.8 drop"}]
    cp = playbook(world, "apply-tuning.yml", "-e", json.dumps({"firewall_remove_rules": rules}), check=False)
    assert nft_rules(host) == before
    assert "nft inet sa_test input: ip saddr 10.77.0.8 drop" in cp.stdout  # reported as not found
    host.on_host("nft flush chain inet sa_test input && nft -f - <<'EOF'\n" + NFT + "EOF\n")


def test_persisted_ruleset_include_and_firewalld_direct(world, tmp_path):
    """The rule is taken out of the persisted ruleset even where the runtime no longer has it: an nft
    file included by the main script (relative glob) and a firewalld direct rule; rollback restores both."""
    host = world["host"]
    etc = host.dir / "etc-fw"
    (etc / "nft.d").mkdir(parents=True)
    main = '#!/usr/sbin/nft -f\nflush ruleset\ninclude "nft.d/*.nft"\n'
    inc = ("table inet sa_test {\n  chain input {\n    type filter hook input priority 0; policy accept;\n"
           "    tcp dport 22 accept\n    ip saddr 10.77.0.9 tcp dport 1191 drop\n  }\n}\n")
    direct = ('<?xml version="1.0" encoding="utf-8"?>\n<direct>\n'
              '  <rule ipv="ipv4" table="filter" chain="INPUT" priority="0">-s 10.77.0.9/32 -j DROP</rule>\n'
              '  <rule ipv="ipv4" table="filter" chain="INPUT" priority="1">-s 10.77.0.10/32 -j DROP</rule>\n</direct>\n')
    (etc / "nftables.conf").write_text(main)
    (etc / "nft.d" / "50-site.nft").write_text(inc)
    (etc / "firewalld").mkdir()
    (etc / "firewalld" / "direct.xml").write_text(direct)
    rules = [{"backend": "nft", "family": "inet", "table": "sa_test", "chain": "input", "text": "ip saddr 10.77.0.9 tcp dport 1191 drop"},
             {"backend": "iptables", "family": "ip", "table": "filter", "chain": "INPUT_direct", "text": "-A INPUT_direct -s 10.77.0.9/32 -j DROP"}]
    extra = json.dumps({"firewall_remove_rules": rules, "firewall_nftables_conf": str(etc / "nftables.conf"),
                        "firewall_iptables_files": {"ip": [], "ip6": []}, "firewall_firewalld_dir": str(etc / "firewalld"),
                        "firewall_backup_file": str(tmp_path / "fw-backup.json")})
    cp = playbook(world, "apply-tuning.yml", "--check", "--diff", "-e", extra)
    assert (etc / "nft.d" / "50-site.nft").read_text() == inc
    cp = playbook(world, "apply-tuning.yml", "-e", extra)
    assert play_recap(cp.stdout)["fw01"]["changed"] == 1
    edited = (etc / "nft.d" / "50-site.nft").read_text()
    assert "# storadvise removed (the plan's firewall role): ip saddr 10.77.0.9 tcp dport 1191 drop" in edited
    assert "    tcp dport 22 accept\n" in edited
    assert "10.77.0.9" not in (etc / "firewalld" / "direct.xml").read_text()
    assert "10.77.0.10/32" in (etc / "firewalld" / "direct.xml").read_text()
    assert (etc / "nftables.conf").read_text() == main
    summary = json.loads((world["plan"] / "apply-summary.json").read_text())
    changed = {c["setting"] for c in summary["hosts"]["fw01"]["changed"]}
    assert any(s.endswith("(in %s)" % (etc / "nft.d" / "50-site.nft")) for s in changed), changed
    cp = playbook(world, "apply-tuning.yml", "-e", extra)
    assert play_recap(cp.stdout)["fw01"]["changed"] == 0
    cp = playbook(world, "rollback.yml", "-e", extra)
    assert (etc / "nft.d" / "50-site.nft").read_text() == inc
    assert (etc / "firewalld" / "direct.xml").read_text() == direct
