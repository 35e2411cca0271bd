"""Negated matches and nft verdict maps: recorded as what they are, and judged the right way round.

Fixtures from a real kernel, iptables-nft 1.8.9 and nft 1.0.6 (tests/fixtures/firewall/capture-negations.sh).
"""

from __future__ import annotations


from advisor.model.facts import FactSet, HostFacts, ProbeResult, ProbeStatus
from advisor.model.findings import FindingStatus
from advisor.rules.engine import evaluate
from probes.firewall import FirewallProbe

from tests.support.netns import run_in_namespace
from tests.support.paths import FIXTURES

FW = FIXTURES / "firewall"
IPT = (FW / "negations-iptables-save.txt").read_text()
NFT = (FW / "negations-nft.json").read_text()


def parse(**tools: str):
    text = "".join(f"@@section {n.replace('_', '-')}\n{t.rstrip()}\n@@exit 0\n" for n, t in tools.items())
    return FirewallProbe().parse(text)


def by_text(facts, needle):
    (rule,) = [r for r in facts.rules if needle in r.text]
    return rule


def test_iptables_negations_are_exclusions_not_matches():
    facts = parse(iptables_save=IPT)
    out = by_text(facts, "! -d 127.0.0.0/8")
    assert out.addresses == [] and out.excluded_addresses == ["127.0.0.0/8"] and out.verdict == "drop"
    fwd = by_text(facts, "-i docker0 ! -o docker0")
    assert fwd.interfaces == ["docker0"] and fwd.excluded_interfaces == ["docker0"]
    ssh = by_text(facts, "! -s 198.18.0.0/16")
    assert ssh.addresses == [] and ssh.excluded_addresses == ["198.18.0.0/16"] and ssh.verdict == "reject"
    nat = by_text(facts, "MASQUERADE")
    assert nat.addresses == ["172.17.0.0/16"] and nat.excluded_interfaces == ["docker0"] and nat.interfaces == []


def test_old_style_negation_after_the_option():
    facts = parse(iptables_save="*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -d ! 127.0.0.0/8 -j DROP\nCOMMIT\n")
    assert facts.rules[0].excluded_addresses == ["127.0.0.0/8"] and facts.rules[0].addresses == []


def test_nft_negations_and_verdict_maps():
    facts = parse(nft=NFT)
    neg = by_text(facts, "iifname != docker0")
    assert neg.excluded_interfaces == ["docker0"] and neg.excluded_addresses == ["127.0.0.0/8"]
    assert neg.interfaces == [] and neg.addresses == [] and neg.verdict == "drop"
    named = by_text(facts, "ip saddr vmap @blocked")
    assert named.verdict == "drop" and named.addresses == ["192.0.2.7/32"]
    inline = by_text(facts, "ip daddr vmap {")
    assert inline.verdict == "drop" and inline.addresses == ["203.0.113.9/32"]
    assert "203.0.113.9 : drop" in inline.text and "10.0.0.0/8 : accept" in inline.text
    ssh = by_text(facts, "reject")
    assert sorted(ssh.excluded_addresses) == ["10.0.0.0/8", "198.18.0.0/16"] and ssh.addresses == []


def judge(facts, address: str = "198.18.0.5/24"):
    nic = {"interfaces": {"stor0": {"addresses": [address], "is_loopback": False}}}
    h = HostFacts(name="gpfs01", roles=["storage"], probes={
        "firewall": ProbeResult(probe="firewall", status=ProbeStatus.ok, facts=facts.model_dump()),
        "network.nic": ProbeResult(probe="network.nic", status=ProbeStatus.ok, facts=nic),
    })
    (f,) = [f for f in evaluate(FactSet(site="t", hosts={"gpfs01": h})).findings if f.rule_id == "FW-STORAGE-NETWORK"]
    return f


def test_firewall_rule_judges_everything_except_the_right_way_round():
    # "drop everything except loopback" drops storage traffic; "reject ssh except from 198.18/16" does not touch it
    f = judge(parse(iptables_save=IPT))
    assert f.status == FindingStatus.fail
    assert any("! -d 127.0.0.0/8" in e for e in f.evidence)
    assert not any("! -s 198.18.0.0/16" in e for e in f.evidence)
    assert not any("-i docker0 ! -o docker0" in e for e in f.evidence)


def test_firewall_rule_sees_a_verdict_map_dropping_a_storage_address():
    facts = parse(nft=NFT)
    for r in facts.rules:  # keep only the named verdict map
        if "vmap @blocked" not in r.text:
            r.verdict = "accept"
    f = judge(facts, address="192.0.2.1/24")
    assert f.status == FindingStatus.fail and any("vmap @blocked" in e for e in f.evidence)
    assert judge(facts, address="203.0.113.1/24").status == FindingStatus.passed


def test_excluding_the_storage_network_leaves_it_alone():
    facts = parse(iptables_save="*filter\n:INPUT ACCEPT [0:0]\n-A INPUT ! -s 198.18.0.0/16 -j DROP\nCOMMIT\n")
    assert judge(facts).status == FindingStatus.passed
    facts = parse(iptables_save="*filter\n:INPUT ACCEPT [0:0]\n-A INPUT ! -s 10.0.0.0/8 -j DROP\nCOMMIT\n")
    assert judge(facts).status == FindingStatus.fail


def test_negations_and_vmap_read_from_a_live_namespace(netns):
    for cmd in ("ip link add stor0 type veth peer name docker0",
                "iptables -A OUTPUT ! -d 127.0.0.0/8 -j DROP",
                "nft 'add table inet g'",
                "nft 'add chain inet g in { type filter hook input priority 0; policy accept; }'",
                "nft 'add rule inet g in ip saddr vmap { 198.18.0.9 : drop, 10.0.0.0/8 : accept }'"):
        run_in_namespace(netns, cmd).check_returncode()
    out = run_in_namespace(netns, FirewallProbe().script(None))
    assert out.returncode == 0, out.stderr
    facts = FirewallProbe().parse(out.stdout)
    assert by_text(facts, "! -d 127.0.0.0/8").excluded_addresses == ["127.0.0.0/8"]
    vmap = by_text(facts, "vmap")
    assert vmap.verdict == "drop" and vmap.addresses == ["198.18.0.9/32"]
