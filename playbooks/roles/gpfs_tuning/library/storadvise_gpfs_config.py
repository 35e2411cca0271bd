#!/usr/bin/python
# -*- coding: utf-8 -*-
# storadvise gpfs_tuning: mmchconfig attr=value[,...] [-i] -N nodes, idempotent through mmlsconfig.

from __future__ import annotations

DOCUMENTATION = r"""
module: storadvise_gpfs_config
short_description: Change GPFS (Storage Scale) configuration attributes for a set of nodes
description:
  - Reads C(mmlsconfig ATTR) first; only nodes whose persisted value differs are changed, with one
    C(mmchconfig attr=value[,...] -N nodes) per node set, C(-i) when every attribute of the command
    can change in the running daemon, else without (the value waits for a restart, reported in
    C(restart_required)). When increasing, pagepool is given before maxblocksize; when decreasing, after.
  - Node-scoped values are matched by node name; values scoped to a node class are not expanded.
  - Records the replaced values per node in a JSON backup before the change; C(state=rollback) restores them.
options:
  config:
    description: Attribute to value.
    type: dict
    default: {}
  nodes:
    description: GPFS node names to change.
    type: list
    elements: str
    default: []
  bin_dir:
    description: Directory of the GPFS commands.
    type: path
    default: /usr/lpp/mmfs/bin
  immediate_attrs:
    description: Attributes mmchconfig can change in the running daemon (C(-i)).
    type: list
    elements: str
    default: []
  restart:
    description: Restart GPFS on the nodes (mmshutdown, mmstartup) when a value needs it.
    type: bool
    default: false
  pending_attrs:
    description: Attributes whose persisted value is not active yet (a restart is due even when nothing changes).
    type: list
    elements: str
    default: []
  backup_file:
    description: JSON file recording the replaced values.
    type: path
    required: true
  state:
    description: C(present) applies, C(rollback) restores the backup.
    type: str
    choices: [present, rollback]
    default: present
author: storadvise
"""

EXAMPLES = r"""
- name: Pagepool 1G on the clients, now
  storadvise_gpfs_config:
    config: {pagepool: 1G}
    nodes: [wn01, wn02]
    immediate_attrs: [pagepool]
    backup_file: /var/lib/storadvise/backup/gpfs_tuning.json
"""

RETURN = r"""
commands:
  description: The mmchconfig commands run (or, in check mode, that would run).
  type: list
  returned: always
restart_required:
  description: Attributes whose new value takes effect only after mmshutdown/mmstartup on the nodes.
  type: list
  returned: always
"""

import os
import re

try:  # a project's module_utils (a plan directory's ansible.cfg), else the installed collection's
    from ansible.module_utils.storadvise_canonical import same_value
    from ansible.module_utils.storadvise_state import (load_backup, record_change, record_failure, retire_backup,
                                                       run_backed_module, save_backup)
except ImportError:
    from ansible_collections.storadvise.tuning.plugins.module_utils.storadvise_canonical import same_value
    from ansible_collections.storadvise.tuning.plugins.module_utils.storadvise_state import (
        load_backup, record_change, record_failure, retire_backup, run_backed_module, save_backup)

_SIZE = re.compile(r"(\d+(?:\.\d+)?)([KMGT]?)", re.I)
_ATTR = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}\Z")  # \Z: "$" would let a trailing newline through
# a value is words of these characters separated by single spaces: no , ; = quotes brackets or line breaks
_VALUE = re.compile(r"^[A-Za-z0-9._:+/@%-]+(?: [A-Za-z0-9._:+/@%-]+)*\Z")
_NODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,254}\Z")
_MULT = {"": 1, "K": 2 ** 10, "M": 2 ** 20, "G": 2 ** 30, "T": 2 ** 40}


def size(v):
    m = _SIZE.fullmatch(str(v).strip())
    return float(m.group(1)) * _MULT[m.group(2).upper()] if m else None


def same(a, b):
    """By meaning (1G == 1024M, TRUE == yes): the comparison the plan was made with."""
    return same_value(a, b)


def tool(p, name):
    path = os.path.join(p["bin_dir"], name)
    if not os.access(path, os.X_OK):
        raise ValueError("%s not found or not executable (set gpfs_tuning_bin_dir)" % path)
    return path


def effective(module, p, attr, nodes):
    """Persisted value of ``attr`` for each node: a scope naming the node, else the cluster-wide value."""
    rc, out, err = module.run_command([tool(p, "mmlsconfig"), attr])
    text = (out or "") + (err or "")
    if rc != 0:
        if "No value for attribute" in text:
            return {n: None for n in nodes}
        raise ValueError("mmlsconfig %s failed: %s" % (attr, text.strip().splitlines()[-1] if text.strip() else rc))
    cluster, scoped = None, {}
    for line in out.splitlines():
        parts = line.split(None, 1)
        if len(parts) < 2 or parts[0] != attr:
            continue
        m = re.match(r"^(.*?)\s*\[([^\]]*)\]\s*$", parts[1])
        if m:
            for n in m.group(2).split(","):
                scoped[n.strip()] = m.group(1).strip()
        else:
            cluster = parts[1].strip()
    return {n: scoped.get(n, cluster) for n in nodes}


def refusal(attr, value):
    """Why ``attr=value`` cannot be given to mmchconfig, or None."""
    if not _ATTR.match(str(attr)):
        return "not a GPFS attribute name (letters, digits, _)"
    if not _VALUE.match(str(value)) or len(str(value)) > 256:
        return "value %r refused: only letters, digits and . _ : + / @ %% - (words separated by single spaces)" % str(value)
    return None


def order_attrs(attrs, config, current):
    """pagepool before maxblocksize when increasing, maxblocksize first when decreasing."""
    attrs = sorted(attrs)
    if "pagepool" in attrs and "maxblocksize" in attrs:
        increasing = (size(config["maxblocksize"]) or 0) >= (size(current.get("maxblocksize") or 0) or 0)
        attrs.remove("pagepool")
        attrs.remove("maxblocksize")
        attrs = (["pagepool", "maxblocksize"] if increasing else ["maxblocksize", "pagepool"]) + attrs
    return attrs


def commands_for(p, wanted, current=None):
    """wanted: node -> {attr: value}; returns [(args, restart_attrs)] grouping nodes with equal changes.
    Immediate attributes go first (-i), except that a decreasing maxblocksize precedes pagepool."""
    by_change = {}
    for node, changes in sorted(wanted.items()):
        if changes:
            by_change.setdefault(tuple(sorted(changes.items())), []).append(node)
    cmds = []
    immediate = set(p["immediate_attrs"])
    for change, nodes in sorted(by_change.items()):
        change = dict(change)
        now = [a for a in change if a in immediate]
        later = [a for a in change if a not in immediate]
        steps = [(now, ["-i"]), (later, [])]
        if "maxblocksize" in later and "pagepool" in now and current:
            was = (current.get("maxblocksize") or {}).get(nodes[0])
            if was is not None and (size(change["maxblocksize"]) or 0) < (size(was) or 0):
                steps.reverse()
        for attrs, flag in steps:
            if not attrs:
                continue
            cur = {a: (current or {}).get(a, {}).get(nodes[0]) for a in attrs}
            spec = ",".join("%s=%s" % (a, change[a]) for a in order_attrs(attrs, change, cur))
            cmds.append(([spec] + flag + ["-N", ",".join(nodes)], [] if flag else attrs))
    return cmds


def run_mmchconfig(module, p, args):
    """Run one mmchconfig; returns why it failed, or None."""
    cmd = [tool(p, "mmchconfig")] + args
    rc, out, err = module.run_command(cmd)
    if rc != 0:
        last = ((err or "") + (out or "")).strip().splitlines()
        return "mmchconfig %s failed: %s" % (" ".join(args), last[-1] if last else rc)
    return None


def command_settings(args):
    """(attrs, nodes) of an mmchconfig argument list built by commands_for."""
    attrs = [kv.split("=", 1)[0] for kv in args[0].split(",")]
    return attrs, args[args.index("-N") + 1]


def usable(module, p, result):
    """(config, nodes) without the refused attributes and node names (each refusal recorded)."""
    config = {}
    for a, v in sorted((p["config"] or {}).items()):
        why = refusal(a, v)
        if why:
            record_failure(result, "%s=%s" % (a, v), why)
        else:
            config[a] = str(v)
    nodes = []
    for n in p["nodes"]:
        if _NODE.match(str(n)):
            nodes.append(n)
        else:
            record_failure(result, "node %r" % n, "not a GPFS node name; left out")
    return config, nodes


def apply(module, p):
    result = {"changed": False, "commands": [], "restart_required": sorted(set(p["pending_attrs"])), "old": {},
              "changed_settings": [], "failed_settings": []}
    config, nodes = usable(module, p, result)
    current = {}
    for a in list(config):
        try:
            current[a] = effective(module, p, a, nodes)
        except ValueError as exc:
            record_failure(result, a, str(exc))
            del config[a]
    wanted = {n: {a: v for a, v in config.items() if not same(current[a][n], v)} for n in nodes}
    cmds = commands_for(p, wanted, current)
    result["old"] = {a: {n: current[a][n] for n in nodes if a in wanted[n]} for a in config}
    result["commands"] = ["mmchconfig " + " ".join(args) for args, _ in cmds]
    for _args, later in cmds:
        result["restart_required"] = sorted(set(result["restart_required"]) | set(later))
    result["changed"] = bool(cmds)
    if module._diff and cmds:
        result["diff"] = {"before_header": "mmlsconfig", "after_header": "mmlsconfig",
                          "before": "".join("%s %s [%s]\n" % (a, current[a][n], n) for n in nodes for a in sorted(wanted[n])),
                          "after": "".join("%s %s [%s]\n" % (a, config[a], n) for n in nodes for a in sorted(wanted[n]))}
    if cmds and not module.check_mode:
        backup = load_backup(p["backup_file"]) or {"role": "gpfs_tuning", "attrs": {}}
        for a, per_node in result["old"].items():
            for n, old in per_node.items():
                backup["attrs"].setdefault(a, {}).setdefault(n, old)
        save_backup(p["backup_file"], backup)
        failed = set()
        for args, _later in cmds:
            why = run_mmchconfig(module, p, args)
            if not why:
                continue
            # one refused attribute fails the whole command: try each attribute alone
            specs = args[0].split(",")
            singles = [[spec] + args[1:] for spec in specs] if len(specs) > 1 else [args]
            for one in singles:
                why = run_mmchconfig(module, p, one) if len(specs) > 1 else why
                if why:
                    attrs, on = command_settings(one)
                    record_failure(result, "%s on %s" % (attrs[0], on), why)
                    failed.update((attrs[0], n) for n in on.split(","))
        for a in config:
            try:
                after = effective(module, p, a, nodes)
            except ValueError as exc:
                after = {n: "unreadable (%s)" % exc for n in nodes}
            for n in nodes:
                if a not in wanted[n] or (a, n) in failed:
                    continue
                if same(after[n], config[a]):
                    record_change(result, "%s on %s" % (a, n), current[a][n], config[a])
                else:
                    record_failure(result, "%s on %s" % (a, n), "mmchconfig did not take: the value is %s" % after[n])
    elif cmds:
        for n in nodes:
            for a in sorted(wanted[n]):
                record_change(result, "%s on %s" % (a, n), current[a][n], config[a])
    if p["restart"] and result["restart_required"] and nodes and not module.check_mode:
        for t in ("mmshutdown", "mmstartup"):
            rc, out, err = module.run_command([tool(p, t), "-N", ",".join(nodes)])
            if rc != 0:
                record_failure(result, "GPFS restart on %s" % ",".join(nodes),
                               "%s -N %s failed: %s" % (t, ",".join(nodes), (err or out).strip()))
                return result
        result["restarted"] = nodes
        result["changed"] = True
        result["restart_required"] = []
    return result


def rollback(module, p):
    result = {"changed": False, "commands": [], "restart_required": [], "rolled_back": False,
              "changed_settings": [], "failed_settings": []}
    backup = load_backup(p["backup_file"])
    if backup is None:
        result["msg"] = "no backup at %s: nothing to roll back on this host (nothing changed)" % p["backup_file"]
        return result
    wanted = {}
    for a, per_node in (backup.get("attrs") or {}).items():
        cur = effective(module, p, a, list(per_node))
        for n, old in per_node.items():
            if not same(cur[n], old):
                wanted.setdefault(n, {})[a] = "DEFAULT" if old is None else old
    cmds = commands_for(p, wanted)
    result["commands"] = ["mmchconfig " + " ".join(args) for args, _ in cmds]
    result["restart_required"] = sorted({a for _, later in cmds for a in later})
    result["changed"] = result["rolled_back"] = True
    if module.check_mode:
        return result
    for args, _later in cmds:
        why = run_mmchconfig(module, p, args)
        attrs, on = command_settings(args)
        for a in attrs:
            if why:
                record_failure(result, "%s on %s" % (a, on), why)
            else:
                record_change(result, "%s on %s" % (a, on), "(applied value)", "(recorded value)")
    if result["failed_settings"]:
        result["msg"] = "backup %s kept: some values could not be restored" % p["backup_file"]
        return result
    result["backup_kept_as"] = retire_backup(p["backup_file"])
    return result


def main():
    run_backed_module(
        dict(
            config=dict(type="dict", default={}),
            nodes=dict(type="list", elements="str", default=[]),
            bin_dir=dict(type="path", default="/usr/lpp/mmfs/bin"),
            immediate_attrs=dict(type="list", elements="str", default=[]),
            restart=dict(type="bool", default=False),
            pending_attrs=dict(type="list", elements="str", default=[]),
        ),
        apply, rollback,
    )


if __name__ == "__main__":
    main()
