"""The firewall role removes exactly the rules the scan named (an nft rule and an iptables rule on the
storage network) in a namespace of this test's own, keeps every other rule, and rollback puts them back."""

from __future__ import annotations

import json

import pytest

from tests.apply.conftest import ANSIBLE_PLAYBOOK, STORADVISE, play_recap, requirements_missing, start_ns_host

pytestmark = pytest.mark.skipif(requirements_missing() is not None, reason=str(requirements_missing()))

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
def world():
    host, cleanup = start_ns_host("fw01", {})
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
