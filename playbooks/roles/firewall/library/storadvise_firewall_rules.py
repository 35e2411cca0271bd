#!/usr/bin/python
# -*- coding: utf-8 -*-
# storadvise firewall: remove exactly the named rules (iptables or nft); or put them back.

from __future__ import annotations

DOCUMENTATION = r"""
module: storadvise_firewall_rules
short_description: Remove the named firewall rules (never a whole ruleset), with a backup for rollback
description:
  - iptables/ip6tables rules are named by their iptables-save line (C(-A CHAIN ...)); each is
    checked with C(-C) and removed with C(-D) and the same specification.
  - nft rules are named by family, table, chain and text; the handle is looked up at run time by
    the text (C(nft -a list chain)) and the rule deleted by handle.
  - The removed rules and their positions are recorded in a JSON backup before the removal;
    C(state=rollback) re-inserts them at their positions.
options:
  rules:
    description: Rules to remove (backend, family, table, chain, text).
    type: list
    elements: dict
    default: []
  backup_file:
    description: JSON file recording the removed rules.
    type: path
    required: true
  state:
    description: C(absent) removes the rules, C(rollback) re-adds the recorded ones.
    type: str
    choices: [absent, rollback]
    default: absent
author: storadvise
"""

EXAMPLES = r"""
- name: Remove a rate limit on the storage network
  storadvise_firewall_rules:
    rules:
      - {backend: iptables, family: ip, table: filter, chain: INPUT, text: "-A INPUT -s 10.0.0.1/32 -j DROP"}
    backup_file: /var/lib/storadvise/backup/firewall.json
"""

RETURN = r"""
removed:
  description: Rules removed (or, in check mode, that would be).
  type: list
  returned: always
not_found:
  description: Named rules not present (already removed, or changed since the scan).
  type: list
  returned: always
"""

import re

from ansible.module_utils.storadvise_state import load_backup, retire_backup, run_backed_module, save_backup

_HANDLE = re.compile(r"\s+# handle (\d+)\s*$")


def norm(text):
    return " ".join(str(text).replace('"', " ").split())


_COUNTER = re.compile(r"\bcounter packets \d+ bytes \d+")
_DEFAULT_BURST = re.compile(r"\s+burst 5 packets\b")


def nft_norm(text):
    """nft rule text without run-time counters and without the default limit burst (the JSON
    rendering spells out ``burst 5 packets``, ``nft list`` leaves it out)."""
    return norm(_DEFAULT_BURST.sub("", _COUNTER.sub("counter", norm(text))))


def subsequence(short, long):
    it = iter(long)
    return all(tok in it for tok in short)


def ipt_bin(module, family):
    name = "ip6tables" if family in ("ip6", "ipv6", "inet6") else "iptables"
    return module.get_bin_path(name, required=True)


def ipt_save_tokens(text):
    """Words of an iptables-save line. Quoting as libxtables writes it: a word with blanks or
    quotes is put in double quotes and every backslash escapes the next character (``\\'`` is
    ``'``); shlex would keep the backslash, so a comment holding a quote could not be deleted."""
    tokens, cur, in_word, quoted, i = [], [], False, False, 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            cur.append(text[i + 1])
            in_word, i = True, i + 2
            continue
        if c == '"':
            quoted, in_word = not quoted, True
        elif c.isspace() and not quoted:
            if in_word:
                tokens.append("".join(cur))
            cur, in_word = [], False
        else:
            cur.append(c)
            in_word = True
        i += 1
    if quoted:
        raise ValueError("unbalanced quote in iptables rule text: %r" % text)
    if in_word:
        tokens.append("".join(cur))
    return tokens


def ipt_spec(rule):
    """The rule specification after ``-A CHAIN``."""
    tokens = ipt_save_tokens(rule["text"])
    if len(tokens) < 2 or tokens[0] not in ("-A", "--append"):
        raise ValueError("iptables rule text must be an iptables-save line starting with -A CHAIN: %r" % rule["text"])
    return tokens[1], tokens[2:]


def ipt_rules(module, rule):
    """Rule lines of the chain (as ``-S`` prints them, the same as iptables-save)."""
    b = ipt_bin(module, rule.get("family"))
    rc, out, err = module.run_command([b, "-w", "-t", rule["table"], "-S", rule["chain"]])
    if rc != 0:
        return None
    return [line for line in out.splitlines() if line.startswith("-A ")]


def ipt_position(module, rule):
    """1-based position of the rule in its chain, or None when absent."""
    lines = ipt_rules(module, rule)
    if lines is None:
        return None
    want = norm(rule["text"])
    for i, line in enumerate(lines):
        if norm(line) == want:
            return i + 1
    b = ipt_bin(module, rule.get("family"))
    chain, spec = ipt_spec(rule)
    rc, _o, _e = module.run_command([b, "-w", "-t", rule["table"], "-C", chain] + spec)
    return -1 if rc == 0 else None  # present but printed differently: position unknown


def nft_rules(module, rule):
    """[(handle, text)] of the chain, or None when the chain does not exist."""
    b = module.get_bin_path("nft", required=True)
    rc, out, _err = module.run_command([b, "-a", "list", "chain", rule["family"], rule["table"], rule["chain"]])
    if rc != 0:
        return None
    rules = []
    depth = 0
    for line in out.splitlines():
        s = _HANDLE.sub("", line).strip()
        if s.endswith("{"):
            depth += 1
            continue
        if s == "}":
            depth -= 1
            continue
        m = _HANDLE.search(line)
        if not m or s.startswith(("type ", "policy ")) or depth < 2:
            continue
        rules.append((int(m.group(1)), _HANDLE.sub("", line).strip()))
    return rules


def nft_find(module, rule):
    """(index, handle, text) of the named rule, or None."""
    rules = nft_rules(module, rule)
    if not rules:
        return None
    want = nft_norm(rule["text"])
    for i, (h, text) in enumerate(rules):
        if nft_norm(text) == want:
            return i, h, text
    # a rendering that spells out more (or less) than `nft list`: accept one unique rule whose
    # words are, in order, a subsequence of the other's
    loose = [(i, h, text) for i, (h, text) in enumerate(rules)
             if subsequence(nft_norm(text).split(), want.split()) or subsequence(want.split(), nft_norm(text).split())]
    if len(loose) == 1:
        return loose[0]
    handle = rule.get("handle")
    if handle is not None:
        for i, (h, text) in enumerate(rules):
            if h == int(handle):
                module.warn("nft rule handle %s found but its text differs from the plan (%r vs %r): left alone"
                            % (handle, text, rule["text"]))
    return None


def describe(rule):
    return "%s %s %s %s: %s" % (rule.get("backend"), rule.get("family") or "", rule["table"], rule["chain"], rule["text"])


def apply(module, p):
    result = {"changed": False, "removed": [], "not_found": []}
    todo = []
    for rule in p["rules"]:
        for k in ("backend", "table", "chain", "text"):
            if not rule.get(k):
                module.fail_json(msg="firewall rule without %s: %r" % (k, rule))
        if rule["backend"] == "iptables":
            pos = ipt_position(module, rule)
            if pos is None:
                result["not_found"].append(describe(rule))
                continue
            todo.append((rule, {"position": pos}))
        elif rule["backend"] == "nft":
            if not rule.get("family"):
                module.fail_json(msg="nft rule without family: %r" % rule)
            found = nft_find(module, rule)
            if found is None:
                result["not_found"].append(describe(rule))
                continue
            todo.append((rule, {"index": found[0], "handle": found[1], "listed": found[2]}))
        else:
            module.fail_json(msg="unknown firewall backend %r (iptables or nft)" % rule["backend"])
    result["removed"] = [describe(r) for r, _ in todo]
    result["changed"] = bool(todo)
    if module._diff and todo:
        result["diff"] = {"before": "".join(describe(r) + "\n" for r, _ in todo), "after": "",
                          "before_header": "rules removed", "after_header": "rules removed"}
    if not todo or module.check_mode:
        return result
    backup = load_backup(p["backup_file"]) or {"role": "firewall", "removed": []}
    for rule, where in todo:
        entry = dict(rule, **where)
        if not any(e.get("text") == rule["text"] and e.get("chain") == rule["chain"] and e.get("table") == rule["table"]
                   for e in backup["removed"]):
            backup["removed"].append(entry)
    save_backup(p["backup_file"], backup)
    for rule, where in todo:
        if rule["backend"] == "iptables":
            chain, spec = ipt_spec(rule)
            rc, _o, err = module.run_command([ipt_bin(module, rule.get("family")), "-w", "-t", rule["table"], "-D", chain] + spec)
        else:
            rc, _o, err = module.run_command([module.get_bin_path("nft", required=True), "delete", "rule", rule["family"],
                                              rule["table"], rule["chain"], "handle", str(where["handle"])])
        if rc != 0:
            module.fail_json(msg="could not remove %s: %s" % (describe(rule), (err or "").strip()), **result)
    return result


def rollback(module, p):
    result = {"changed": False, "removed": [], "not_found": [], "restored": [], "rolled_back": False}
    backup = load_backup(p["backup_file"])
    if backup is None:
        result["msg"] = "no backup at %s: nothing to roll back on this host (nothing changed)" % p["backup_file"]
        return result
    todo = []
    for e in backup.get("removed") or []:
        present = ipt_position(module, e) if e["backend"] == "iptables" else nft_find(module, e)
        if present is None:
            todo.append(e)
    result["restored"] = [describe(e) for e in todo]
    result["changed"] = True
    result["rolled_back"] = True
    if module._diff and todo:
        result["diff"] = {"before": "", "after": "".join(describe(e) + "\n" for e in todo),
                          "before_header": "rules restored", "after_header": "rules restored"}
    if module.check_mode:
        return result
    # re-insert in recorded order, lowest position first, so that positions line up again
    for e in sorted(todo, key=lambda e: e.get("position") or e.get("index") or 0):
        if e["backend"] == "iptables":
            chain, spec = ipt_spec(e)
            count = len(ipt_rules(module, e) or [])
            pos = e.get("position") or -1
            b = ipt_bin(module, e.get("family"))
            cmd = [b, "-w", "-t", e["table"], "-I", chain, str(pos)] + spec if 0 < pos <= count + 1 else \
                [b, "-w", "-t", e["table"], "-A", chain] + spec
        else:
            nft = module.get_bin_path("nft", required=True)
            count = len(nft_rules(module, e) or [])
            idx = e.get("index")
            text = e.get("listed") or e["text"]
            if idx is not None and idx < count:
                cmd = [nft, "insert", "rule", e["family"], e["table"], e["chain"], "index", str(idx)] + [text]
            else:
                cmd = [nft, "add", "rule", e["family"], e["table"], e["chain"]] + [text]
        rc, _o, err = module.run_command(cmd)
        if rc != 0:
            module.fail_json(msg="could not restore %s: %s" % (describe(e), (err or "").strip()), **result)
    result["backup_kept_as"] = retire_backup(p["backup_file"])
    return result


def main():
    run_backed_module(
        dict(
            rules=dict(type="list", elements="dict", default=[]),
        ),
        apply, rollback, apply_state="absent",
    )


if __name__ == "__main__":
    main()
