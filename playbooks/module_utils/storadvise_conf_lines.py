# -*- coding: utf-8 -*-
# storadvise: line edits of 'key = value' configuration files (ceph.conf, beegfs-client.conf).
# Licensed as storadvise itself.
"""Read and set one option of a ``key = value`` file, optionally inside an INI ``[section]``.

Every other line (comments, blank lines, other sections, the spelling of other keys) is kept as
it is. ``canon`` turns a key into the form two spellings are compared in (ceph.conf: ``client oc``
== ``client_oc``); ``comments`` are the characters that start a comment.
"""

from __future__ import annotations

import re

_SECTION = re.compile(r"^\s*\[([^\]]+)\]\s*$")
_KEY = re.compile(r"^(\s*)([A-Za-z][A-Za-z0-9_ .-]*?)\s*=(.*)$")


def _bounds(lines, section):
    """(start, end) line indexes of the section's body; (None, None) when there is no such section.
    Without a section: the whole file."""
    if section is None:
        return 0, len(lines)
    start = None
    for i, ln in enumerate(lines):
        m = _SECTION.match(ln)
        if m and start is None and m.group(1).strip() == section:
            start = i + 1
        elif m and start is not None:
            return start, i
    return (start, len(lines)) if start is not None else (None, None)


def _value(raw, comments):
    out, quoted = [], False
    for ch in raw:
        if ch == '"':
            quoted = not quoted
        if ch in comments and not quoted:
            break
        out.append(ch)
    return "".join(out).strip()


def _find(lines, lo, hi, key, canon):
    hit = None
    for i in range(lo, hi):
        m = _KEY.match(lines[i])
        if m and not lines[i].lstrip().startswith(("#", ";")) and canon(m.group(2)) == canon(key):
            hit = i
    return hit


def read_option(text, section, key, canon=lambda k: k, comments="#"):
    """The option's value (the last line that sets it), or None when it is not set."""
    lines = text.splitlines()
    lo, hi = _bounds(lines, section)
    if lo is None:
        return None
    i = _find(lines, lo, hi, key, canon)
    return None if i is None else _value(_KEY.match(lines[i]).group(3), comments)


def set_option(text, section, key, value, canon=lambda k: k):
    """``text`` with the option set: its last line's value rewritten (indentation, spelling of the key
    and padding kept), else a line added after the section's last option (the section added at the end when
    missing)."""
    lines = text.splitlines()
    lo, hi = _bounds(lines, section)
    if lo is None:
        tail = [""] if lines and lines[-1].strip() else []
        lines += tail + ["[%s]" % section, "\t%s = %s" % (key, value)]
        return "\n".join(lines) + "\n"
    i = _find(lines, lo, hi, key, canon)
    if i is not None:
        # the key, its padding and the blank after '=' are kept: only the value (and a comment after it) changes
        m = re.match(r"^(\s*[^=]*?\s*=[ \t]*)", lines[i])
        lines[i] = "%s%s" % (m.group(1), value)
        return "\n".join(lines) + "\n"
    last = lo - 1
    indent = "\t" if section is not None else ""
    for j in range(lo, hi):
        m = _KEY.match(lines[j])
        if m and not lines[j].lstrip().startswith(("#", ";")):
            last, indent = j, m.group(1)
    lines.insert(last + 1, "%s%s = %s" % (indent, key, value))
    return "\n".join(lines) + "\n"


def refusal(key, value):
    """Why ``key = value`` cannot be written as one line, or None."""
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", str(key)):
        return "%r is not an option name" % (key,)
    v = str(value)
    if any(c in v for c in "\n\r#;[]=") or v != v.strip():
        return "value %r would not read back as one value" % (value,)
    return None


def conf_module(role, default_path, section, canon, comments, what):
    """The ``main()`` of a role module that sets options of one ``key = value`` file (see file_module)."""
    file_module(role, default_path, what,
                read=lambda text, k: read_option(text, section, k, canon, comments),
                write=lambda text, k, v: set_option(text, section, k, v, canon),
                refuse=refusal)


def file_module(role, default_path, what, read, write, refuse):
    """The ``main()`` of a role module that sets values in one file: ``options`` {key: value},
    ``path``, ``remount_command`` (run after a change when given; empty: the change waits for the
    next mount or start). ``read(text, key)`` gives a value or None, ``write(text, key, value)`` the new
    text, ``refuse(key, value)`` why a pair cannot be written (or None). The whole file as it was before
    the first change is the backup; rollback puts it back."""
    import subprocess

    try:  # a project's module_utils (a plan directory's ansible.cfg), else the installed collection's
        from ansible.module_utils.storadvise_state import (atomic_write, load_backup, read_text, record_change,
                                                           record_failure, restore_text, retire_backup,
                                                           run_backed_module, save_backup)
    except ImportError:
        from ansible_collections.storadvise.tuning.plugins.module_utils.storadvise_state import (
            atomic_write, load_backup, read_text, record_change, record_failure, restore_text, retire_backup,
            run_backed_module, save_backup)

    def remount(module, p, result):
        cmd = p["remount_command"]
        if not cmd or module.check_mode:
            return
        rc, out, err = module.run_command(cmd, use_unsafe_shell=True)
        result["remounted"] = rc == 0
        if rc != 0:
            record_failure(result, "remount", "%s exited %s: %s" % (cmd, rc, (err or out or "").strip()[-300:]))

    def apply(module, p):
        result = {"changed": False, "set": [], "changed_settings": [], "failed_settings": [], "path": p["path"]}
        text = read_text(p["path"])
        if text is None:
            raise ValueError("%s: no such file (no %s here)" % (p["path"], what))
        new, changes = text, {}
        # Ansible's templating turns 'true' into a boolean: write it back as the file spells booleans
        opts = {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in (p["options"] or {}).items()}
        for k, v in sorted(opts.items()):
            why = refuse(k, v)
            if why:
                record_failure(result, "%s=%s" % (k, v), why)
                continue
            cur = read(new, k)
            if cur != v:
                changes[k] = cur
                new = write(new, k, v)
        result["set"] = ["%s=%s" % (k, opts[k]) for k in sorted(changes)]
        result["changed"] = bool(changes)
        if module._diff and changes:
            result["diff"] = {"before_header": p["path"], "after_header": p["path"], "before": text, "after": new}
        if not changes:
            return result
        if not module.check_mode:
            backup = load_backup(p["backup_file"]) or {"role": role, "files": {}}
            backup["files"].setdefault(p["path"], text)
            save_backup(p["backup_file"], backup)
            atomic_write(p["path"], new)
        back = read_text(p["path"]) if not module.check_mode else new
        for k, old in sorted(changes.items()):
            now = read(back, k)
            if now != opts[k]:
                record_failure(result, k, "%s reads back %s = %r" % (p["path"], k, now))
            else:
                record_change(result, k, old, now)
        remount(module, p, result)
        return result

    def rollback(module, p):
        result = {"changed": False, "set": [], "rolled_back": False, "changed_settings": [], "failed_settings": []}
        backup = load_backup(p["backup_file"])
        if backup is None:
            result["msg"] = "no backup at %s: nothing to roll back on this host (nothing changed)" % p["backup_file"]
            return result
        for path, old in sorted((backup.get("files") or {}).items()):
            if read_text(path) != old:
                result["changed"] = True
                if not module.check_mode:
                    restore_text(path, old)
                record_change(result, path, "storadvise's edit", "the file as it was before")
        result["rolled_back"] = True
        if not module.check_mode:
            result["backup_kept_as"] = retire_backup(p["backup_file"])
            if result["changed"]:
                remount(module, p, result)
        return result

    run_backed_module(
        dict(options=dict(type="dict", default={}), path=dict(type="path", default=default_path),
             remount_command=dict(type="str", default="")),
        apply, rollback)
