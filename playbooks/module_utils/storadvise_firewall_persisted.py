# -*- coding: utf-8 -*-
# storadvise: which files of a host's persisted firewall ruleset hold a planned rule.
# Licensed as storadvise itself.
"""The persisted rulesets the firewall role reads on the managed host: the nft script and its
includes, iptables-save files, firewalld's direct.xml and zone files. The text functions are in
storadvise_firewall_files and storadvise_firewalld_zones; this module only finds and reads the files."""

from __future__ import annotations

import glob
import os

try:  # a project's module_utils (a plan directory's ansible.cfg), else the installed collection's
    from ansible.module_utils.storadvise_canonical import ipt_rule_canonical
    from ansible.module_utils.storadvise_firewall_files import (
        firewalld_direct_rules, ipt_norm, ipt_save_rules, nft_conf_includes, nft_conf_rules, nft_norm)
    from ansible.module_utils.storadvise_firewalld_zones import zone_name, zone_rich_rules
    from ansible.module_utils.storadvise_state import read_text
except ImportError:
    from ansible_collections.storadvise.tuning.plugins.module_utils.storadvise_canonical import ipt_rule_canonical
    from ansible_collections.storadvise.tuning.plugins.module_utils.storadvise_firewall_files import (
        firewalld_direct_rules, ipt_norm, ipt_save_rules, nft_conf_includes, nft_conf_rules, nft_norm)
    from ansible_collections.storadvise.tuning.plugins.module_utils.storadvise_firewalld_zones import (
        zone_name, zone_rich_rules)
    from ansible_collections.storadvise.tuning.plugins.module_utils.storadvise_state import read_text

#: the nft table firewalld's nftables backend owns (its rules come from zone and policy files)
FIREWALLD_TABLE = ("inet", "firewalld")

def nft_files(conf):
    """The nft script read at boot and every file it includes (recursively, globs sorted; a
    relative include is resolved against the including file's directory)."""
    out, todo = [], [conf]
    while todo:
        path = todo.pop(0)
        if path in out or len(out) > 200:
            continue
        text = read_text(path)
        if text is None:
            continue
        out.append(path)
        for inc in nft_conf_includes(text):
            full = inc if os.path.isabs(inc) else os.path.join(os.path.dirname(path), inc)
            todo.extend(sorted(glob.glob(full)) if glob.has_magic(full) else [full])
    return out


def ipt_family(rule):
    return "ip6" if rule.get("family") in ("ip6", "ipv6", "inet6") else "ip"


def ipt_same(file_rule, rule, path, line):
    """A rule line of a persisted file gives the planned rule: the same text once normalised, the
    same rule by meaning (iptables' own rewriting of rates, bursts, addresses: storadvise_canonical),
    or the very line the plan names as its persisted source (matched by meaning on the controller,
    where the file was loaded into a scratch network namespace and read back)."""
    if ipt_norm(file_rule) == ipt_norm(rule["text"]):
        return True
    if ipt_rule_canonical(file_rule) == ipt_rule_canonical(rule["text"]):
        return True
    return named_source(rule, path, line)


def named_source(rule, path, line):
    """The file line is the one the plan names as the rule's persisted source (``persisted``)."""
    return any(s.get("path") == path and " ".join(str(s.get("line", "")).split()) == " ".join(line.split())
               for s in rule.get("persisted") or [])


def persisted_hits(p, rule):
    """{path: (kind, [line numbers], {line: statement}, [spans])} of the files holding ``rule``."""
    hits = {}
    if rule["backend"] == "nft" and (rule.get("family"), rule["table"]) == FIREWALLD_TABLE:
        return firewalld_zone_hits(p, rule)
    if rule["backend"] == "nft":
        want = nft_norm(rule["text"])
        for path in nft_files(p["nftables_conf"]) if p["nftables_conf"] else []:
            text = read_text(path) or ""
            lines = text.splitlines()
            for r in nft_conf_rules(text):
                if (r["family"], r["table"], r["chain"]) == (rule["family"], rule["table"], rule["chain"]) \
                        and (nft_norm(r["text"]) == want or named_source(rule, path, lines[r["line"]])):
                    h = hits.setdefault(path, ("nft", [], {}, []))
                    if r["whole_line"]:
                        h[1].append(r["line"])
                    else:
                        h[2][r["line"]] = r["text"]
        return hits
    for path in (p["iptables_files"] or {}).get(ipt_family(rule)) or []:
        text = read_text(path)
        if text is None:
            continue
        lines = [r["line"] for r in ipt_save_rules(text)
                 if r["table"] == rule["table"] and ipt_same(r["text"], rule, path, text.splitlines()[r["line"]])]
        if lines:
            hits[path] = ("iptables-save", lines, {}, [])
    if p["firewalld_dir"]:
        path = os.path.join(p["firewalld_dir"], "direct.xml")
        text = read_text(path)
        if text:
            spans = [r["span"] for r in firewalld_direct_rules(text)
                     if r["family"] == ipt_family(rule) and r["table"] == rule["table"]
                     and ipt_same(r["text"], rule, path, r["text"])]
            if spans:
                hits[path] = ("firewalld direct", [], {}, spans)
    return hits


def firewalld_zone_hits(p, rule):
    """{zone file: ("firewalld zone", [], {}, [spans])} of the rich rules that give ``rule`` in
    firewalld's nft table (storadvise_firewalld_zones says which rich rules and how)."""
    hits = {}
    zones = os.path.join(p["firewalld_dir"], "zones") if p["firewalld_dir"] else None
    if not zones or not os.path.isdir(zones):
        return hits
    want = nft_norm(rule["text"])
    for name in sorted(os.listdir(zones)):
        zone = zone_name(name)
        if zone is None:
            continue
        path = os.path.join(zones, name)
        spans = [r["span"] for r in zone_rich_rules(read_text(path) or "", zone)
                 if r["chain"] == rule["chain"] and nft_norm(r["text"]) == want]
        if spans:
            hits[path] = ("firewalld zone", [], {}, spans)
    return hits
