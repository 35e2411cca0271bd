"""firewalld zone files' rich rules as the nft rules firewalld loads for them
(playbooks/module_utils/storadvise_firewalld_zones.py), which the firewall role matches a scanned
``inet firewalld`` rule against and the lab loads at `lab reboot`.

The rich rules are the examples of firewalld.richlanguage(5) ("Examples" section: Example 1-6,
firewalld 1.x man page) written as zone XML the way firewalld.zone(5) describes ``<rule>``, plus the
grid-storage ones the advisor meets (a drop of a peer on xrootd's port 1094, a rate limit). The round
trip loads the translation into a real nft in a network namespace of the test's own and compares
what the scan's probe renders from ``nft -j list ruleset`` (probes/nftables_json.py)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from probes.nftables_json import parse_nft_json

REPO = Path(__file__).resolve().parents[2]
MU = REPO / "playbooks" / "module_utils"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, MU / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


fz = _load("storadvise_firewalld_zones")
ff = _load("storadvise_firewall_files")

# firewalld.richlanguage(5) examples 1-6, as zone XML (firewalld.zone(5))
MAN_EXAMPLES = """<?xml version="1.0" encoding="utf-8"?>
<zone>
  <short>Public</short>
  <service name="ssh"/>
  <rule>
    <protocol value="ah"/>
    <accept/>
  </rule>
  <rule>
    <service name="ftp"/>
    <log prefix="ftp" level="info">
      <limit value="1/m"/>
    </log>
    <accept/>
  </rule>
  <rule family="ipv4">
    <source address="192.168.0.0/24"/>
    <service name="tftp"/>
    <log prefix="tftp" level="info">
      <limit value="1/m"/>
    </log>
    <accept/>
  </rule>
  <rule family="ipv6">
    <source address="1:2:3:4:6::"/>
    <service name="radius"/>
    <log prefix="dns" level="info">
      <limit value="3/m"/>
    </log>
    <reject/>
  </rule>
  <rule family="ipv6">
    <source address="1:2:3:4:6::"/>
    <forward-port port="4011" protocol="tcp" to-port="4012" to-addr="1::2:3:4:7"/>
  </rule>
  <rule family="ipv4">
    <source address="192.168.2.3"/>
    <reject type="icmp-admin-prohibited"/>
  </rule>
</zone>
"""

GRID = """<?xml version="1.0" encoding="utf-8"?>
<zone target="default">
  <short>storage</short>
  <service name="ssh"/>
  <port protocol="tcp" port="1094"/>
  <rule family="ipv4">
    <source address="10.77.0.9"/>
    <port protocol="tcp" port="1094"/>
    <drop/>
  </rule>
  <rule family="ipv4">
    <source address="10.77.0.0/24" invert="true"/>
    <port protocol="tcp" port="1094-1096"/>
    <reject/>
  </rule>
  <rule family="ipv4" priority="-5">
    <source address="10.77.0.10"/>
    <port protocol="tcp" port="1191"/>
    <accept>
      <limit value="100/s"/>
    </accept>
  </rule>
  <rule family="ipv6">
    <destination address="2001:db8::1"/>
    <source-port protocol="udp" port="53"/>
    <drop/>
  </rule>
  <rule family="ipv4">
    <port protocol="tcp" port="2811"/>
    <reject/>
  </rule>
  <rule>
    <port protocol="tcp" port="8443"/>
    <drop/>
  </rule>
</zone>
"""


def test_man_page_examples_translate_only_where_certain() -> None:
    rules = fz.zone_rich_rules(MAN_EXAMPLES, "public")
    # only example 1 (protocol ah, accept) has a certain nft form; services, logs, forward-ports
    # and typed rejects are left out (the role keeps refusing those)
    assert [(r["chain"], r["text"]) for r in rules] == [("filter_IN_public_allow", "meta l4proto ah accept")]


def test_grid_rules_chain_and_listed_text() -> None:
    rules = fz.zone_rich_rules(GRID, "storage")
    assert [(r["chain"], r["text"]) for r in rules] == [
        ("filter_IN_storage_deny", "ip saddr 10.77.0.9 tcp dport 1094 drop"),
        ("filter_IN_storage_deny", "ip saddr != 10.77.0.0/24 tcp dport 1094-1096 reject with icmp port-unreachable"),
        ("filter_IN_storage_pre", "ip saddr 10.77.0.10 tcp dport 1191 limit rate 100/second accept"),
        ("filter_IN_storage_deny", "ip6 daddr 2001:db8::1 udp sport 53 drop"),
        ("filter_IN_storage_deny", "tcp dport 2811 reject with icmp port-unreachable"),
        ("filter_IN_storage_deny", "tcp dport 8443 drop"),
    ]
    # the spans cut exactly the <rule> elements, whole lines
    first = rules[0]["span"]
    assert GRID[first[0]:first[1]].startswith("  <rule family=\"ipv4\">\n")
    assert GRID[first[0]:first[1]].endswith("</rule>\n")
    out = ff.remove_spans(GRID, [first])
    assert "10.77.0.9" not in out and out.count("<rule") == 5
    assert [r["text"] for r in fz.zone_rich_rules(out, "storage")] == [r["text"] for r in rules[1:]]


@pytest.mark.parametrize("bad", [
    "<zone><rule family='ipv5'><drop/></rule></zone>",
    "<zone><rule><source address='10.0.0.1'/><drop/></rule></zone>",  # address without family
    "<zone><rule family='ipv4'><source address='not-an-address'/><drop/></rule></zone>",
    "<zone><rule family='ipv4'><port protocol='tcp' port='99999'/><drop/></rule></zone>",
    "<zone><rule family='ipv4'><source ipset='blocked'/><drop/></rule></zone>",
    "<zone><rule family='ipv6'><source address='10.0.0.1'/><drop/></rule></zone>",
    "<zone><rule family='ipv4'><port protocol='tcp' port='1'/></rule></zone>",  # no action
    "<zone><rule family='ipv4'><drop/><accept/></rule></zone>",
    "<zone><rule family='ipv4' priority='x'><drop/></rule></zone>",
    "<zone><rule family='ipv4'><drop></rule></zone>",  # not XML
    "not a zone file at all",
])
def test_rules_not_certainly_translated_give_nothing(bad: str) -> None:
    assert fz.zone_rich_rules(bad, "public") == []


def test_zone_names() -> None:
    assert fz.zone_name("public.xml") == "public"
    assert fz.zone_name("public.xml.old") is None
    assert fz.zone_name("a-zone-name-too-long.xml") is None
    assert fz.zone_name("../x.xml") is None


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("nft") or not shutil.which("unshare"),
                    reason="needs root, nft and unshare (a network namespace of the test's own)")
@pytest.mark.root  # unshare -n
def test_translation_loads_into_real_nft_and_lists_as_predicted() -> None:
    """The script the lab loads is valid nft; each rule, listed back and rendered by the scan's
    probe, equals the predicted text under the role's normalisation, in the predicted chain."""
    zones = [("storage", GRID), ("public", MAN_EXAMPLES)]
    script = fz.zone_nft_script(zones)
    # `unshare -n`: a new network namespace that ends with the command (nothing to clean up)
    cp = subprocess.run(["unshare", "-n", "sh", "-c", "nft -f - && nft -j list ruleset"], input=script,
                        capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr + script
    _chains, listed, errs = parse_nft_json(cp.stdout, set())
    assert not errs
    got = sorted((r.chain, ff.nft_norm(r.text)) for r in listed
                 if r.table == "firewalld" and not r.text.startswith("jump "))
    want = sorted((r["chain"], ff.nft_norm(r["text"])) for z, t in zones for r in fz.zone_rich_rules(t, z))
    assert got == want and len(want) == 7
    jumps = [r.text for r in listed if r.chain == "filter_IN_storage"]
    assert jumps == [f"jump filter_IN_storage_{s}" for s in ("pre", "deny", "allow", "post")]
    assert json.loads(cp.stdout)["nftables"]
