#!/usr/bin/python
# -*- coding: utf-8 -*-
# storadvise xcache: set pfc.* (or other) directives in an XRootD configuration; or roll back.

from __future__ import annotations

DOCUMENTATION = r"""
module: storadvise_xrootd_directives
short_description: Set directives in an XRootD (XCache) configuration file
description:
  - For each directive, the last active line that sets it (in the file the scan found it in, else
    the main configuration file) is replaced by C(NAME ARGS); a directive not set anywhere is appended
    to the main file. Files are written atomically.
  - Records each file's previous content in a JSON backup first; C(state=rollback) restores them.
options:
  directives:
    description: Directive name to its arguments, e.g. {pfc.ram: 4g}.
    type: dict
    default: {}
  config_file:
    description: The instance's main configuration file.
    type: path
    required: true
  directive_files:
    description: Directive name to the file that sets it now.
    type: dict
    default: {}
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
- name: pfc.ram 4g
  storadvise_xrootd_directives:
    directives: {pfc.ram: 4g}
    config_file: /etc/xrootd/xrootd-xcache.cfg
    backup_file: /var/lib/storadvise/backup/xcache.json
"""

RETURN = r"""
files:
  description: Files changed.
  type: list
  returned: always
"""

import re

try:  # a project's module_utils (a plan directory's ansible.cfg), else the installed collection's
    from ansible.module_utils.storadvise_canonical import xrootd_directive
    from ansible.module_utils.storadvise_state import (atomic_write, load_backup, read_text, record_change,
                                                       record_failure, restore_text, retire_backup,
                                                       run_backed_module, save_backup)
except ImportError:
    from ansible_collections.storadvise.tuning.plugins.module_utils.storadvise_canonical import xrootd_directive
    from ansible_collections.storadvise.tuning.plugins.module_utils.storadvise_state import (
        atomic_write, load_backup, read_text, record_change, record_failure, restore_text, retire_backup,
        run_backed_module, save_backup)

_DIRECTIVE = re.compile(r"^[A-Za-z][A-Za-z0-9_.]{0,63}\Z")


def set_directive(lines, name, args):
    """Replace the last active directive ``name`` (its line and the ``\\`` continuation lines
    after it) with ``name args``; returns (lines, found). A directive that already says ``args``
    by meaning (spacing, a trailing comment, continuation lines: storadvise_canonical) is kept
    as written."""
    idx = None
    for i, line in enumerate(lines):
        words = line.split()
        if words and words[0] == name:
            idx = i
    if idx is None:
        return lines, False
    end = idx
    while end + 1 < len(lines) and lines[end].split("#", 1)[0].rstrip().endswith("\\"):
        end += 1
    if xrootd_directive("\n".join(lines[idx:end + 1])) == xrootd_directive("%s %s" % (name, args)):
        return lines, True
    lines = list(lines)
    indent = lines[idx][: len(lines[idx]) - len(lines[idx].lstrip())]
    lines[idx:end + 1] = ["%s%s %s" % (indent, name, args)]
    return lines, True


def apply(module, p):
    result = {"changed": False, "files": [], "changed_settings": [], "failed_settings": []}
    new_text, old_text, where = {}, {}, {}

    def current(path):
        if path not in new_text:
            text = read_text(path)
            if text is None and path != p["config_file"]:
                return None
            old_text[path] = text
            new_text[path] = text or ""
        return new_text[path]

    if read_text(p["config_file"]) is None:
        module.fail_json(msg="%s: XRootD configuration file not found" % p["config_file"])
    for name, args in sorted((p["directives"] or {}).items()):
        args = " ".join(str(args).split())
        if not _DIRECTIVE.match(str(name)) or not args:
            record_failure(result, str(name), "not an XRootD directive name, or no value")
            continue
        path = (p["directive_files"] or {}).get(name) or p["config_file"]
        text = current(path)
        found = False
        if text is not None:
            lines, found = set_directive(text.splitlines(), name, args)
            if found:
                new_text[path] = "\n".join(lines) + "\n"
        if not found:
            main = current(p["config_file"])
            lines, found = set_directive(main.splitlines(), name, args)
            if not found:
                lines = main.splitlines() + ["# storadvise (xcache role)", "%s %s" % (name, args)]
            new_text[p["config_file"]] = "\n".join(lines) + "\n"
            path = p["config_file"]
        where.setdefault(path, []).append((name, args))
    changed = [f for f in sorted(new_text) if new_text[f] != (old_text[f] or "")]
    result["files"] = changed
    result["changed"] = bool(changed)
    if module._diff and changed:
        result["diff"] = [{"before_header": f, "after_header": f, "before": old_text[f] or "", "after": new_text[f]} for f in changed]
    if not changed:
        return result
    if not module.check_mode:
        backup = load_backup(p["backup_file"]) or {"role": "xcache", "files": {}}
        for f in changed:
            backup["files"].setdefault(f, old_text[f])
        save_backup(p["backup_file"], backup)
    for f in changed:
        try:
            if not module.check_mode:
                atomic_write(f, new_text[f], mode=0o644)
        except OSError as exc:
            for name, _args in where.get(f, []):
                record_failure(result, "%s (in %s)" % (name, f), "could not write the file: %s" % exc)
            result["files"].remove(f)
            continue
        for name, args in where.get(f, []):
            record_change(result, "%s (in %s)" % (name, f), "(as in the file)", args)
    result["changed"] = bool(result["files"])
    return result


def rollback(module, p):
    result = {"changed": False, "files": [], "rolled_back": False}
    backup = load_backup(p["backup_file"])
    if backup is None:
        result["msg"] = "no backup at %s: nothing to roll back on this host (nothing changed)" % p["backup_file"]
        return result
    result["files"] = [f for f, t in sorted((backup.get("files") or {}).items()) if read_text(f) != t]
    result["changed"] = result["rolled_back"] = True
    if module.check_mode:
        return result
    for f, t in (backup.get("files") or {}).items():
        restore_text(f, t)
    result["backup_kept_as"] = retire_backup(p["backup_file"])
    return result


def main():
    run_backed_module(
        dict(
            directives=dict(type="dict", default={}),
            config_file=dict(type="path", required=True),
            directive_files=dict(type="dict", default={}),
        ),
        apply, rollback,
    )


if __name__ == "__main__":
    main()
