#!/usr/bin/python
# -*- coding: utf-8 -*-
# storadvise network_tuning: set sysctls now, persist them, disable conflicting lines; or roll back.

from __future__ import annotations

DOCUMENTATION = r"""
module: storadvise_sysctl
short_description: Set kernel parameters now and at boot, with a backup for rollback
description:
  - Writes each sysctl with C(sysctl -w), reads it back from /proc/sys and fails when the kernel
    did not take the value (C(sysctl -w) exits 0 even then).
  - Persists the values in one sysctl.d file and comments out, with a marker, lines of other
    sysctl.d files or /etc/sysctl.conf that set another value; lines in vendor directories that
    would win at boot are reported, not changed.
  - Records every replaced value in a JSON backup before changing it; C(state=rollback) restores them.
options:
  sysctls:
    description: Parameter name to value. Only C(net.*) and C(vm.*) parameters are written (not the few
      among them that weaken the kernel's protections, such as C(vm.mmap_min_addr)); any other name
      (C(kernel.core_pattern), C(fs.*)) is refused as a failed setting.
    type: dict
    default: {}
  sysctl_file:
    description: The sysctl.d file that holds the values.
    type: path
    default: /etc/sysctl.d/90-storadvise.conf
  conf_paths:
    description: Configuration directories and files read at boot, in systemd-sysctl precedence.
    type: list
    elements: path
  editable_prefixes:
    description: Only files under these prefixes are edited; conflicts elsewhere are reported.
    type: list
    elements: str
    default: [/etc/, /run/]
  runtime_only:
    description: Parameters of C(sysctls) set at run time only, not written to C(sysctl_file), because
      their boot value is already right (no file sets them and the kernel default is the value).
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
- name: Enable TCP SACK now and at boot
  storadvise_sysctl:
    sysctls: {net.ipv4.tcp_sack: "1"}
    backup_file: /var/lib/storadvise/backup/network_tuning.json
"""

RETURN = r"""
changed_sysctls:
  description: Parameters whose runtime value changed (name -> {old, new}).
  type: dict
  returned: always
disabled_lines:
  description: Conflicting lines commented out (file, line).
  type: list
  returned: always
cannot_change:
  description: Conflicting lines that win at boot but are not in an editable file.
  type: list
  returned: always
"""

import os
import re

try:  # a project's module_utils (a plan directory's ansible.cfg), else the installed collection's
    from ansible.module_utils.storadvise_canonical import sysctl_value
    from ansible.module_utils.storadvise_state import (atomic_write, load_backup, read_text, record_change,
                                                       record_failure, restore_text, retire_backup,
                                                       run_backed_module, save_backup)
    from ansible.module_utils.storadvise_sysctl_keys import normalize_sysctl_key, sysctl_proc_path, tunable_problem
except ImportError:
    from ansible_collections.storadvise.tuning.plugins.module_utils.storadvise_canonical import sysctl_value
    from ansible_collections.storadvise.tuning.plugins.module_utils.storadvise_state import (
        atomic_write, load_backup, read_text, record_change, record_failure, restore_text, retire_backup,
        run_backed_module, save_backup)
    from ansible_collections.storadvise.tuning.plugins.module_utils.storadvise_sysctl_keys import (
        normalize_sysctl_key, sysctl_proc_path, tunable_problem)

DEFAULT_CONF_PATHS = ["/etc/sysctl.d", "/run/sysctl.d", "/usr/local/lib/sysctl.d", "/usr/lib/sysctl.d",
                      "/lib/sysctl.d", "/etc/sysctl.conf"]
MARKER = "# storadvise disabled"
_LINE = re.compile(r"^\s*-?\s*([A-Za-z0-9_./*:@+-]+)\s*=\s*(.*?)\s*$")
_MARKED = re.compile(r"^# storadvise disabled \(.*?\): (.*)$")


def norm_key(k):
    """A key as written in a file (``-`` prefix, either separator form) in its dotted form."""
    return normalize_sysctl_key(k.strip().lstrip("-").strip())


def norm_value(v):
    return sysctl_value(v)


def proc_path(key):
    return sysctl_proc_path(key)


def read_runtime(key):
    try:
        with open(proc_path(key)) as f:
            return norm_value(f.read())
    except (FileNotFoundError, IsADirectoryError):
        return None


def boot_files(conf_paths):
    """Files read at boot, in the order they are applied (later wins): sysctl.d files by base
    name (a name in an earlier directory shadows the same name in later ones), then plain files."""
    by_name = {}
    plain = []
    for p in conf_paths:
        if os.path.isdir(p):
            for n in sorted(os.listdir(p)):
                fp = os.path.join(p, n)
                if n.endswith(".conf") and n not in by_name and (os.path.isfile(fp) or os.path.islink(fp)):
                    by_name[n] = fp
        elif os.path.isfile(p):
            plain.append(p)
    ordered = [by_name[n] for n in sorted(by_name)] + plain
    out, seen = [], set()
    for fp in ordered:
        real = os.path.realpath(fp)
        if real in seen or os.path.realpath(fp) == "/dev/null":
            continue
        seen.add(real)
        out.append(fp)
    return out


def settings_in(path):
    """(index, key, value, line) of every assignment in a file."""
    return settings_in_text(read_text(path))


def settings_in_text(text):
    if text is None:
        return []
    out = []
    for i, line in enumerate(text.splitlines()):
        s = line.strip()
        if not s or s[0] in "#;":
            continue
        m = _LINE.match(s)
        if m:
            out.append((i, norm_key(m.group(1)), norm_value(m.group(2)), line))
    return out


def render_file(values):
    lines = ["# Managed by storadvise (network_tuning). Values that fix scan findings; see the plan's PLAN.md.",
             "# Rollback: ansible-playbook rollback.yml in the plan directory."]
    lines += ["%s = %s" % (k, values[k]) for k in sorted(values)]
    return "\n".join(lines) + "\n"


def parse_own_file(path):
    return {k: v for _, k, v, _ in settings_in(path)}


def editable(path, prefixes):
    real = os.path.realpath(path)
    return any(real.startswith(p) for p in prefixes) and os.access(os.path.dirname(real), os.W_OK)


def plan_conflicts(sysctls, own_file, conf_paths, prefixes):
    """Lines in other boot files that set one of ``sysctls`` to another value."""
    to_disable, cannot = {}, []
    own_real = os.path.realpath(own_file)
    files = boot_files(conf_paths)
    own_name = os.path.basename(own_file)
    for fp in files:
        if os.path.realpath(fp) == own_real:
            continue
        for idx, key, value, line in settings_in(fp):
            if key not in sysctls or value == sysctls[key]:
                continue
            if editable(fp, prefixes):
                to_disable.setdefault(os.path.realpath(fp), []).append((idx, key, line))
            else:
                later = fp.endswith("/sysctl.conf") or os.path.basename(fp) > own_name
                if later:
                    cannot.append({"file": fp, "line": line.strip(), "key": key,
                                   "why": "applied after %s at boot but not in an editable directory; copy the file "
                                          "to /etc/sysctl.d/%s without this line" % (own_file, os.path.basename(fp))})
    return to_disable, cannot


def marker_line(key, value, own_file, line):
    return "%s (%s = %s is set in %s): %s" % (MARKER, key, value, own_file, line)


def refusal(key, value, runtime):
    """Why ``key`` cannot be set to ``value`` on this host, or None."""
    why = tunable_problem(key)  # net.* and vm.* only: never kernel.core_pattern and the like
    if why:
        return why
    if runtime is None:
        return "no such kernel parameter on this host (%s missing)" % proc_path(key)
    if "\n" in value or "\r" in value:
        return "value holds a line break"
    if runtime != value:
        try:
            writable = os.stat(proc_path(key)).st_mode & 0o222
        except OSError as exc:
            return "%s: %s" % (proc_path(key), exc)
        if not writable:
            return ("read-only here (%s has no write permission: a per-host key inside a network namespace "
                    "or container)" % proc_path(key))
    return None


def persistence(sysctls, own, conf_paths, prefixes):
    """(own_before, own_after, to_disable, cannot, file_changes) for persisting ``sysctls``."""
    own_before = read_text(own)
    own_values = parse_own_file(own)
    own_values.update(sysctls)
    own_after = render_file(own_values)
    to_disable, cannot = plan_conflicts(sysctls, own, conf_paths, prefixes)
    file_changes = {}
    for fp, hits in to_disable.items():
        text = read_text(fp)
        lines = text.splitlines()
        for idx, key, line in hits:
            lines[idx] = marker_line(key, sysctls[key], own, line)
        file_changes[fp] = (text, "\n".join(lines) + ("\n" if text.endswith("\n") else ""))
    return own_before, own_after, to_disable, cannot, file_changes


def disabled_lines(to_disable):
    return [{"file": fp, "line": line.strip()} for fp, hits in sorted(to_disable.items()) for _i, _k, line in hits]


def apply(module, p):
    own = p["sysctl_file"]
    conf_paths = p["conf_paths"] or DEFAULT_CONF_PATHS
    result = {"changed": False, "changed_sysctls": {}, "disabled_lines": [], "cannot_change": [], "diff": [],
              "changed_settings": [], "failed_settings": []}
    sysctls, runtime = {}, {}
    for k, v in sorted((p["sysctls"] or {}).items()):
        k, v = norm_key(k), norm_value(v)
        cur = read_runtime(k) if tunable_problem(k) is None else None
        why = refusal(k, v, cur)
        if why:
            record_failure(result, k, why)
            continue
        sysctls[k], runtime[k] = v, cur
    runtime_only = {norm_key(k) for k in p["runtime_only"] or []}

    def persisted(values):
        return {k: v for k, v in values.items() if k not in runtime_only}

    own_before, own_after, to_disable, cannot, file_changes = persistence(persisted(sysctls), own, conf_paths,
                                                                          p["editable_prefixes"])
    result["cannot_change"] = cannot
    result["disabled_lines"] = disabled_lines(to_disable)
    runtime_changes = {k: {"old": runtime[k], "new": v} for k, v in sysctls.items() if runtime[k] != v}
    result["changed_sysctls"] = runtime_changes
    if runtime_changes:
        result["diff"].append({"before_header": "runtime (/proc/sys)", "after_header": "runtime (/proc/sys)",
                               "before": "".join("%s = %s\n" % (k, c["old"]) for k, c in sorted(runtime_changes.items())),
                               "after": "".join("%s = %s\n" % (k, c["new"]) for k, c in sorted(runtime_changes.items()))})
    if own_before != own_after:
        result["diff"].append({"before_header": own, "after_header": own, "before": own_before or "", "after": own_after})
    for fp, (before, after) in sorted(file_changes.items()):
        result["diff"].append({"before_header": fp, "after_header": fp, "before": before, "after": after})
    result["changed"] = bool(runtime_changes or own_before != own_after or file_changes)
    own_values_before = parse_own_file(own)
    if not result["changed"]:
        return result
    if module.check_mode:
        settings_changed(result, sysctls, runtime, own_values_before, own_after)
        return result
    # 1. the backup, before anything changes; values already recorded are kept (the originals)
    backup = load_backup(p["backup_file"]) or {"role": "network_tuning", "runtime": {}, "disabled": [], "files": {}}
    for k in sysctls:
        backup["runtime"].setdefault(k, runtime[k])
    backup["files"].setdefault(own, own_before)
    for fp, hits in to_disable.items():
        for idx, key, line in hits:
            entry = {"file": fp, "line": line, "marked": marker_line(key, sysctls[key], own, line)}
            if entry not in backup["disabled"]:
                backup["disabled"].append(entry)
    save_backup(p["backup_file"], backup)
    # 2. runtime, read back. A value the kernel refuses is reported, and neither persisted nor
    #    set against other files' lines; the other values go on.
    refused = False
    for k, c in sorted(runtime_changes.items()):
        why = set_runtime(module, k, c["new"])
        if why:
            record_failure(result, k, why)
            del sysctls[k]
            refused = True
    if refused:
        own_before, own_after, to_disable, cannot, file_changes = persistence(persisted(sysctls), own, conf_paths,
                                                                              p["editable_prefixes"])
        result["cannot_change"] = cannot
        result["disabled_lines"] = disabled_lines(to_disable)
        result["changed_sysctls"] = {k: c for k, c in runtime_changes.items() if k in sysctls}
    # 3. persistence, then the conflicting lines
    if own_before != own_after:
        d = os.path.dirname(own)
        if not os.path.isdir(d):
            module.fail_json(msg="%s: directory does not exist" % d, **result)
        atomic_write(own, own_after, mode=0o644)
    for fp, (_before, after) in sorted(file_changes.items()):
        atomic_write(fp, after)
    settings_changed(result, sysctls, runtime, own_values_before, own_after)
    result["changed"] = bool(result["changed_settings"] or file_changes or own_before != own_after)
    return result


def settings_changed(result, sysctls, runtime, own_values_before, own_after):
    """One changed_settings entry per key whose runtime or persisted value changes."""
    after = {k: v for _, k, v, _ in settings_in_text(own_after)}
    for k, v in sorted(sysctls.items()):
        if runtime[k] != v:
            record_change(result, k, runtime[k], v)
        elif own_values_before.get(k) != after.get(k):
            record_change(result, k + " (persisted file only)", own_values_before.get(k), v)


def set_runtime(module, key, value):
    """Write a kernel parameter and read it back; returns why it did not take, or None."""
    sysctl = module.get_bin_path("sysctl")
    if sysctl:
        rc, _out, err = module.run_command([sysctl, "-w", "%s=%s" % (key, value)])
        how = "sysctl -w"
    else:
        try:
            with open(proc_path(key), "w") as f:
                f.write(value + "\n")
            rc, err = 0, ""
        except OSError as exc:
            rc, err = 1, str(exc)
        how = "write to %s" % proc_path(key)
    now = read_runtime(key)
    if now != value:
        detail = (err or "").strip().splitlines()
        return "%s %s did not take: the kernel reports %s%s" % (
            how, value, now, (" (" + detail[-1] + ")") if detail else " (read-only here, e.g. in a network namespace?)")
    return None


def rollback(module, p):
    result = {"changed": False, "changed_sysctls": {}, "disabled_lines": [], "cannot_change": [], "diff": [],
              "rolled_back": False}
    backup = load_backup(p["backup_file"])
    if backup is None:
        result["msg"] = "no backup at %s: nothing to roll back on this host (nothing changed)" % p["backup_file"]
        return result
    runtime_changes = {}
    for k, old in sorted((backup.get("runtime") or {}).items()):
        cur = read_runtime(k)
        if cur is not None and cur != old:
            runtime_changes[k] = {"old": cur, "new": old}
    file_changes = {}
    for fp, text in sorted((backup.get("files") or {}).items()):
        cur = read_text(fp)
        if cur != text:
            file_changes[fp] = (cur, text)
    unmarked = {}
    for e in backup.get("disabled") or []:
        cur = file_changes[e["file"]][1] if e["file"] in file_changes else read_text(e["file"])
        cur = unmarked.get(e["file"], cur)
        if cur is None:
            result["cannot_change"].append({"file": e["file"], "line": e["line"], "why": "file is gone"})
            continue
        lines = cur.splitlines()
        if e["marked"] in lines:
            lines[lines.index(e["marked"])] = e["line"]
            unmarked[e["file"]] = "\n".join(lines) + ("\n" if cur.endswith("\n") else "")
        else:
            result["cannot_change"].append({"file": e["file"], "line": e["line"],
                                            "why": "the disabled line was edited since; left as it is"})
    for fp, after in unmarked.items():
        before = read_text(fp)
        if before != after:
            file_changes[fp] = (before, after)
            result["disabled_lines"].append({"file": fp, "restored": True})
    result["changed_sysctls"] = runtime_changes
    for k, c in runtime_changes.items():
        result["diff"].append({"before_header": "runtime %s" % k, "after_header": "runtime %s" % k,
                               "before": c["old"] + "\n", "after": c["new"] + "\n"})
    for fp, (before, after) in sorted(file_changes.items()):
        result["diff"].append({"before_header": fp, "after_header": fp, "before": before or "", "after": after or ""})
    result["changed"] = True  # the backup itself is retired
    result["rolled_back"] = True
    if module.check_mode:
        return result
    for k, c in sorted(runtime_changes.items()):
        why = set_runtime(module, k, c["new"])
        if why:
            record_failure(result, k, why)
        else:
            record_change(result, k, c["old"], c["new"])
    for fp, (_before, after) in sorted(file_changes.items()):
        restore_text(fp, after)
    result["backup_kept_as"] = retire_backup(p["backup_file"])
    return result


def main():
    run_backed_module(
        dict(
            sysctls=dict(type="dict", default={}),
            runtime_only=dict(type="list", elements="str", default=[]),
            sysctl_file=dict(type="path", default="/etc/sysctl.d/90-storadvise.conf"),
            conf_paths=dict(type="list", elements="path", default=None),
            editable_prefixes=dict(type="list", elements="str", default=["/etc/", "/run/"]),
        ),
        apply, rollback, diff_only_when_asked=True,
    )


if __name__ == "__main__":
    main()
