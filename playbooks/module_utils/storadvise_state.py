# -*- coding: utf-8 -*-
# storadvise: shared helpers of the storadvise roles' modules (backups, atomic writes).
# Licensed as storadvise itself.
"""Backups of replaced values, atomic file writes and per-setting outcomes, for the storadvise role modules.

Every module reports, besides Ansible's ``changed``, two lists that the ``apply_summary`` role
gathers into the play's summary: ``changed_settings`` (``{setting, old, new}``: what changed, or in
check mode would) and ``failed_settings`` (``{setting, why}``). One setting that cannot be applied
(a read-only kernel parameter, an mmchconfig that fails, a refused value) is recorded there and the
module goes on with the others; the task itself does not fail for it.

A backup is a JSON file per role on the managed host (``<backup_dir>/<role>.json``). It is
written BEFORE a value is changed and only ever gains entries: a value already recorded is the
value the host had before storadvise first touched it, so an interrupted run followed by a
re-run still rolls back to the original. Rollback restores the recorded values and then renames
the backup to ``<role>.json.restored-<UTC time>`` (kept for audit); a second rollback finds no
backup and changes nothing.
"""

from __future__ import annotations

import json
import os
import tempfile
import time


def record_change(result, setting, old, new):
    result.setdefault("changed_settings", []).append({"setting": setting, "old": old, "new": new})


def record_failure(result, setting, why):
    result.setdefault("failed_settings", []).append({"setting": setting, "why": why})


def load_backup(path):
    """The backup mapping, or None when there is none."""
    try:
        with open(path) as f:
            data = json.load(f)
    except FileNotFoundError:
        return None
    except ValueError as exc:
        raise ValueError("%s: backup is not JSON (%s); refusing to touch it" % (path, exc))
    if not isinstance(data, dict):
        raise ValueError("%s: backup is not a JSON object; refusing to touch it" % path)
    return data


def save_backup(path, data):
    d = os.path.dirname(path)
    if d and not os.path.isdir(d):
        os.makedirs(d, mode=0o700)
    data = dict(data)
    data.setdefault("created_at", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    data["updated_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    atomic_write(path, json.dumps(data, indent=2, sort_keys=True) + "\n", mode=0o600)


def retire_backup(path):
    """After a successful rollback: keep the backup for audit under another name."""
    target = "%s.restored-%s" % (path, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    os.rename(path, target)
    return target


def atomic_write(path, text, mode=None):
    """Write ``text`` to ``path`` through a temporary file in the same directory and a rename,
    keeping an existing file's mode and owner: a reader (or an interruption) sees the old or
    the new content, never half of it. A symlink is followed (its target is rewritten)."""
    path = os.path.realpath(path)
    d = os.path.dirname(path) or "."
    st = None
    try:
        st = os.stat(path)
    except FileNotFoundError:
        pass
    fd, tmp = tempfile.mkstemp(prefix=".storadvise-", dir=d)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if st is not None:
            os.chmod(tmp, st.st_mode & 0o7777)
            try:
                os.chown(tmp, st.st_uid, st.st_gid)
            except PermissionError:
                pass
        else:
            os.chmod(tmp, mode if mode is not None else 0o644)
        os.rename(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def read_text(path):
    """File content, or None when the file does not exist."""
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return None


def restore_text(path, text):
    """Put back a file's recorded content (None = the file did not exist: remove it)."""
    if text is None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
    else:
        atomic_write(path, text)


def run_backed_module(options, apply, rollback, apply_state="present", check=None, diff_only_when_asked=False):
    """The ``main()`` every storadvise role module shares.

    ``options`` is the module's own argument spec; ``backup_file`` and ``state``
    (``apply_state`` or ``rollback``) are added here. ``apply``/``rollback`` take
    ``(module, params)`` and return the result dict; ``check(module, params)`` runs first.
    An OSError or ValueError becomes a one-line ``fail_json``.
    """
    from ansible.module_utils.basic import AnsibleModule

    spec = dict(options)
    spec["backup_file"] = dict(type="path", required=True)
    spec["state"] = dict(type="str", choices=[apply_state, "rollback"], default=apply_state)
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    params = module.params
    try:
        if check is not None:
            check(module, params)
        result = rollback(module, params) if params["state"] == "rollback" else apply(module, params)
    except (OSError, ValueError) as exc:
        module.fail_json(msg="%s" % exc)
    if diff_only_when_asked and not module._diff:
        result.pop("diff", None)
    result.setdefault("changed_settings", [])
    result.setdefault("failed_settings", [])
    module.exit_json(**result)
