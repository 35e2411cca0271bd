#!/usr/bin/python
# -*- coding: utf-8 -*-
# storadvise cpu_tuning: the CPU frequency governor now (cpufreq sysfs) and at boot (tuned or a systemd unit).

from __future__ import annotations

DOCUMENTATION = r"""
module: storadvise_cpufreq
short_description: Set the CPU frequency governor now and at boot
description:
  - Writes the governor into every cpufreq policy's C(scaling_governor) and reads it back; a policy that does not
    offer it (C(scaling_available_governors)) is recorded as failed.
  - Persists it as the host does. When tuned runs (C(persist=auto)), tuned sets the governor at every boot and
    profile switch and would undo anything else: a profile C(storadvise-cpu) that includes the active one and sets
    C([cpu] governor) is written under C(tuned_dir) and made active (C(tuned-adm profile)). Otherwise a oneshot
    systemd unit that writes the governor at boot is written under C(unit_dir) and enabled (C(systemctl enable), or
    the C(multi-user.target.wants) link that command makes, where systemd does not run).
  - Records the replaced governors, the files and the previous tuned profile in a JSON backup first; C(state=rollback)
    restores them.
options:
  governor:
    description: The governor (performance, ...). Empty does nothing.
    type: str
    default: ""
  persist:
    description: C(auto), C(tuned) or C(systemd).
    type: str
    choices: [auto, tuned, systemd]
    default: auto
  cpufreq_dir:
    description: Where the cpufreq policies are.
    type: path
    default: /sys/devices/system/cpu/cpufreq
  unit_dir:
    description: Where the systemd unit is written.
    type: path
    default: /etc/systemd/system
  tuned_dir:
    description: Where tuned looks for custom profiles.
    type: path
    default: /etc/tuned
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
- name: The performance governor now and at boot
  storadvise_cpufreq:
    governor: performance
    backup_file: /var/lib/storadvise/backup/cpu_tuning.json
"""

RETURN = r"""
persisted_with:
  description: tuned or systemd.
  type: str
  returned: when a governor is set
"""

import glob
import os
import re
import shutil

try:  # a project's module_utils (a plan directory's ansible.cfg), else the installed collection's
    from ansible.module_utils.storadvise_state import (atomic_write, load_backup, read_text, record_change,
                                                       record_failure, restore_text, retire_backup,
                                                       run_backed_module, save_backup)
except ImportError:
    from ansible_collections.storadvise.tuning.plugins.module_utils.storadvise_state import (
        atomic_write, load_backup, read_text, record_change, record_failure, restore_text, retire_backup,
        run_backed_module, save_backup)

UNIT = "storadvise-cpu-governor.service"
PROFILE = "storadvise-cpu"
_GOVERNOR = re.compile(r"^[a-z0-9_-]{1,32}\Z")


def policies(p):
    return sorted(glob.glob(os.path.join(p["cpufreq_dir"], "policy[0-9]*")), key=lambda d: int(re.sub(r"\D", "", d) or 0))


def read(path):
    text = read_text(path)
    return text.strip() if text is not None else None


def unit_text(governor, cpufreq_dir):
    return ("# Managed by storadvise (cpu_tuning): the CPU frequency governor at boot.\n"
            "# Rollback: ansible-playbook rollback.yml in the plan directory.\n"
            "[Unit]\nDescription=storadvise: CPU frequency governor %s\nAfter=systemd-modules-load.service\n\n"
            "[Service]\nType=oneshot\nRemainAfterExit=yes\n"
            "ExecStart=/bin/sh -c 'for g in %s/policy*/scaling_governor; do echo %s > \"$g\"; done'\n\n"
            "[Install]\nWantedBy=multi-user.target\n" % (governor, cpufreq_dir, governor))


def tuned_active(module):
    """The active tuned profile when tuned runs, else None."""
    adm = shutil.which("tuned-adm")
    if not adm:
        return None
    rc, out, _ = module.run_command([adm, "active"])
    m = re.search(r"Current active profile:\s*(\S+)", out or "")
    return m.group(1) if rc == 0 and m else None


def profile_text(governor, include):
    return ("# Managed by storadvise (cpu_tuning): the active profile, with the CPU frequency governor %s.\n"
            "[main]\nsummary=%s with the %s CPU governor (storadvise)\n%s\n[cpu]\ngovernor=%s\n"
            % (governor, include or "no profile", governor, "include=%s\n" % include if include else "", governor))


def apply(module, p):
    result = {"changed": False, "changed_settings": [], "failed_settings": []}
    want = (p["governor"] or "").strip()
    if not want:
        return result
    if not _GOVERNOR.match(want):
        record_failure(result, "governor", "not a governor name: %r" % want[:40])
        return result
    pols = policies(p)
    if not pols:
        record_failure(result, "governor", "no cpufreq policy under %s (the firmware or hypervisor sets the frequency)"
                       % p["cpufreq_dir"])
        return result
    changes = {}
    for d in pols:
        offered = (read(os.path.join(d, "scaling_available_governors")) or "").split()
        if offered and want not in offered:
            record_failure(result, "%s governor" % os.path.basename(d), "%s offers %s, not %s" % (os.path.basename(d), " ".join(offered), want))
            continue
        now = read(os.path.join(d, "scaling_governor"))
        if now != want:
            changes[d] = now
    active = tuned_active(module) if p["persist"] in ("auto", "tuned") else None
    if p["persist"] == "tuned" and active is None:
        record_failure(result, "governor persisted", "tuned does not run on this host")
        return result
    method = "tuned" if active else "systemd"
    result["persisted_with"] = method
    files = {}
    if method == "tuned":
        path = os.path.join(p["tuned_dir"], PROFILE, "tuned.conf")
        old = read_text(path)
        m = re.search(r"^include=(\S+)", old or "", re.M)
        include = m.group(1) if active == PROFILE and m else (None if active == PROFILE else active)
        files[path] = (old, profile_text(want, include))
    else:
        unit = os.path.join(p["unit_dir"], UNIT)
        files[unit] = (read_text(unit), unit_text(want, p["cpufreq_dir"]))
    link = os.path.join(p["unit_dir"], "multi-user.target.wants", UNIT) if method == "systemd" else None
    link_missing = link is not None and not os.path.lexists(link)
    switch = method == "tuned" and active != PROFILE
    result["changed"] = bool(changes) or any(a != b for a, b in files.values()) or link_missing or switch
    if module._diff and result["changed"]:
        result["diff"] = [{"before_header": path, "after_header": path, "before": a or "", "after": b}
                          for path, (a, b) in files.items() if a != b]
    if not result["changed"]:
        return result
    if module.check_mode:
        for d, old in sorted(changes.items()):
            record_change(result, "%s governor" % os.path.basename(d), old, want)
        return result
    backup = load_backup(p["backup_file"]) or {"role": "cpu_tuning", "governors": {}, "files": {}}
    for d, old in changes.items():
        backup["governors"].setdefault(d, old)
    for path, (old, _new) in files.items():
        backup["files"].setdefault(path, old)
    if link is not None:
        backup.setdefault("links", {}).setdefault(link, os.path.lexists(link))
    if switch:
        backup.setdefault("tuned_profile", active)
    save_backup(p["backup_file"], backup)
    for d, old in sorted(changes.items()):
        why = write_governor(d, want)
        if why:
            record_failure(result, "%s governor" % os.path.basename(d), why)
        else:
            record_change(result, "%s governor" % os.path.basename(d), old, want)
    for path, (old, new) in files.items():
        if old != new:
            if not os.path.isdir(os.path.dirname(path)):
                os.makedirs(os.path.dirname(path), mode=0o755)
            atomic_write(path, new, mode=0o644)
    if method == "systemd":
        enable(module, p, link)
    elif switch:
        rc, out, err = module.run_command([shutil.which("tuned-adm"), "profile", PROFILE])
        if rc != 0:
            record_failure(result, "governor persisted", "tuned-adm profile %s failed: %s" % (PROFILE, (err or out).strip()[-200:]))
    result["changed"] = True
    return result


def write_governor(policy_dir, governor):
    path = os.path.join(policy_dir, "scaling_governor")
    try:
        with open(path, "w") as f:
            f.write(governor + "\n")
    except OSError as exc:
        return "write failed: %s" % exc
    now = read(path)
    return None if now == governor else "did not take: the kernel reports %s" % now


def enable(module, p, link):
    """``systemctl enable`` where systemd runs; else the link it would make."""
    systemctl = shutil.which("systemctl")
    if systemctl and os.path.isdir("/run/systemd/system") and os.path.realpath(p["unit_dir"]) == "/etc/systemd/system":
        module.run_command([systemctl, "daemon-reload"])
        rc, out, err = module.run_command([systemctl, "enable", UNIT])
        if rc != 0:
            module.fail_json(msg="systemctl enable %s failed: %s" % (UNIT, (err or out).strip()[-200:]))
        return
    if not os.path.lexists(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(os.path.join("..", UNIT), link)


def rollback(module, p):
    result = {"changed": False, "rolled_back": False, "changed_settings": [], "failed_settings": []}
    backup = load_backup(p["backup_file"])
    if backup is None:
        result["msg"] = "no backup at %s: nothing to roll back on this host (nothing changed)" % p["backup_file"]
        return result
    result["changed"] = result["rolled_back"] = True
    for d, old in sorted((backup.get("governors") or {}).items()):
        now = read(os.path.join(d, "scaling_governor"))
        if old is None or now == old:
            continue
        if module.check_mode:
            record_change(result, "%s governor" % os.path.basename(d), now, old)
            continue
        why = write_governor(d, old)
        if why:
            record_failure(result, "%s governor" % os.path.basename(d), why)
        else:
            record_change(result, "%s governor" % os.path.basename(d), now, old)
    if module.check_mode:
        return result
    previous = backup.get("tuned_profile")
    if previous and shutil.which("tuned-adm"):
        module.run_command([shutil.which("tuned-adm"), "profile", previous])
    for link, existed in (backup.get("links") or {}).items():
        if not existed and os.path.lexists(link):
            os.unlink(link)
    for path, text in (backup.get("files") or {}).items():
        restore_text(path, text)
    result["backup_kept_as"] = retire_backup(p["backup_file"])
    return result


def main():
    run_backed_module(
        dict(
            governor=dict(type="str", default=""),
            persist=dict(type="str", choices=["auto", "tuned", "systemd"], default="auto"),
            cpufreq_dir=dict(type="path", default="/sys/devices/system/cpu/cpufreq"),
            unit_dir=dict(type="path", default="/etc/systemd/system"),
            tuned_dir=dict(type="path", default="/etc/tuned"),
        ),
        apply, rollback,
    )


if __name__ == "__main__":
    main()
