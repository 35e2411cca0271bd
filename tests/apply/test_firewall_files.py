"""The firewall role's persisted-ruleset editing (playbooks/module_utils/storadvise_firewall_files.py):
pure text functions, tested on real rulesets (tests/fixtures/firewall_persisted/README.md names
the sources) and on the real nft capture of tests/fixtures/firewall."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from probes.nftables_json import parse_nft_json

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "tests" / "fixtures"
_spec = importlib.util.spec_from_file_location(
    "storadvise_firewall_files", REPO / "playbooks" / "module_utils" / "storadvise_firewall_files.py")
ff = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ff)


def test_every_native_rule_the_probe_renders_matches_exactly_one_line_of_the_saved_ruleset() -> None:
    """The probe names nft rules by the text rendered from `nft -j list ruleset`; the persisted file
    holds them as `nft list ruleset` prints them. Same capture, both forms: each native rule is found
    once (iptables-nft compat rules, `xt ...`, are the iptables backend's)."""
    _chains, rules, _errs = parse_nft_json((FIX / "firewall" / "nft-j-list-ruleset.json").read_text(), set())
    conf = ff.nft_conf_rules((FIX / "firewall" / "nft-list-ruleset.txt").read_text())
    native = [r for r in rules if " xt " not in f" {r.text} "]
    assert len(native) >= 15
    for r in native:
        hits = [c for c in conf if (c["family"], c["table"], c["chain"]) == (r.family, r.table, r.chain)
                and ff.nft_norm(c["text"]) == ff.nft_norm(r.text)]
        assert len(hits) == 1, (r.family, r.table, r.chain, r.text)


def test_anonymous_sets_and_sets_are_not_block_ends() -> None:
    conf = ff.nft_conf_rules((FIX / "firewall" / "nft-list-ruleset.txt").read_text())
    texts = [c["text"] for c in conf if c["table"] == "storage_guard"]
    assert "tcp dport { 22, 1094 } accept" in texts
    assert not any("elements" in t or t.startswith("type ") for t in texts)


def test_matching_is_exact_never_a_subsequence() -> None:
    """Issue 13: a planned 'ip saddr 198.18.0.0/24 drop' must not take out '... counter ... drop' in
    another chain nor a longer rule; only equal-after-normalisation counts."""
    conf = ff.nft_conf_rules((FIX / "firewall" / "nft-list-ruleset.txt").read_text())
    want = ff.nft_norm("ip saddr 198.18.0.0/24 drop")
    assert [c for c in conf if ff.nft_norm(c["text"]) == want] == []
    want = ff.nft_norm("ip saddr 198.18.0.0/24 counter packets 12 bytes 3400 drop")
    assert [(c["table"], c["chain"]) for c in conf if ff.nft_norm(c["text"]) == want] == [("filter", "STORAGE-IN")]
    assert ff.nft_norm("ip saddr 10.0.0.5/32 drop") == ff.nft_norm("ip saddr 10.0.0.5 drop")
    assert ff.nft_norm("ip saddr 10.0.0.0/24 drop") != ff.nft_norm("ip saddr 10.0.0.0 drop")
    assert ff.nft_norm("limit rate over 1000/second burst 5 packets drop") == ff.nft_norm("limit rate over 1000/second drop")
    assert ff.nft_norm("limit rate over 1000/second burst 50 packets drop") != ff.nft_norm("limit rate over 1000/second drop")


def test_debian_default_nftables_conf_has_base_chains_and_no_rules() -> None:
    assert ff.nft_conf_rules((FIX / "firewall_persisted" / "debian-nftables.conf").read_text()) == []


def test_comment_out_keeps_the_rest_and_the_blocks_balanced() -> None:
    text = (FIX / "firewall" / "nft-list-ruleset.txt").read_text()
    conf = ff.nft_conf_rules(text)
    target = next(c for c in conf if c["chain"] == "STORAGE-IN" and c["text"].startswith("ip saddr"))
    out = ff.comment_out(text, [target["line"]])
    assert out.count("{") - out.count("}") == text.count("{") - text.count("}")
    after = ff.nft_conf_rules(out)
    assert len(after) == len(conf) - 1
    assert ff.MARK + target["text"] in out
    assert [c["text"] for c in after] == [c["text"] for c in conf if c is not target]


def test_statement_sharing_a_line_is_taken_out_alone() -> None:
    text = "table inet fw {\n  chain out { type filter hook output priority 0; policy accept; ip daddr 192.0.2.9 drop; }\n}\n"
    conf = ff.nft_conf_rules(text)
    assert [(c["chain"], c["text"], c["whole_line"]) for c in conf] == [("out", "ip daddr 192.0.2.9 drop", False)]
    out = ff.comment_out(text, [], {1: conf[0]["text"]})
    assert ff.nft_conf_rules(out) == []
    assert "policy accept;" in out and ff.MARK + "ip daddr 192.0.2.9 drop" in out


def test_command_syntax_and_includes() -> None:
    text = ('#!/usr/sbin/nft -f\nflush ruleset\ninclude "/etc/nftables.d/*.nft"\ninclude "local.nft" # site rules\n'
            "add table inet fw\nadd chain inet fw input { type filter hook input priority 0; }\n"
            "add rule inet fw input ip saddr 192.0.2.9 tcp dport 1191 drop\n")
    assert ff.nft_conf_includes(text) == ["/etc/nftables.d/*.nft", "local.nft"]
    assert [(c["family"], c["table"], c["chain"], c["text"]) for c in ff.nft_conf_rules(text)] == [
        ("inet", "fw", "input", "ip saddr 192.0.2.9 tcp dport 1191 drop")]


@pytest.mark.parametrize("name", ["rules.v4-debian-raspi3-image-spec", "rules.v4-edenreich-iptables-persistent-rules"])
def test_iptables_save_files(name: str) -> None:
    text = (FIX / "firewall_persisted" / name).read_text()
    rules = ff.ipt_save_rules(text)
    assert rules and all(r["table"] == "filter" and r["chain"] == "INPUT" for r in rules)
    victim = rules[1]
    # as `iptables -S` prints it (the probe's text), with or without quotes
    hits = [r for r in rules if ff.ipt_norm(r["text"]) == ff.ipt_norm(victim["text"])]
    assert hits == [victim]
    out = ff.comment_out(text, [victim["line"]])
    assert len(ff.ipt_save_rules(out)) == len(rules) - 1 and out.rstrip().endswith("COMMIT" if "edenreich" in name else "2017")
    assert out.endswith("\n") == text.endswith("\n")


def test_iptables_save_with_counters_and_other_tables() -> None:
    text = "*nat\n:POSTROUTING ACCEPT [0:0]\n[7:420] -A POSTROUTING -o stor0 -j MASQUERADE\nCOMMIT\n" \
           + (FIX / "firewall" / "iptables-save-nft-backend.txt").read_text()
    rules = ff.ipt_save_rules(text)
    assert ("nat", "POSTROUTING", "-A POSTROUTING -o stor0 -j MASQUERADE") in [(r["table"], r["chain"], r["text"]) for r in rules]
    drop = [r for r in rules if r["table"] == "filter" and ff.ipt_norm(r["text"]) == "-A STORAGE-IN -s 198.18.0.0/24 -j DROP"]
    assert len(drop) == 1


def test_firewalld_direct_rules() -> None:
    passthrough = (FIX / "firewall_persisted" / "direct.xml-aa3025-hpc-oracle9-rpi").read_text()
    assert ff.firewalld_direct_rules(passthrough) == []
    text = passthrough.replace("</direct>", (
        '  <rule ipv="ipv4" table="filter" chain="INPUT" priority="0">\n'
        "    -s 198.18.0.12/32 -p tcp -m tcp --dport 1191 -j DROP\n  </rule>\n"
        "  <rule ipv='ipv6' table='filter' chain='INPUT' priority='1'>-s fd00::12/128 -j DROP</rule>\n"
        '  <rule ipv="ipv4" table="filter" chain="INPUT" priority="2">-m comment --comment &quot;a &amp; b&quot; -j DROP</rule>\n'
        "</direct>"))
    rules = ff.firewalld_direct_rules(text)
    assert [(r["family"], r["chain"], r["text"]) for r in rules] == [
        ("ip", "INPUT_direct", "-A INPUT_direct -s 198.18.0.12/32 -p tcp -m tcp --dport 1191 -j DROP"),
        ("ip6", "INPUT_direct", "-A INPUT_direct -s fd00::12/128 -j DROP"),
        ("ip", "INPUT_direct", '-A INPUT_direct -m comment --comment "a & b" -j DROP'),
    ]
    out = ff.remove_spans(text, [rules[0]["span"]])
    assert [r["text"] for r in ff.firewalld_direct_rules(out)] == [r["text"] for r in rules[1:]]
    assert out.count("<passthrough") == 4 and out.rstrip().endswith("</direct>")


def test_a_one_element_set_matches_the_bare_element() -> None:
    """``ip saddr { 10.0.0.5 }`` in a hand-written nftables.conf is listed by nft as
    ``ip saddr 10.0.0.5``: the same rule (found by a generated lab site whose fix came back after
    a reboot); sets of several elements keep their braces."""
    assert ff.nft_norm("ip saddr { 198.18.0.12 } tcp dport 1191 counter drop") == \
        ff.nft_norm("ip saddr 198.18.0.12 tcp dport 1191 counter packets 4 bytes 240 drop")
    assert ff.nft_norm("tcp dport { 22, 1094 } accept") == "tcp dport { 22, 1094 } accept"
    assert ff.nft_norm("ip saddr { 10.0.0.5 } drop") != ff.nft_norm("ip saddr { 10.0.0.5, 10.0.0.6 } drop")
