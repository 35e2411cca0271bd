#!/usr/bin/python
# -*- coding: utf-8 -*-
# storadvise lustre_tuning: lctl get_param -n NAME, then lctl set_param NAME=VALUE for those that differ.

from __future__ import annotations

DOCUMENTATION = r"""
module: storadvise_lctl
short_description: Set Lustre client parameters (osc, mdc, llite) with lctl set_param
description:
  - Reads each named parameter with C(lctl get_param -n NAME), sets only those that differ with
    C(lctl set_param NAME=VALUE), then reads back and fails when a value did not take.
  - Records the replaced values in a JSON backup before the change; C(state=rollback) restores them.
  - C(lctl set_param) changes the running client only.
options:
  params:
    description: Full parameter name (as lctl get_param prints it) to value.
    type: dict
    default: {}
  lctl:
    description: Path of lctl; empty = search PATH, then /usr/sbin, /sbin, /usr/local/sbin.
    type: str
    default: ""
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
- name: More RPCs in flight to one OST
  storadvise_lctl:
    params: {"osc.lustre-OST0000-osc-ffff88203b1e4000.max_rpcs_in_flight": "16"}
    backup_file: /var/lib/storadvise/backup/lustre_tuning.json
"""

RETURN = r"""
set:
  description: The NAME=VALUE arguments given (or, in check mode, that would be given) to lctl set_param.
  type: list
  returned: always
"""

import os

from ansible.module_utils.storadvise_state import load_backup, retire_backup, run_backed_module, save_backup


def lctl_path(module, p):
    if p["lctl"]:
        return p["lctl"]
    found = module.get_bin_path("lctl", opt_dirs=["/usr/sbin", "/sbin", "/usr/local/sbin"])
    if not found:
        module.fail_json(msg="lctl not found in PATH, /usr/sbin, /sbin or /usr/local/sbin (set lustre_tuning_lctl)")
    return found


def get(module, p, name):
    rc, out, err = module.run_command([lctl_path(module, p), "get_param", "-n", name])
    lines = [ln.strip() for ln in (out or "").splitlines() if ln.strip()]
    if rc != 0 or len(lines) != 1:
        why = (err or out or "").strip().splitlines()
        module.fail_json(msg="lctl get_param -n %s: %s" % (
            name, why[-1] if why else ("%d values (a parameter name, not a pattern)" % len(lines))))
    return lines[0]


def set_all(module, p, values):
    args = ["%s=%s" % (n, v) for n, v in sorted(values.items())]
    rc, out, err = module.run_command([lctl_path(module, p), "set_param"] + args)
    if rc != 0:
        why = (err or out or "").strip().splitlines()
        module.fail_json(msg="lctl set_param %s failed: %s" % (" ".join(args), why[-1] if why else "exit %s" % rc))
    return args


def apply(module, p):
    result = {"changed": False, "set": [], "old": {}}
    want = {n: str(v).strip() for n, v in (p["params"] or {}).items()}
    old = {}
    for n, v in sorted(want.items()):
        cur = get(module, p, n)
        if cur != v:
            old[n] = cur
    changes = {n: want[n] for n in old}
    result["old"] = old
    result["set"] = ["%s=%s" % (n, v) for n, v in sorted(changes.items())]
    result["changed"] = bool(changes)
    if module._diff and changes:
        result["diff"] = {"before_header": "lctl", "after_header": "lctl",
                          "before": "".join("%s=%s\n" % (n, old[n]) for n in sorted(changes)),
                          "after": "".join("%s=%s\n" % (n, changes[n]) for n in sorted(changes))}
    if not changes or module.check_mode:
        return result
    backup = load_backup(p["backup_file"]) or {"role": "lustre_tuning", "params": {}}
    for n, v in old.items():
        backup["params"].setdefault(n, v)
    save_backup(p["backup_file"], backup)
    set_all(module, p, changes)
    wrong = ["%s is %s" % (n, a) for n, v in changes.items() if (a := get(module, p, n)) != v]
    if wrong:
        module.fail_json(msg="lctl set_param reported success but lctl get_param shows: " + "; ".join(wrong), **result)
    return result


def rollback(module, p):
    result = {"changed": False, "set": [], "rolled_back": False}
    backup = load_backup(p["backup_file"])
    if backup is None:
        result["msg"] = "no backup at %s: nothing to roll back on this host (nothing changed)" % p["backup_file"]
        return result
    changes = {n: v for n, v in (backup.get("params") or {}).items() if get(module, p, n) != str(v)}
    result["set"] = ["%s=%s" % (n, v) for n, v in sorted(changes.items())]
    result["changed"] = result["rolled_back"] = True
    if module.check_mode:
        return result
    if changes:
        set_all(module, p, changes)
    result["backup_kept_as"] = retire_backup(p["backup_file"])
    return result


def check_lctl(module, p):
    if p["lctl"] and not os.access(p["lctl"], os.X_OK):
        module.fail_json(msg="%s: lctl not found or not executable" % p["lctl"])


def main():
    run_backed_module(
        dict(
            params=dict(type="dict", default={}),
            lctl=dict(type="str", default=""),
        ),
        apply, rollback, check=check_lctl,
    )


if __name__ == "__main__":
    main()
