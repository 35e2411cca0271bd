#!/usr/bin/python
# -*- coding: utf-8 -*-
# storadvise san_cache: SMcli set logicalDrive ["NAME"] k=v ...; read with show allLogicalDrives first.

from __future__ import annotations

DOCUMENTATION = r"""
module: storadvise_smcli
short_description: Set IBM DS4000/DS5000 (SANtricity) logical drive cache settings with SMcli
description:
  - Runs C(SMcli CONTROLLERS -c "show allLogicalDrives;") and changes only the settings that differ,
    in one script of C(set logicalDrive ["NAME"] key=value ...;) commands (C(set volume) when the
    array reports Volumes), then reads back and fails when a value did not take.
  - Records the replaced values in a JSON backup before the change; C(state=rollback) restores them.
options:
  drives:
    description: Logical drive name to {keyword, value} (readCacheEnabled, cacheReadPrefetch, writeCacheEnabled,
      cacheWithoutBatteryEnabled, mirrorCacheEnabled, modificationPriority).
    type: dict
    default: {}
  controllers:
    description: Controller names or addresses given to SMcli.
    type: list
    elements: str
    required: true
  smcli:
    description: Path of SMcli; empty = search PATH, then /opt/SMgr/client.
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
- name: Read cache and prefetch on
  storadvise_smcli:
    drives: {gpfs_data01: {readCacheEnabled: "TRUE", cacheReadPrefetch: "TRUE"}}
    controllers: [ds4700-a, ds4700-b]
    backup_file: /var/lib/storadvise/backup/san_cache.json
"""

RETURN = r"""
script:
  description: The SMcli script run (or, in check mode, that would run).
  type: str
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

# SANtricity names: letters, digits, _ - # . and single inner spaces (nothing that ends the quoted
# name or the script: no quotes, ; ] or line breaks)
_DRIVE = re.compile(r"^[A-Za-z0-9_#.-]+(?: [A-Za-z0-9_#.-]+)*\Z")  # \Z: "$" would let a trailing newline through
_CONTROLLER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,252}\Z")
BOOLEAN_KEYWORDS = ("readCacheEnabled", "cacheReadPrefetch", "writeCacheEnabled", "cacheWithoutBatteryEnabled",
                    "mirrorCacheEnabled")
PRIORITIES = ("highest", "high", "medium", "low", "lowest")


def refusal(drive, keyword, value):
    """Why ``set logicalDrive ["drive"] keyword=value`` must not be sent, or None."""
    if not _DRIVE.match(str(drive)) or len(str(drive)) > 30:
        return "logical drive name %r refused (letters, digits, _ - # . and single spaces, at most 30)" % str(drive)
    if keyword in BOOLEAN_KEYWORDS:
        if str(value).upper() not in ("TRUE", "FALSE"):
            return "%s must be TRUE or FALSE, not %r" % (keyword, str(value))
    elif keyword == "modificationPriority":
        if str(value).lower() not in PRIORITIES:
            return "modificationPriority must be one of %s, not %r" % (", ".join(PRIORITIES), str(value))
    else:
        return "keyword %r refused (one of %s, modificationPriority)" % (str(keyword), ", ".join(BOOLEAN_KEYWORDS))
    return None

LABELS = {
    "read cache": "readCacheEnabled",
    "write cache": "writeCacheEnabled",
    "write cache with mirroring": "mirrorCacheEnabled",
    "write cache without batteries": "cacheWithoutBatteryEnabled",
    "dynamic cache read prefetch": "cacheReadPrefetch",
    "cache read prefetch": "cacheReadPrefetch",
    "modification priority": "modificationPriority",
}


def smcli_path(module, p):
    if p["smcli"]:
        return p["smcli"]
    found = module.get_bin_path("SMcli", opt_dirs=["/opt/SMgr/client", "/opt/IBM_DS/client"])
    if not found:
        module.fail_json(msg="SMcli not found in PATH or /opt/SMgr/client (set san_cache_smcli)")
    return found


def value_of(keyword, text):
    t = text.strip()
    if keyword == "modificationPriority":
        return t.lower()
    if t.lower() in ("enabled", "true", "on", "yes"):
        return "TRUE"
    if t.lower() in ("disabled", "false", "off", "no"):
        return "FALSE"
    return t


def norm(keyword, v):
    return str(v).lower() if keyword == "modificationPriority" else str(v).upper()


def run(module, p, script):
    """SMcli's output; raises ValueError (why) when the script failed."""
    cmd = [smcli_path(module, p)] + list(p["controllers"]) + ["-c", script]
    rc, out, err = module.run_command(cmd)
    if rc != 0 or "SMcli completed successfully" not in out:
        lines = [ln.strip() for ln in ((out or "") + (err or "")).splitlines() if ln.strip()]
        why = next((ln for ln in lines if "rror" in ln or "cannot" in ln), lines[-1] if lines else "exit %s" % rc)
        raise ValueError("SMcli %s -c %r failed: %s" % (" ".join(p["controllers"]), script, why))
    return out


def show(module, p):
    """(noun for set commands, {drive: {keyword: value}})."""
    out = run(module, p, "show allLogicalDrives;")
    drives, cur, noun = {}, None, "logicalDrive"
    for line in out.splitlines():
        if ":" not in line:
            continue
        label, value = line.split(":", 1)
        label = label.strip().lower()
        if label in ("logical drive name", "volume name"):
            cur = value.strip()
            drives[cur] = {}
            if label == "volume name":
                noun = "volume"
        elif cur is not None and label in LABELS:
            kw = LABELS[label]
            drives[cur].setdefault(kw, value_of(kw, value))
    return noun, drives


def script_for(noun, changes):
    return " ".join('set %s ["%s"] %s;' % (noun, d, " ".join("%s=%s" % (k, v) for k, v in sorted(kv.items())))
                    for d, kv in sorted(changes.items()))


def apply(module, p):
    result = {"changed": False, "script": "", "old": {}, "changed_settings": [], "failed_settings": []}
    noun, drives = show(module, p)
    changes, old = {}, {}
    for d, want in sorted((p["drives"] or {}).items()):
        refused = [(k, v, refusal(d, k, v)) for k, v in sorted((want or {}).items())]
        for k, v, why in refused:
            if why:
                record_failure(result, "%s %s=%s" % (d, k, v), why)
        if _DRIVE.match(str(d)) and d not in drives:
            record_failure(result, str(d), "logical drive not found on %s (the array has: %s)"
                           % (" ".join(p["controllers"]), ", ".join(sorted(drives)) or "none"))
            continue
        for k, v, why in refused:
            if why:
                continue
            cur = drives[d].get(k)
            if cur is None or norm(k, cur) != norm(k, v):
                changes.setdefault(d, {})[k] = str(v).lower() if k == "modificationPriority" else str(v).upper()
                old.setdefault(d, {})[k] = cur
    result["script"] = script_for(noun, changes)
    result["old"] = old
    result["changed"] = bool(changes)
    if module._diff and changes:
        result["diff"] = {"before_header": "logical drives", "after_header": "logical drives",
                          "before": "".join("%s %s=%s\n" % (d, k, old[d][k]) for d in sorted(changes) for k in sorted(changes[d])),
                          "after": "".join("%s %s=%s\n" % (d, k, changes[d][k]) for d in sorted(changes) for k in sorted(changes[d]))}
    if not changes:
        return result
    if module.check_mode:
        for d, kv in sorted(changes.items()):
            for k, v in sorted(kv.items()):
                record_change(result, "%s %s" % (d, k), old[d][k], v)
        return result
    backup = load_backup(p["backup_file"]) or {"role": "san_cache", "noun": noun, "controllers": p["controllers"], "drives": {}}
    for d, kv in old.items():
        for k, v in kv.items():
            backup["drives"].setdefault(d, {}).setdefault(k, v)
    save_backup(p["backup_file"], backup)
    # one script per logical drive: a drive the array refuses does not keep the others unchanged
    refused = {}
    for d in sorted(changes):
        try:
            run(module, p, script_for(noun, {d: changes[d]}))
        except ValueError as exc:
            refused[d] = str(exc)
    _noun, after = show(module, p)
    for d, kv in sorted(changes.items()):
        for k, v in sorted(kv.items()):
            if d in refused:
                record_failure(result, "%s %s" % (d, k), refused[d])
            elif norm(k, after.get(d, {}).get(k)) != norm(k, v):
                record_failure(result, "%s %s" % (d, k), "SMcli reported success but the array shows %s" % after.get(d, {}).get(k))
            else:
                record_change(result, "%s %s" % (d, k), old[d][k], v)
    return result


def rollback(module, p):
    result = {"changed": False, "script": "", "rolled_back": False, "changed_settings": [], "failed_settings": []}
    backup = load_backup(p["backup_file"])
    if backup is None:
        result["msg"] = "no backup at %s: nothing to roll back on this host (nothing changed)" % p["backup_file"]
        return result
    noun, drives = show(module, p)
    changes = {}
    for d, kv in (backup.get("drives") or {}).items():
        for k, v in kv.items():
            if v is None or norm(k, drives.get(d, {}).get(k)) == norm(k, v):
                continue
            why = refusal(d, k, v)
            if why:
                record_failure(result, "%s %s=%s" % (d, k, v), why)
            else:
                changes.setdefault(d, {})[k] = v
    result["script"] = script_for(noun, changes)
    result["changed"] = result["rolled_back"] = True
    if module.check_mode:
        return result
    for d in sorted(changes):
        try:
            run(module, p, script_for(noun, {d: changes[d]}))
        except ValueError as exc:
            for k in sorted(changes[d]):
                record_failure(result, "%s %s" % (d, k), str(exc))
            continue
        for k, v in sorted(changes[d].items()):
            record_change(result, "%s %s" % (d, k), drives.get(d, {}).get(k), v)
    if result["failed_settings"]:
        result["msg"] = "backup %s kept: some values could not be restored" % p["backup_file"]
        return result
    result["backup_kept_as"] = retire_backup(p["backup_file"])
    return result


def check_smcli(module, p):
    if p["smcli"] and not os.access(p["smcli"], os.X_OK):
        module.fail_json(msg="%s: SMcli not found or not executable" % p["smcli"])
    bad = [c for c in p["controllers"] if not _CONTROLLER.match(str(c))]
    if bad:
        module.fail_json(msg="controller name(s) refused (a host name or address): %s" % ", ".join(repr(c) for c in bad))


def main():
    run_backed_module(
        dict(
            drives=dict(type="dict", default={}),
            controllers=dict(type="list", elements="str", required=True),
            smcli=dict(type="str", default=""),
        ),
        apply, rollback, check=check_smcli,
    )


if __name__ == "__main__":
    main()
