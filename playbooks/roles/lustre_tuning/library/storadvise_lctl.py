#!/usr/bin/python
# -*- coding: utf-8 -*-
# storadvise lustre_tuning: lctl get_param -n NAME, then lctl set_param NAME=VALUE for those that differ;
# on the MGS, lctl set_param -P PATTERN=VALUE for the permanent parameters the params log lacks.

from __future__ import annotations

DOCUMENTATION = r"""
module: storadvise_lctl
short_description: Set Lustre client parameters (osc, mdc, llite) with lctl set_param
description:
  - Reads each named parameter with C(lctl get_param -n NAME), sets only those that differ with
    C(lctl set_param NAME=VALUE), then reads back and fails when a value did not take.
  - Records the replaced values in a JSON backup before the change; C(state=rollback) restores them.
  - C(lctl set_param) changes the running client only.
  - On the MGS, I(permanent) patterns are read from C(lctl llog_print params) and set with
    C(lctl set_param -P PATTERN=VALUE) where the log holds another value or none; every client applies
    them when it mounts. Rollback restores the old record or removes the new one (C(set_param -P -d)).
options:
  params:
    description: Full parameter name (as lctl get_param prints it) to value.
    type: dict
    default: {}
  permanent:
    description: On the MGS, parameter pattern (globs per component) to value, kept with lctl set_param -P.
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
    from ansible.module_utils.storadvise_lustre_params import exact_value, parse_llog_params
except ImportError:
    from ansible_collections.storadvise.tuning.plugins.module_utils.storadvise_state import (
        load_backup, record_change, record_failure, retire_backup, run_backed_module, save_backup)
    from ansible_collections.storadvise.tuning.plugins.module_utils.storadvise_lustre_params import (
        exact_value, parse_llog_params)

#: TYPE.DEVICE.PARAM of a client device (no glob: one parameter per name)
_NAME = re.compile(r"(osc|mdc|llite)\.[A-Za-z0-9_-]+\.[a-z0-9_]+")
#: a permanent parameter's pattern: a device glob of letters, digits, '-', '_' and '*' only
_PATTERN = re.compile(r"(osc|mdc|llite)\.[A-Za-z0-9_*-]+\.[a-z0-9_]+")
_VALUE = re.compile(r"[0-9]+")


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
    if not _NAME.fullmatch(str(name)):
        return "not an osc/mdc/llite parameter name (TYPE.DEVICE.PARAM, no glob)"
    if not _VALUE.fullmatch(str(value).strip()):
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
    permanent = {}
    for n, v in sorted((p["permanent"] or {}).items()):
        v = str(v).strip()
        if not _PATTERN.fullmatch(str(n)) or not _VALUE.fullmatch(v):
            record_failure(result, "-P %s=%s" % (n, v), "not an osc/mdc/llite parameter pattern with a whole-number value")
        else:
            permanent[n] = v
    perm = permanent_changes(module, p, result, permanent) if permanent else {}
    perm = perm or {}
    result["old"] = old
    result["set"] = ["%s=%s" % (n, v) for n, v in sorted(changes.items())]
    result["set_permanent"] = ["%s=%s" % (n, v) for n, (_, v) in sorted(perm.items())]
    result["changed"] = bool(changes or perm)
    if module._diff and changes:
        result["diff"] = {"before_header": "lctl", "after_header": "lctl",
                          "before": "".join("%s=%s\n" % (n, old[n]) for n in sorted(changes)),
                          "after": "".join("%s=%s\n" % (n, changes[n]) for n in sorted(changes))}
    if not changes and not perm:
        return result
    if module.check_mode:
        for n in sorted(changes):
            record_change(result, n, old[n], changes[n])
        for n, (was, v) in sorted(perm.items()):
            record_change(result, "-P " + n, was, v)
        return result
    backup = load_backup(p["backup_file"]) or {"role": "lustre_tuning", "params": {}}
    for n, v in old.items():
        backup["params"].setdefault(n, v)
    # a pattern the log did not hold is recorded as None: rollback removes it (set_param -P -d)
    for n, (was, _) in perm.items():
        backup.setdefault("permanent", {}).setdefault(n, was)
    save_backup(p["backup_file"], backup)
    # one set_param per parameter: one lctl refuses does not keep the others unchanged
    for n in sorted(changes):
        _set_and_check(module, p, result, n, old[n], changes[n])
    if perm:
        apply_permanent(module, p, result, perm)
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
    perm = {}
    if backup.get("permanent"):
        wanted = backup["permanent"]
        try:
            records = read_log(module, p)
        except ValueError as exc:
            for n in sorted(wanted):
                record_failure(result, "-P " + n, str(exc))
            records = None
        for n, was in sorted(wanted.items()) if records is not None else ():
            now = exact_value(records, n)
            if now != was:
                perm[n] = (now, was)
    result["set"] = ["%s=%s" % (n, v) for n, v in sorted(changes.items())]
    result["changed"] = result["rolled_back"] = True
    if module.check_mode:
        return result
    for n in sorted(changes):
        _set_and_check(module, p, result, n, current[n], changes[n])
    if perm:
        apply_permanent(module, p, result, perm)
    if result["failed_settings"]:
        result["msg"] = "backup %s kept: some values could not be restored" % p["backup_file"]
        return result
    result["backup_kept_as"] = retire_backup(p["backup_file"])
    return result


def read_log(module, p):
    """The params log's records (ValueError: lctl failed, or printed what is not a record)."""
    rc, out, err = module.run_command([lctl_path(module, p), "llog_print", "params"])
    if rc != 0:
        why = (err or out or "").strip().splitlines()
        raise ValueError("lctl llog_print params: %s (is this host the MGS?)" % (why[-1] if why else "exit %s" % rc))
    return parse_llog_params(out)


def set_permanent(module, p, pattern, value):
    """lctl set_param -P PATTERN=VALUE (value None: -P -d PATTERN); ValueError when lctl fails."""
    args = ["set_param", "-P", "-d", pattern] if value is None else ["set_param", "-P", "%s=%s" % (pattern, value)]
    rc, out, err = module.run_command([lctl_path(module, p)] + args)
    if rc != 0:
        why = (err or out or "").strip().splitlines()
        raise ValueError("lctl %s failed: %s" % (" ".join(args), why[-1] if why else "exit %s" % rc))


def permanent_changes(module, p, result, wanted):
    """{pattern: (old value or None, new value or None)} of the patterns whose log value differs."""
    try:
        records = read_log(module, p)
    except ValueError as exc:
        for n in sorted(wanted):
            record_failure(result, "-P " + n, str(exc))
        return None
    out = {}
    for n, v in sorted(wanted.items()):
        old = exact_value(records, n)
        if old != v:
            out[n] = (old, v)
    return out


def apply_permanent(module, p, result, changes):
    """Set each pattern, then read the log back: a value that did not take is a failure."""
    for n, (old, v) in sorted(changes.items()):
        try:
            set_permanent(module, p, n, v)
        except ValueError as exc:
            record_failure(result, "-P " + n, str(exc))
            changes.pop(n)
    try:
        records = read_log(module, p)
    except ValueError as exc:
        for n in changes:
            record_failure(result, "-P " + n, str(exc))
        return
    for n, (old, v) in sorted(changes.items()):
        now = exact_value(records, n)
        if now != v:
            record_failure(result, "-P " + n, "lctl set_param -P reported success but the params log holds %s" % now)
        else:
            record_change(result, "-P " + n, old, v)


def check_lctl(module, p):
    if p["lctl"] and not os.access(p["lctl"], os.X_OK):
        module.fail_json(msg="%s: lctl not found or not executable" % p["lctl"])


def main():
    run_backed_module(
        dict(
            params=dict(type="dict", default={}),
            permanent=dict(type="dict", default={}),
            lctl=dict(type="str", default=""),
        ),
        apply, rollback, check=check_lctl,
    )


if __name__ == "__main__":
    main()
