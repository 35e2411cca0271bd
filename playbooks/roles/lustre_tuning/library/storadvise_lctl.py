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
import re

try:  # a project's module_utils (a plan directory's ansible.cfg), else the installed collection's
    from ansible.module_utils.storadvise_state import (load_backup, record_change, record_failure, retire_backup,
                                                       run_backed_module, save_backup)
except ImportError:
    from ansible_collections.storadvise.tuning.plugins.module_utils.storadvise_state import (
        load_backup, record_change, record_failure, retire_backup, run_backed_module, save_backup)

#: TYPE.DEVICE.PARAM of a client device (no glob: one parameter per name)
_NAME = re.compile(r"^(osc|mdc|llite)\.[A-Za-z0-9_-]+\.[a-z0-9_]+$")
_VALUE = re.compile(r"^[0-9]+$")


def lctl_path(module, p):
    if p["lctl"]:
        return p["lctl"]
    found = module.get_bin_path("lctl", opt_dirs=["/usr/sbin", "/sbin", "/usr/local/sbin"])
    if not found:
        module.fail_json(msg="lctl not found in PATH, /usr/sbin, /sbin or /usr/local/sbin (set lustre_tuning_lctl)")
    return found


def get(module, p, name):
    """The value, or raise ValueError naming why it cannot be read."""
    rc, out, err = module.run_command([lctl_path(module, p), "get_param", "-n", name])
    lines = [ln.strip() for ln in (out or "").splitlines() if ln.strip()]
    if rc != 0 or len(lines) != 1:
        why = (err or out or "").strip().splitlines()
        raise ValueError("lctl get_param -n %s: %s" % (
            name, why[-1] if why else ("%d values (a parameter name, not a pattern)" % len(lines))))
    return lines[0]


def set_one(module, p, name, value):
    rc, out, err = module.run_command([lctl_path(module, p), "set_param", "%s=%s" % (name, value)])
    if rc != 0:
        why = (err or out or "").strip().splitlines()
        raise ValueError("lctl set_param %s=%s failed: %s" % (name, value, why[-1] if why else "exit %s" % rc))


def refusal(name, value):
    if not _NAME.match(str(name)):
        return "not an osc/mdc/llite parameter name (TYPE.DEVICE.PARAM, no glob)"
    if not _VALUE.match(str(value).strip()):
        return "value %r is not a whole number" % (value,)
    return None


def _set_and_check(module, p, result, name, old, value):
    try:
        set_one(module, p, name, value)
        now = get(module, p, name)
    except ValueError as exc:
        record_failure(result, name, str(exc))
        return
    if now != value:
        record_failure(result, name, "lctl set_param reported success but lctl get_param shows %s" % now)
    else:
        record_change(result, name, old, value)


def apply(module, p):
    result = {"changed": False, "set": [], "old": {}, "changed_settings": [], "failed_settings": []}
    old, changes = {}, {}
    for n, v in sorted((p["params"] or {}).items()):
        v = str(v).strip()
        why = refusal(n, v)
        if why:
            record_failure(result, "%s=%s" % (n, v), why)
            continue
        try:
            cur = get(module, p, n)
        except ValueError as exc:
            record_failure(result, n, str(exc))
            continue
        if cur != v:
            old[n], changes[n] = cur, v
    result["old"] = old
    result["set"] = ["%s=%s" % (n, v) for n, v in sorted(changes.items())]
    result["changed"] = bool(changes)
    if module._diff and changes:
        result["diff"] = {"before_header": "lctl", "after_header": "lctl",
                          "before": "".join("%s=%s\n" % (n, old[n]) for n in sorted(changes)),
                          "after": "".join("%s=%s\n" % (n, changes[n]) for n in sorted(changes))}
    if not changes:
        return result
    if module.check_mode:
        for n in sorted(changes):
            record_change(result, n, old[n], changes[n])
        return result
    backup = load_backup(p["backup_file"]) or {"role": "lustre_tuning", "params": {}}
    for n, v in old.items():
        backup["params"].setdefault(n, v)
    save_backup(p["backup_file"], backup)
    # one set_param per parameter: one lctl refuses does not keep the others unchanged
    for n in sorted(changes):
        _set_and_check(module, p, result, n, old[n], changes[n])
    return result


def rollback(module, p):
    result = {"changed": False, "set": [], "rolled_back": False, "changed_settings": [], "failed_settings": []}
    backup = load_backup(p["backup_file"])
    if backup is None:
        result["msg"] = "no backup at %s: nothing to roll back on this host (nothing changed)" % p["backup_file"]
        return result
    changes, current = {}, {}
    for n, v in sorted((backup.get("params") or {}).items()):
        try:
            current[n] = get(module, p, n)
        except ValueError as exc:
            record_failure(result, n, str(exc))
            continue
        if current[n] != str(v):
            changes[n] = str(v)
    result["set"] = ["%s=%s" % (n, v) for n, v in sorted(changes.items())]
    result["changed"] = result["rolled_back"] = True
    if module.check_mode:
        return result
    for n in sorted(changes):
        _set_and_check(module, p, result, n, current[n], changes[n])
    if result["failed_settings"]:
        result["msg"] = "backup %s kept: some values could not be restored" % p["backup_file"]
        return result
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
