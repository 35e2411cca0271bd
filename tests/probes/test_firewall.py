"""The ``firewall`` probe against rulesets captured in a namespace (tests/fixtures/firewall/capture.sh)."""

from __future__ import annotations

import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from probes import get_probe
from probes.firewall import FirewallProbe, normalize_network
from probes.probe import ProbeContext, ProbeParseError, not_applicable_reason

from tests.support.firewall_outputs import FULL, FW, IPT_LEGACY, IPT_NFT, NFT_JSON, probe_output
from tests.support.netns import run_in_namespace
from tests.support.paths import FIXTURES

CTX = ProbeContext(host="gpfs01", storage_prefixes=["198.18.0.0/24"])


def test_registered_and_needs_root():
    probe = get_probe("firewall")
    assert isinstance(probe, FirewallProbe) and probe.needs_root


@pytest.fixture(scope="module")
def facts():
    return FirewallProbe().parse(FULL)


def test_iptables_nft_tables_are_not_counted_twice(facts):
    assert facts.backends == ["iptables", "nft"]
    assert facts.skipped_nft_tables == ["ip filter", "ip nat", "ip6 filter"]
    # 8 ip + 1 nat + 2 ip6 from the save outputs, 10 from the native inet table
    assert facts.rule_count == len(facts.rules) == 21
    assert {(r.backend, r.family, r.table) for r in facts.rules} == {
        ("iptables", "ip", "filter"), ("iptables", "ip", "nat"), ("iptables", "ip6", "filter"), ("nft", "inet", "storage_guard")
    }


def test_chains_policies_and_hooks(facts):
    chains = {(c.backend, c.family, c.table, c.chain): c for c in facts.chains}
    inp = chains[("iptables", "ip", "filter", "INPUT")]
    assert (inp.hook, inp.policy, inp.rule_count) == ("input", "DROP", 5)
    user = chains[("iptables", "ip", "filter", "STORAGE-IN")]
    assert (user.hook, user.policy, user.rule_count) == (None, None, 3)
    assert chains[("iptables", "ip", "filter", "OUTPUT")].policy == "ACCEPT"
    assert chains[("iptables", "ip6", "filter", "INPUT")].policy == "DROP"
    nft_in = chains[("nft", "inet", "storage_guard", "input")]
    assert (nft_in.hook, nft_in.policy, nft_in.rule_count) == ("input", "DROP", 5)
    nft_user = chains[("nft", "inet", "storage_guard", "storage_in")]
    assert (nft_user.hook, nft_user.policy, nft_user.rule_count) == (None, None, 5)


def _rule(facts, backend, chain, contains):
    return next(r for r in facts.rules if r.backend == backend and r.chain == chain and contains in r.text)


def test_iptables_rule_fields(facts):
    jump = _rule(facts, "iptables", "INPUT", "STORAGE-IN")
    assert (jump.verdict, jump.addresses, jump.interfaces) == ("jump STORAGE-IN", ["198.18.0.0/24"], ["stor0"])
    assert jump.text == "-A INPUT -s 198.18.0.0/24 -i stor0 -j STORAGE-IN"
    limited = _rule(facts, "iptables", "STORAGE-IN", "--limit")
    assert limited.limit and limited.verdict == "accept"
    assert _rule(facts, "iptables", "STORAGE-IN", "-j DROP").verdict == "drop"
    assert _rule(facts, "iptables", "STORAGE-IN", "RETURN").verdict == "return"
    assert _rule(facts, "iptables", "INPUT", "REJECT").verdict == "reject"
    masq = _rule(facts, "iptables", "POSTROUTING", "MASQUERADE")
    assert masq.verdict is None and masq.interfaces == ["stor0"]
    v6 = _rule(facts, "iptables", "INPUT", "fd00:198:18::/64")
    assert v6.family == "ip6" and v6.addresses == ["fd00:198:18::/64"]


def test_nft_rule_fields(facts):
    jump = _rule(facts, "nft", "input", "jump storage_in")
    # the named set @storage_nets is inlined
    assert jump.addresses == ["198.18.0.0/24", "198.19.0.0/16"] and jump.interfaces == ["stor0"]
    assert jump.text == "iifname stor0 ip saddr @storage_nets jump storage_in"
    rate = _rule(facts, "nft", "storage_in", "limit rate")
    assert (rate.verdict, rate.limit, rate.addresses) == ("drop", True, ["198.18.0.0/24"])
    assert rate.text == "ip saddr 198.18.0.0/24 tcp dport 1191 limit rate over 500 mbytes/second drop"
    quota = _rule(facts, "nft", "storage_in", "quota")
    assert (quota.verdict, quota.limit, quota.addresses) == ("reject", True, ["198.18.0.10/32"])
    assert _rule(facts, "nft", "input", "tcp dport { 22, 1094 }").verdict == "accept"
    assert _rule(facts, "nft", "storage_in", "oifname").interfaces == ["stor1"]
    assert _rule(facts, "nft", "storage_in", "return").verdict == "return"


def test_legacy_iptables_is_a_separate_rule_set():
    # with the legacy backend, the nft "ip filter" table is a different kernel object: both count
    facts = FirewallProbe().parse(probe_output(iptables_save=IPT_LEGACY, nft=NFT_JSON))
    assert facts.skipped_nft_tables == []
    tables = {(r.backend, r.family, r.table) for r in facts.rules}
    assert ("iptables", "ip", "filter") in tables and ("nft", "ip", "filter") in tables
    hashlimit = _rule(facts, "iptables", "INPUT", "hashlimit")
    assert hashlimit.limit and hashlimit.verdict == "drop" and hashlimit.addresses == ["198.18.0.0/24"]
    commented = _rule(facts, "iptables", "INPUT", "GPFS daemon")
    assert commented.addresses == ["198.18.0.5/32"] and commented.verdict == "accept"
    # iptables-nft rules read from nft JSON: compat (xt) expressions are rendered and classified
    conntrack = _rule(facts, "nft", "INPUT", "xt match conntrack")
    assert conntrack.verdict == "accept"
    assert _rule(facts, "nft", "INPUT", "xt target REJECT").verdict == "reject"


def test_nft_only_and_empty_rulesets():
    facts = FirewallProbe().parse(probe_output(nft=NFT_JSON))
    # without iptables-save nothing is skipped: the iptables-nft tables are read from the JSON
    assert facts.backends == ["nft"] and facts.skipped_nft_tables == [] and facts.rule_count == 21
    assert {r.table for r in facts.rules} == {"filter", "nat", "storage_guard"}
    empty = FirewallProbe().parse(probe_output(iptables_save="", nft='{"nftables": [{"metainfo": {"version": "1.0.6"}}]}'))
    assert empty.backends == ["iptables", "nft"] and empty.rules == [] and empty.chains == []


def test_normalize_network():
    assert normalize_network("198.18.0.10") == "198.18.0.10/32"
    assert normalize_network("198.18.0.7/24") == "198.18.0.0/24"
    assert normalize_network("fd00::1") == "fd00::1/128"
    assert normalize_network("@storage_nets") is None


def test_failed_tool_is_a_parse_error_with_its_message():
    text = (
        "@@section iptables-save\n@@exit 4\n@@section iptables-save.stderr\n"
        "iptables-save v1.8.9 (nf_tables): Could not fetch rule set generation id: Permission denied (you must be root)\n"
    )
    with pytest.raises(ProbeParseError, match="iptables-save exited 4: .*Permission denied"):
        FirewallProbe().parse(text)


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "no iptables-save or nft section"),
        ("@@section iptables-save\n" + IPT_NFT, "no exit status"),
        (probe_output(iptables_save=IPT_NFT[: IPT_NFT.index("COMMIT")]), "has no COMMIT"),
        (probe_output(iptables_save=IPT_NFT.replace(":STORAGE-IN - [0:0]\n", "")), "undeclared chain"),
        (probe_output(iptables_save=IPT_NFT.replace("-A INPUT -i lo", "-Z INPUT -i lo")), "not an iptables-save line"),
        (probe_output(iptables_save=IPT_NFT.replace('-j ACCEPT', '-m comment --comment "x -j ACCEPT', 1)), "unbalanced quotes"),
        (probe_output(nft=NFT_JSON[: len(NFT_JSON) // 2]), "not JSON"),
        (probe_output(nft='{"nftables": {}}'), "no 'nftables' list"),
        (probe_output(nft='{"nftables": [{"rule": {"family": "ip", "table": "t", "chain": "c", "expr": []}}]}'), "undeclared chain"),
        (probe_output(nft='{"nftables": [{"chain": {"family": "ip"}}]}'), "chain without"),
        ("@@section iptables\nx\n@@exit 0\n", "unexpected section"),
    ],
)
def test_malformed_output_is_a_parse_error(text, message):
    with pytest.raises(ProbeParseError, match=message):
        FirewallProbe().parse(text)


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_arbitrary_text_raises_only_parse_errors(text):
    try:
        FirewallProbe().parse(text)
    except ProbeParseError:
        pass


_PIECES = FULL.splitlines() + IPT_LEGACY.splitlines() + ["@@section nft", "@@section iptables-save", "@@exit 0", "@@exit 1", "*filter", "COMMIT"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=60))
def test_shuffled_capture_lines_raise_only_parse_errors(lines):
    try:
        FirewallProbe().parse("\n".join(lines))
    except ProbeParseError:
        pass


_JSON_LEAVES = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
_JSON = st.recursive(_JSON_LEAVES, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.sampled_from(
    ["family", "table", "chain", "name", "expr", "match", "left", "right", "payload", "meta", "prefix", "set", "elem",
     "range", "hook", "policy", "jump", "target", "limit", "xt", "key", "field", "rule", "nftables"]), c, max_size=4), max_leaves=30)


@settings(max_examples=200, deadline=None)
@given(st.lists(_JSON, max_size=5))
def test_arbitrary_nft_json_raises_only_parse_errors(items):
    import json

    objs = [{"table": {"family": "ip", "name": "t"}}, {"chain": {"family": "ip", "table": "t", "name": "c"}}]
    objs += [{"rule": {"family": "ip", "table": "t", "chain": "c", "expr": items}}, {"set": {"family": "ip", "table": "t", "name": "s", "elem": items}}]
    try:
        FirewallProbe().parse(probe_output(nft=json.dumps({"nftables": objs})))
    except ProbeParseError:
        pass


def test_not_applicable_without_any_tool():
    out = subprocess.run(["/bin/sh", "-c", FirewallProbe().script(CTX)], capture_output=True, text=True, env={"PATH": "/nonexistent"}, check=True)
    assert not_applicable_reason(out.stdout) == "neither iptables-save nor nft found"


def test_script_in_a_namespace_with_iptables_and_nft(netns):
    for cmd in (
        "iptables -P INPUT DROP",
        "iptables -A INPUT -s 198.18.0.0/24 -m limit --limit 100/sec -j ACCEPT",
        "nft add table inet t",
        "nft 'add chain inet t in { type filter hook input priority 0; policy accept; }'",
        "nft add rule inet t in iifname st0 ip saddr 198.18.0.0/24 drop",
    ):
        run_in_namespace(netns, cmd).check_returncode()
    out = run_in_namespace(netns, FirewallProbe().script(CTX))
    assert out.returncode == 0, out.stderr
    facts = FirewallProbe().parse(out.stdout)
    assert facts.backends == ["iptables", "nft"]
    assert facts.skipped_nft_tables == ["ip filter"]
    assert facts.rule_count == 2
    ipt = _rule(facts, "iptables", "INPUT", "198.18.0.0/24")
    assert ipt.limit and ipt.verdict == "accept"
    nft = _rule(facts, "nft", "in", "drop")
    assert nft.addresses == ["198.18.0.0/24"] and nft.interfaces == ["st0"]
    policies = {(c.backend, c.chain): c.policy for c in facts.chains}
    assert policies[("iptables", "INPUT")] == "DROP" and policies[("nft", "in")] == "ACCEPT"


def test_the_persisted_iptables_files_are_read_and_parsed_as_text():
    """The files a host loads at boot (the firewall role's firewall_iptables_files, default the
    distributions' paths) are read by the probe, verbatim: the controller canonicalises them."""
    real = FIXTURES / "firewall_persisted" / "rules.v4-soulsymphonies-debian-setup"
    nft = FIXTURES / "firewall_persisted" / "debian-nftables.conf"
    ctx = CTX.model_copy(update={"vars": {"firewall_iptables_files": {"ip": [str(real)], "ip6": ["/nonexistent/rules.v6"]},
                                          "firewall_nftables_conf": str(nft)}})
    script = FirewallProbe().script(ctx)
    assert str(real) in script and "/etc/iptables/rules.v4" not in script
    assert "/etc/iptables/rules.v4" in FirewallProbe().script(CTX)
    reads = "\n".join(ln for ln in script.splitlines() if "@@section persisted" in ln)  # the file reads alone
    persisted = subprocess.run(["/bin/sh", "-c", reads], capture_output=True, text=True).stdout
    save = (FW / "iptables-save-nft-backend.txt").read_text()
    out = f"@@section iptables-save\n{save}\n@@exit 0\n" + persisted[persisted.index("@@section persisted"):]
    facts = FirewallProbe().parse(out)
    assert [(f.backend, f.family, f.path) for f in facts.persisted_files] == [("iptables", "ip", str(real)),
                                                                              ("nft", "", str(nft))]
    assert facts.persisted_files[0].text.strip() == real.read_text().strip()
    assert facts.persisted_rules == [] and facts.persisted_canonicaliser is None  # the controller's part
