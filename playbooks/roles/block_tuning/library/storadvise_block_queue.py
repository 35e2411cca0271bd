#!/usr/bin/python
# -*- coding: utf-8 -*-
# storadvise block_tuning: scheduler, device queue depth, nr_requests and read_ahead_kb now (sysfs, read back)
# and at boot (udev rule).

from __future__ import annotations

DOCUMENTATION = r"""
module: storadvise_block_queue
short_description: Set block device scheduler, queue depths and read-ahead now and persist them with a udev rule
description:
  - Writes /sys/block/DEV/queue/scheduler, /sys/block/DEV/device/queue_depth, /sys/block/DEV/queue/nr_requests
    and /sys/block/DEV/queue/read_ahead_kb in that order (selecting a scheduler resets nr_requests), reads each
    back and records a value the kernel did not take as failed; writes one udev rules file with the values that
    took, attributes in the same order, for the next boot.
  - Records the replaced values (and the rules file) in a JSON backup first; C(state=rollback) restores them.
options:
  devices:
    description: Device name to {scheduler, queue_depth, nr_requests, read_ahead_kb}.
    type: dict
    default: {}
  udev_rules_file:
    description: The udev rules file that persists the values.
    type: path
    default: /etc/udev/rules.d/60-storadvise-block.rules
  sysfs_block:
    description: Where the block devices are in sysfs.
    type: path
    default: /sys/block
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
- name: Read-ahead 4 MiB and mq-deadline on sdb
  storadvise_block_queue:
    devices: {sdb: {read_ahead_kb: 4096, scheduler: mq-deadline}}
    backup_file: /var/lib/storadvise/backup/block_tuning.json
"""

RETURN = r"""
changed_devices:
  description: Device -> setting -> {old, new}.
  type: dict
  returned: always
"""

import os
import re

try:  # a project's module_utils (a plan directory's ansible.cfg), else the installed collection's
    from ansible.module_utils.storadvise_state import (atomic_write, load_backup, read_text, record_change,
                                                       record_failure, restore_text, retire_backup,
                                                       run_backed_module, save_backup)
except ImportError:
    from ansible_collections.storadvise.tuning.plugins.module_utils.storadvise_state import (
        atomic_write, load_backup, read_text, record_change, record_failure, restore_text, retire_backup,
        run_backed_module, save_backup)

#: the order of writes: a new scheduler resets nr_requests, and nr_requests above the device's tag depth
#: is refused without a scheduler, so scheduler and queue depth go first
KEYS = ("scheduler", "queue_depth", "nr_requests", "read_ahead_kb")
#: the sysfs directory under /sys/block/DEV of each key
KEY_DIR = {"queue_depth": "device"}
_DEVICE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:!+-]{0,63}\Z")  # a kernel block device name (no / or quotes)


def attr_path(p, dev, key):
    return os.path.join(p["sysfs_block"], dev, KEY_DIR.get(key, "queue"), key)


def read_attr(p, dev, key):
    text = read_text(attr_path(p, dev, key))
    if text is None:
        return None
    text = text.strip()
    if key == "scheduler":
        m = re.search(r"\[([^\]]+)\]", text)
        return m.group(1) if m else text
    return text


def available_schedulers(p, dev):
    text = read_text(attr_path(p, dev, "scheduler")) or ""
    return [s.strip("[]") for s in text.split()]


def write_attr(p, dev, key, value):
    """Write a queue attribute and read it back; returns why it did not take, or None."""
    try:
        with open(attr_path(p, dev, key), "w") as f:
            f.write(str(value) + "\n")
    except OSError as exc:
        return "write failed: %s" % exc
    now = read_attr(p, dev, key)
    if str(now) != str(value):
        return "did not take: the kernel reports %s" % now
    return None


def udev_text(values):
    lines = ["# Managed by storadvise (block_tuning): block queue settings at boot and hot-plug.",
             "# Rollback: ansible-playbook rollback.yml in the plan directory."]
    for dev in sorted(values):
        attrs = ", ".join('ATTR{%s/%s}="%s"' % (KEY_DIR.get(k, "queue"), k, values[dev][k]) for k in KEYS if k in values[dev])
        lines.append('ACTION=="add|change", SUBSYSTEM=="block", KERNEL=="%s", %s' % (dev, attrs))
    return "\n".join(lines) + "\n"


def parse_udev(text):
    out = {}
    for line in (text or "").splitlines():
        m = re.search(r'KERNEL=="([^"]+)"', line)
        if not m or line.lstrip().startswith("#"):
            continue
        out[m.group(1)] = {k: v for k, v in re.findall(r'ATTR\{(?:queue|device)/(\w+)\}="([^"]*)"', line)}
    return out


def apply(module, p):
    result = {"changed": False, "changed_devices": {}, "changed_settings": [], "failed_settings": []}
    if not p["devices"]:
        return result  # nothing planned: neither sysfs nor the udev rule is touched
    changes, planned = {}, {}
    for dev, want in sorted((p["devices"] or {}).items()):
        if not _DEVICE.match(str(dev)) or not os.path.isdir(os.path.join(p["sysfs_block"], dev)):
            record_failure(result, str(dev), "no such block device (%s)" % os.path.join(p["sysfs_block"], str(dev)))
            continue
        for key in sorted(set(want or {}) - set(KEYS)):  # only the settings its rules can ask for
            record_failure(result, "%s %s" % (dev, key), "not a setting block_tuning makes (%s)" % ", ".join(KEYS))
        for key in KEYS:
            if want.get(key) is None:
                continue
            if not os.path.exists(attr_path(p, dev, key)):
                record_failure(result, "%s %s" % (dev, key), "the kernel has no %s for this device (%s)"
                               % (key, attr_path(p, dev, key)))
                continue
            if key == "scheduler" and want[key] not in available_schedulers(p, dev):
                record_failure(result, "%s %s" % (dev, key), "scheduler %s is not available (the kernel offers: %s)"
                               % (want[key], " ".join(available_schedulers(p, dev))))
                continue
            if key == "read_ahead_kb" and not str(want[key]).isdigit():
                record_failure(result, "%s %s" % (dev, key), "not a number of KiB: %r" % str(want[key]))
                continue
            if key in ("nr_requests", "queue_depth") and not (str(want[key]).isdigit() and int(want[key]) > 0):
                record_failure(result, "%s %s" % (dev, key), "not a positive number of requests: %r" % str(want[key]))
                continue
            planned.setdefault(dev, {})[key] = str(want[key])
            cur = read_attr(p, dev, key)
            if str(cur) != str(want[key]):
                changes.setdefault(dev, {})[key] = {"old": cur, "new": str(want[key])}
    before = read_text(p["udev_rules_file"])
    after = udev_text(merged(before, planned))
    result["changed_devices"] = changes
    result["changed"] = bool(changes) or before != after
    if module._diff and result["changed"]:
        result["diff"] = [{"before_header": "sysfs", "after_header": "sysfs",
                           "before": "".join("%s %s = %s\n" % (d, k, c["old"]) for d, kc in sorted(changes.items()) for k, c in sorted(kc.items())),
                           "after": "".join("%s %s = %s\n" % (d, k, c["new"]) for d, kc in sorted(changes.items()) for k, c in sorted(kc.items()))},
                          {"before_header": p["udev_rules_file"], "after_header": p["udev_rules_file"],
                           "before": before or "", "after": after}]
    if not result["changed"]:
        return result
    if module.check_mode:
        for dev, kc in sorted(changes.items()):
            for k, c in sorted(kc.items()):
                record_change(result, "%s %s" % (dev, k), c["old"], c["new"])
        return result
    backup = load_backup(p["backup_file"]) or {"role": "block_tuning", "devices": {}, "files": {}}
    for dev, kc in changes.items():
        for k, c in kc.items():
            backup["devices"].setdefault(dev, {}).setdefault(k, c["old"])
    backup["files"].setdefault(p["udev_rules_file"], before)
    save_backup(p["backup_file"], backup)
    for dev, kc in sorted(changes.items()):
        for k, c in [(k, kc[k]) for k in KEYS if k in kc]:
            why = write_attr(p, dev, k, c["new"])
            if why:
                record_failure(result, "%s %s" % (dev, k), why)
                planned[dev].pop(k, None)  # not persisted either
            else:
                record_change(result, "%s %s" % (dev, k), c["old"], c["new"])
    after = udev_text(merged(before, planned))
    if before != after:
        d = os.path.dirname(p["udev_rules_file"])
        if not os.path.isdir(d):
            module.fail_json(msg="%s: directory does not exist" % d, **result)
        atomic_write(p["udev_rules_file"], after, mode=0o644)
    result["changed"] = bool(result["changed_settings"]) or before != after
    return result


def merged(before, planned):
    """The udev rule's values: those it holds, updated with the planned ones."""
    values = parse_udev(before)
    for dev, want in planned.items():
        if want:
            values.setdefault(dev, {}).update(want)
    return values


def rollback(module, p):
    result = {"changed": False, "changed_devices": {}, "rolled_back": False, "changed_settings": [], "failed_settings": []}
    backup = load_backup(p["backup_file"])
    if backup is None:
        result["msg"] = "no backup at %s: nothing to roll back on this host (nothing changed)" % p["backup_file"]
        return result
    result["changed"] = result["rolled_back"] = True
    for dev, kv in sorted((backup.get("devices") or {}).items()):
        for k in KEYS:
            old = kv.get(k)
            # compared after each write: restoring the scheduler resets nr_requests
            if old is None or str(read_attr(p, dev, k)) == str(old):
                continue
            cur = read_attr(p, dev, k)
            result["changed_devices"].setdefault(dev, {})[k] = {"old": cur, "new": old}
            if module.check_mode:
                continue
            why = write_attr(p, dev, k, old)
            if why:
                record_failure(result, "%s %s" % (dev, k), why)
            else:
                record_change(result, "%s %s" % (dev, k), cur, old)
    if module.check_mode:
        return result
    for path, text in (backup.get("files") or {}).items():
        restore_text(path, text)
    result["backup_kept_as"] = retire_backup(p["backup_file"])
    return result


def main():
    run_backed_module(
        dict(
            devices=dict(type="dict", default={}),
            udev_rules_file=dict(type="path", default="/etc/udev/rules.d/60-storadvise-block.rules"),
            sysfs_block=dict(type="path", default="/sys/block"),
        ),
        apply, rollback,
    )


if __name__ == "__main__":
    main()
