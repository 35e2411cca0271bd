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
  - A rule is matched by equality after normalisation (whitespace, quotes, counters, default burst,
    /32 on a single address), never by a substring. In a persisted iptables file, a line is also
    matched by meaning (the rates, bursts and spellings iptables rewrites when it stores a rule,
    module_utils storadvise_canonical), or as the line the plan names in the rule's C(persisted)
    list ({path, line}: found on the controller by loading the file into a scratch network
    namespace and reading it back).
  - The rule is also taken out of the ruleset persisted for boot (the nft script and its includes,
    iptables-save files, firewalld direct.xml), so that a reboot does not bring it back.
  - A rule of firewalld's own nft table (C(inet firewalld)) is removed only when a zone file under
    C(firewalld_dir)/zones holds the rich rule that gives it; the rich rule is taken out of the zone
    file too. Other firewalld rules are refused with the firewall-cmd way to remove them.
  - The removed rules, their positions and the edited files' contents are recorded in a JSON backup
    before the removal; C(state=rollback) re-inserts the rules and restores the files.
options:
  rules:
    description: Rules to remove (backend, family, table, chain, text; optionally persisted, the [{path, line}] of the file lines that load the rule at boot).
    type: list
    elements: dict
    default: []
  nftables_conf:
    description: The nft script loaded at boot; the rule is commented out there and in the files it includes.
    type: path
    default: /etc/nftables.conf
  iptables_files:
    description: iptables-save files loaded at boot, per family (C(ip), C(ip6)); the rule line is commented out.
    type: dict
  firewalld_dir:
    description: firewalld's configuration directory; a matching C(<rule>) of its direct.xml or of a zone file under zones/ is removed.
    type: path
    default: /etc/firewalld
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
persisted:
  description: Rules taken out of the persisted ruleset (file, rule).
  type: list
  returned: always
changed_settings:
  description: What changed (setting, old, new), one entry per rule and per file.
  type: list
  returned: always
failed_settings:
  description: Rules that could not be removed, with why (the others are removed).
  type: list
  returned: always
not_found:
  description: Named rules not present (already removed, or changed since the scan).
  type: list
  returned: always
"""

import re

try:  # a project's module_utils (a plan directory's ansible.cfg), else the installed collection's
    from ansible.module_utils.storadvise_firewall_files import comment_out, ipt_norm, nft_norm, remove_spans
    from ansible.module_utils.storadvise_firewall_persisted import FIREWALLD_TABLE, persisted_hits
    from ansible.module_utils.storadvise_state import (atomic_write, load_backup, read_text, record_change,
                                                       record_failure, restore_text, retire_backup,
                                                       run_backed_module, save_backup)
except ImportError:
    from ansible_collections.storadvise.tuning.plugins.module_utils.storadvise_firewall_files import (
        comment_out, ipt_norm, nft_norm, remove_spans)
    from ansible_collections.storadvise.tuning.plugins.module_utils.storadvise_firewall_persisted import (
        FIREWALLD_TABLE, persisted_hits)
    from ansible_collections.storadvise.tuning.plugins.module_utils.storadvise_state import (
        atomic_write, load_backup, read_text, record_change, record_failure, restore_text, retire_backup,
        run_backed_module, save_backup)

_HANDLE = re.compile(r"\s+# handle (\d+)\s*$")
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}\Z")  # \Z: "$" would let a trailing newline through
_FAMILIES = ("ip", "ip6", "inet", "arp", "bridge", "netdev", "ipv4", "ipv6", "inet6")


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


def invalid(rule):
    """Why a planned rule cannot be acted on (missing or malformed fields), or None."""
    for k in ("backend", "table", "chain", "text"):
        if not rule.get(k):
            return "firewall rule without %s" % k
    if rule["backend"] not in ("iptables", "nft"):
        return "unknown firewall backend %r (iptables or nft)" % rule["backend"]
    if rule["backend"] == "nft" and not rule.get("family"):
        return "nft rule without family"
    if rule.get("family") and rule["family"] not in _FAMILIES:
        return "unknown family %r" % rule["family"]
    for k in ("table", "chain"):
        if not _NAME.match(str(rule[k])):
            return "%s %r is not a table/chain name" % (k, rule[k])
    if any(c in str(rule["text"]) for c in "\n\r\0"):
        return "rule text holds a line break"
    if rule["backend"] == "iptables":
        try:
            chain, _spec = ipt_spec(rule)
        except ValueError as exc:
            return str(exc)
        if chain != rule["chain"]:
            return "rule text names chain %s, the rule says %s" % (chain, rule["chain"])
    return None


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
    want = ipt_norm(rule["text"])
    for i, line in enumerate(lines):
        if ipt_norm(line) == want:
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
    """(index, handle, text) of the named rule (equal after normalisation), or None."""
    rules = nft_rules(module, rule)
    if not rules:
        return None
    want = nft_norm(rule["text"])
    for i, (h, text) in enumerate(rules):
        if nft_norm(text) == want:
            return i, h, text
    handle = rule.get("handle")
    if handle is not None:
        for i, (h, text) in enumerate(rules):
            if str(h) == str(handle):
                module.warn("nft rule handle %s found but its text differs from the plan (%r vs %r): left alone"
                            % (handle, text, rule["text"]))
    return None


FIREWALLD_REFUSAL = ("managed by firewalld and not a rich rule of a zone file under %s this role can take out "
                     "(a runtime removal would come back at the next reload): remove it with firewall-cmd "
                     "--permanent (e.g. --remove-rich-rule) and --reload")


def firewalld_owned(rule):
    """A rule of firewalld's own nft table: removed only together with the zone file's rich rule."""
    return rule["backend"] == "nft" and (rule.get("family"), rule["table"]) == FIREWALLD_TABLE


def describe(rule):
    return "%s %s %s %s: %s" % (rule.get("backend"), rule.get("family") or "", rule.get("table"), rule.get("chain"),
                                rule.get("text"))


def apply(module, p):
    result = {"changed": False, "removed": [], "not_found": [], "persisted": [], "changed_settings": [],
              "failed_settings": []}
    todo, file_edits = [], {}
    for rule in p["rules"]:
        why = invalid(rule)
        if why:
            record_failure(result, describe(rule), why)
            continue
        try:
            if rule["backend"] == "iptables":
                pos = ipt_position(module, rule)
                where = None if pos is None else {"position": pos}
            else:
                found = nft_find(module, rule)
                where = None if found is None else {"index": found[0], "handle": found[1], "listed": found[2]}
            hits = persisted_hits(p, rule)
        except (OSError, ValueError) as exc:
            record_failure(result, describe(rule), str(exc))
            continue
        if firewalld_owned(rule) and not hits:
            if where is not None:
                record_failure(result, describe(rule), FIREWALLD_REFUSAL % p["firewalld_dir"])
            else:
                result["not_found"].append(describe(rule))
            continue
        if where is not None:
            todo.append((rule, where))
        for path, hit in hits.items():
            file_edits.setdefault(path, []).append((rule, hit))
        if where is None and not hits:
            result["not_found"].append(describe(rule))
    new_files = {}
    for path, edits in file_edits.items():
        before = read_text(path)
        lines = sorted({n for _r, hit in edits for n in hit[1]})
        statements = {n: st for _r, hit in edits for n, st in hit[2].items()}
        spans = sorted({s for _r, hit in edits for s in hit[3]})
        after = remove_spans(before, spans) if spans else comment_out(before, lines, statements)
        new_files[path] = (before, after)
    result["removed"] = [describe(r) for r, _ in todo]
    result["persisted"] = ["%s: %s" % (path, describe(r)) for path, edits in sorted(file_edits.items()) for r, _h in edits]
    result["changed"] = bool(todo or new_files)
    if module._diff and result["changed"]:
        result["diff"] = [{"before": "".join(describe(r) + "\n" for r, _ in todo), "after": "",
                           "before_header": "rules removed (runtime)", "after_header": "rules removed (runtime)"}]
        result["diff"] += [{"before_header": path, "after_header": path, "before": b, "after": a}
                           for path, (b, a) in sorted(new_files.items())]
    if not result["changed"]:
        return result
    if module.check_mode:
        for r, _w in todo:
            record_change(result, describe(r), "present", "removed")
        for path, edits in sorted(file_edits.items()):
            for r, _h in edits:
                record_change(result, "%s (in %s)" % (describe(r), path), "present", "removed")
        return result
    backup = load_backup(p["backup_file"]) or {"role": "firewall", "removed": []}
    backup.setdefault("files", {})
    for rule, where in todo:
        entry = dict(rule, **where)
        if not any(e.get("text") == rule["text"] and e.get("chain") == rule["chain"] and e.get("table") == rule["table"]
                   for e in backup["removed"]):
            backup["removed"].append(entry)
    for path, (before, _after) in new_files.items():
        backup["files"].setdefault(path, before)
    save_backup(p["backup_file"], backup)
    for rule, where in todo:
        if rule["backend"] == "iptables":
            chain, spec = ipt_spec(rule)
            rc, _o, err = module.run_command([ipt_bin(module, rule.get("family")), "-w", "-t", rule["table"], "-D", chain] + spec)
        else:
            rc, _o, err = module.run_command([module.get_bin_path("nft", required=True), "delete", "rule", rule["family"],
                                              rule["table"], rule["chain"], "handle", str(where["handle"])])
        if rc != 0:
            record_failure(result, describe(rule), "could not remove: %s" % (err or "").strip())
        else:
            record_change(result, describe(rule), "present", "removed")
    for path, (_before, after) in sorted(new_files.items()):
        try:
            atomic_write(path, after)
        except OSError as exc:
            for r, _h in file_edits[path]:
                record_failure(result, "%s (in %s)" % (describe(r), path), "could not rewrite the file: %s" % exc)
            continue
        for r, _h in file_edits[path]:
            record_change(result, "%s (in %s)" % (describe(r), path), "present", "removed")
    return result


def rollback(module, p):
    result = {"changed": False, "removed": [], "not_found": [], "restored": [], "rolled_back": False,
              "changed_settings": [], "failed_settings": []}
    backup = load_backup(p["backup_file"])
    if backup is None:
        result["msg"] = "no backup at %s: nothing to roll back on this host (nothing changed)" % p["backup_file"]
        return result
    todo = []
    for e in backup.get("removed") or []:
        present = ipt_position(module, e) if e["backend"] == "iptables" else nft_find(module, e)
        if present is None:
            todo.append(e)
    files = {path: text for path, text in sorted((backup.get("files") or {}).items()) if read_text(path) != text}
    result["restored"] = [describe(e) for e in todo] + ["file %s" % path for path in files]
    result["changed"] = True
    result["rolled_back"] = True
    if module._diff and (todo or files):
        result["diff"] = [{"before": "", "after": "".join(describe(e) + "\n" for e in todo),
                           "before_header": "rules restored", "after_header": "rules restored"}]
        result["diff"] += [{"before_header": path, "after_header": path, "before": read_text(path) or "", "after": text or ""}
                           for path, text in files.items()]
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
            record_failure(result, describe(e), "could not restore: %s" % (err or "").strip())
        else:
            record_change(result, describe(e), "removed", "present")
    for path, text in files.items():
        restore_text(path, text)
        record_change(result, "file %s" % path, "edited", "restored")
    if result["failed_settings"]:
        result["msg"] = "backup %s kept: some rules could not be restored" % p["backup_file"]
        return result
    result["backup_kept_as"] = retire_backup(p["backup_file"])
    return result


def main():
    run_backed_module(
        dict(
            rules=dict(type="list", elements="dict", default=[]),
            nftables_conf=dict(type="path", default="/etc/nftables.conf"),
            iptables_files=dict(type="dict", default={"ip": ["/etc/iptables/rules.v4", "/etc/sysconfig/iptables"],
                                                      "ip6": ["/etc/iptables/rules.v6", "/etc/sysconfig/ip6tables"]}),
            firewalld_dir=dict(type="path", default="/etc/firewalld"),
        ),
        apply, rollback, apply_state="absent",
    )


if __name__ == "__main__":
    main()
