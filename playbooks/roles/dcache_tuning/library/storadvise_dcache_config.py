#!/usr/bin/python
# -*- coding: utf-8 -*-
# storadvise dcache_tuning: set properties in a dCache layout file and mover limits in pool setup files;
# restart the changed domains when asked; or roll back.

from __future__ import annotations

DOCUMENTATION = r"""
module: storadvise_dcache_config
short_description: Set dCache layout properties and pool mover limits, with rollback
description:
  - Each layout setting names a section header of the layout file as the file writes it
    (C([poolDomain]) or C([poolDomain/pool])); the last C(PROPERTY = VALUE) line of that section is
    replaced, or the line is added right under the header.
  - Each setup setting replaces the pool setup file's last C(mover set max active) line of its queue
    (no C(-queue) means C(regular)) by C(mover set max active -queue=QUEUE N), or appends one.
  - Files are written atomically; each file's previous content is recorded in a JSON backup first;
    C(state=rollback) restores them.
  - With C(restart=true) the domains whose files changed are restarted with C(dcache restart DOMAIN);
    otherwise nothing is restarted and the changes take effect at each domain's next restart.
options:
  layout_file:
    description: The layout file (/etc/dcache/layouts/NAME.conf).
    type: path
    required: true
  layout_settings:
    description: List of {header, domain, property, value}.
    type: list
    elements: dict
    default: []
  setup_settings:
    description: List of {file, queue, value, domain}.
    type: list
    elements: dict
    default: []
  restart:
    description: Restart the domains whose settings changed (and, on rollback, those the backup names).
    type: bool
    default: false
  dcache:
    description: The dcache command; empty searches PATH, /usr/sbin, /usr/bin, /usr/local/sbin, /opt/d-cache/bin.
    type: str
    default: ""
  backup_file:
    description: JSON file recording the replaced content.
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
- name: 2 GiB direct memory for the pool domain
  storadvise_dcache_config:
    layout_file: /etc/dcache/layouts/dc01.conf
    layout_settings: [{header: "[${host.name}_poolsDomain]", domain: dc01_poolsDomain,
                       property: dcache.java.memory.direct, value: "2147483648"}]
    backup_file: /var/lib/storadvise/backup/dcache_tuning.json
"""

RETURN = r"""
files:
  description: Files changed.
  type: list
  returned: always
domains:
  description: Domains whose files changed (the ones to restart).
  type: list
  returned: always
restarted:
  description: Domains restarted.
  type: list
  returned: always
"""

import re

try:  # a project's module_utils (a plan directory's ansible.cfg), else the installed collection's
    from ansible.module_utils.storadvise_state import (atomic_write, load_backup, read_text, record_change,
                                                       record_failure, restore_text, retire_backup,
                                                       run_backed_module, save_backup)
except ImportError:
    from ansible_collections.storadvise.tuning.plugins.module_utils.storadvise_state import (
        atomic_write, load_backup, read_text, record_change, record_failure, restore_text, retire_backup,
        run_backed_module, save_backup)

_PROPERTY = re.compile(r"^[A-Za-z0-9_.-]{1,128}\Z")
_VALUE = re.compile(r"^[A-Za-z0-9_.:/+-]{1,64}\Z")
_QUEUE = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")
_DOMAIN = re.compile(r"^[A-Za-z0-9_.${}-]{1,128}\Z")
_MOVER = re.compile(r"^\s*mover\s+set\s+max\s+active\b(.*)$")


def set_property(lines, header, prop, value):
    """Set PROPERTY = VALUE in the section under ``header``; returns (lines, old value) or None
    when the header is not in the file."""
    start = next((i for i, line in enumerate(lines) if line.strip() == header), None)
    if start is None:
        return None
    end = next((i for i in range(start + 1, len(lines)) if lines[i].strip().startswith("[")), len(lines))
    pat = re.compile(r"^\s*%s\s*=\s*(.*?)\s*$" % re.escape(prop))
    idx, old = None, None
    for i in range(start + 1, end):
        m = pat.match(lines[i])
        if m:
            idx, old = i, m.group(1)
    lines = list(lines)
    if idx is None:
        lines.insert(start + 1, "%s = %s" % (prop, value))
    else:
        lines[idx] = "%s = %s" % (prop, value)
    return lines, old


def mover_queue(rest):
    for word in rest.split():
        if word.startswith("-queue="):
            return word.split("=", 1)[1] or "regular"
    return "regular"


def set_mover(lines, queue, value):
    idx, old = None, None
    for i, line in enumerate(lines):
        m = _MOVER.match(line)
        if m and mover_queue(m.group(1)) == queue:
            idx = i
            old = next((w for w in m.group(1).split() if w.isdigit()), None)
    lines = list(lines)
    new = "mover set max active -queue=%s %d" % (queue, value)
    if idx is None:
        lines.append(new)
    else:
        lines[idx] = new
    return lines, old


def _dcache(module, p):
    if p["dcache"]:
        return p["dcache"]
    path = module.get_bin_path("dcache", opt_dirs=["/usr/sbin", "/usr/bin", "/usr/local/sbin", "/opt/d-cache/bin"])
    if not path:
        module.fail_json(msg="no dcache command on this host (restart asked)")
    return path


def _restart(module, p, result, domains):
    if not p["restart"] or module.check_mode or not domains:
        return
    cmd = _dcache(module, p)
    for d in domains:
        rc, out, err = module.run_command([cmd, "restart", d])
        if rc != 0:
            record_failure(result, "restart %s" % d, "dcache restart %s failed (%d): %s" % (d, rc, (err or out).strip()[-300:]))
        else:
            result["restarted"].append(d)


def apply(module, p):
    result = {"changed": False, "files": [], "domains": [], "restarted": [], "changed_settings": [], "failed_settings": []}
    new_text, old_text, touched = {}, {}, {}

    def text_of(path):
        if path not in new_text:
            t = read_text(path)
            if t is None:
                return None
            old_text[path] = new_text[path] = t
        return new_text[path]

    for s in p["layout_settings"] or []:
        header, prop, value, domain = (str(s.get(k, "")) for k in ("header", "property", "value", "domain"))
        name = "%s %s" % (header, prop)
        if not (header.startswith("[") and header.endswith("]")) or not _PROPERTY.match(prop) \
                or not _VALUE.match(value) or not _DOMAIN.match(domain):
            record_failure(result, name, "not a layout header, dCache property, value and domain")
            continue
        text = text_of(p["layout_file"])
        if text is None:
            record_failure(result, name, "%s: layout file not found" % p["layout_file"])
            continue
        out = set_property(text.splitlines(), header, prop, value)
        if out is None:
            record_failure(result, name, "%s has no section %s" % (p["layout_file"], header))
            continue
        lines, old = out
        if old != value:
            new_text[p["layout_file"]] = "\n".join(lines) + "\n"
            touched.setdefault(p["layout_file"], []).append((name, old, value, domain))
    for s in p["setup_settings"] or []:
        path, queue, domain = str(s.get("file", "")), str(s.get("queue", "")), str(s.get("domain", ""))
        name = "%s mover set max active -queue=%s" % (path, queue)
        try:
            value = int(s.get("value"))
        except (TypeError, ValueError):
            value = -1
        if not path.startswith("/") or not _QUEUE.match(queue) or not 0 < value < 100000 or not _DOMAIN.match(domain):
            record_failure(result, name, "not a setup file path, queue name, mover count (1-99999) and domain")
            continue
        text = text_of(path)
        if text is None:
            record_failure(result, name, "%s: pool setup file not found" % path)
            continue
        lines, old = set_mover(text.splitlines(), queue, value)
        if old != str(value):
            new_text[path] = "\n".join(lines) + "\n"
            touched.setdefault(path, []).append((name, old, str(value), domain))
    changed = [f for f in sorted(new_text) if new_text[f] != old_text[f]]
    if module._diff and changed:
        result["diff"] = [{"before_header": f, "after_header": f, "before": old_text[f], "after": new_text[f]} for f in changed]
    if not changed:
        return result
    if not module.check_mode:
        backup = load_backup(p["backup_file"]) or {"role": "dcache_tuning", "files": {}, "domains": []}
        for f in changed:
            backup["files"].setdefault(f, old_text[f])
        backup["domains"] = sorted(set(backup.get("domains") or []) | {d for f in changed for *_, d in touched[f]})
        save_backup(p["backup_file"], backup)
    for f in changed:
        try:
            if not module.check_mode:
                atomic_write(f, new_text[f], mode=0o644)
        except OSError as exc:
            for name, _old, _new, _d in touched[f]:
                record_failure(result, name, "could not write the file: %s" % exc)
            continue
        result["files"].append(f)
        for name, old, new, domain in touched[f]:
            record_change(result, name, old if old is not None else "(unset)", new)
            if domain not in result["domains"]:
                result["domains"].append(domain)
    result["changed"] = bool(result["files"])
    _restart(module, p, result, result["domains"])
    return result


def rollback(module, p):
    result = {"changed": False, "files": [], "domains": [], "restarted": [], "rolled_back": False, "failed_settings": []}
    backup = load_backup(p["backup_file"])
    if backup is None:
        result["msg"] = "no backup at %s: nothing to roll back on this host (nothing changed)" % p["backup_file"]
        return result
    result["files"] = [f for f, t in sorted((backup.get("files") or {}).items()) if read_text(f) != t]
    result["domains"] = list(backup.get("domains") or [])
    result["changed"] = result["rolled_back"] = True
    if module.check_mode:
        return result
    for f, t in (backup.get("files") or {}).items():
        restore_text(f, t)
    result["backup_kept_as"] = retire_backup(p["backup_file"])
    _restart(module, p, result, result["domains"])
    return result


def main():
    run_backed_module(
        dict(
            layout_file=dict(type="path", required=True),
            layout_settings=dict(type="list", elements="dict", default=[]),
            setup_settings=dict(type="list", elements="dict", default=[]),
            restart=dict(type="bool", default=False),
            dcache=dict(type="str", default=""),
        ),
        apply, rollback,
    )


if __name__ == "__main__":
    main()
