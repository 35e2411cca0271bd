# -*- coding: utf-8 -*-
# storadvise batch: run this host's probe batch (the shared script of `storadvise collect
# --ansible-vars`) and return, or save, its framed output for the storadvise_capture action.
# Its options and what it returns: roles/collect_batch/library/storadvise_batch.py.

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import sys

from ansible.errors import AnsibleActionFail, AnsibleConnectionFailure, AnsibleError
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase


def _shipped(name):
    """The collection's module_utils ``name`` (dependency free), loaded from the collection's
    module_utils/, beside this file's directory (in a checkout: playbooks/module_utils). The same
    loader as storadvise_capture's: a plugin file cannot import another."""
    key = "storadvise_action_utils." + name
    if key not in sys.modules:
        path = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "module_utils", name + ".py")
        spec = importlib.util.spec_from_file_location(key, path)
        if spec is None or not os.path.isfile(path):
            raise AnsibleActionFail("the collection's module_utils %s.py is missing (%s)" % (name, path))
        sys.modules[key] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[key])
    return sys.modules[key]


#: the longest quoted script sent in the command line: one argument of at most 128 KiB (Linux's
#: MAX_ARG_STRLEN) for the controller's ssh and the host's sh -c, less room for the rest
MAX_INLINE = 122880


class ActionModule(ActionBase):
    TRANSFERS_FILES = False  # a temporary directory only for a script too long for the command line
    _supports_check_mode = True  # it only reads: the capture is the same in check mode
    _VALID_ARGS = frozenset(("script", "save_dir", "ssh_kex"))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        path, save_dir = self._task.args.get("script"), self._task.args.get("save_dir")
        if not isinstance(path, str) or not path:
            raise AnsibleActionFail("storadvise_batch: 'script' must name the batch script (NAME.batch.sh)")
        try:
            with open(os.path.expanduser(path), "rb") as f:
                text = f.read().decode("utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise AnsibleActionFail("storadvise_batch: cannot read the batch script %s: %s" % (path, e))
        host = str((task_vars or {}).get("inventory_hostname", ""))
        saved = None
        if save_dir:
            layout = _shipped("storadvise_capture_layout")
            try:
                layout.host_component(host)
            except layout.CaptureLayoutError as e:
                raise AnsibleActionFail("storadvise_batch: %s" % e)
            saved = os.path.join(os.path.expanduser(save_dir), host + ".json")
        self._prefer_kex(self._task.args.get("ssh_kex"))
        try:
            quoted = shlex.quote(text)
            transfer = "command line" if len(quoted) <= MAX_INLINE else "copied"
            if transfer == "command line":
                res = self._low_level_execute_command("sh -c %s storadvise --host %s" % (quoted, shlex.quote(host)),
                                                      executable=False)
            else:
                res = self._run_copied(path, host)
        except AnsibleConnectionFailure as e:
            if saved:  # the capture names the reason, as for a host that answered
                self._save(saved, {"unreachable": True, "msg": to_text(e)})
            raise
        out = {"rc": res.get("rc"), "stdout": res.get("stdout", ""), "stderr": res.get("stderr", ""), "transfer": transfer}
        if res.get("rc") not in (0, None):
            out["msg"] = "non-zero return code"
        if saved:
            self._save(saved, out)
            out = dict(out, stdout="", saved=saved)
        result.update(out, changed=False)
        return result

    def _prefer_kex(self, kex):
        """``-o KexAlgorithms=KEX`` after the ssh extra arguments the connection already resolved
        (inventory, environment, ansible.cfg: Ansible's own precedence), for this task's connection."""
        if not kex:
            return
        try:
            extra = self._connection.get_option("ssh_extra_args")
        except (AnsibleError, KeyError):
            return  # not the ssh connection plugin
        self._connection.set_option("ssh_extra_args", ("%s -o KexAlgorithms=%s" % (extra or "", kex)).strip())

    def _run_copied(self, path, host):
        """The script copied into the remote temporary directory, run, and removed."""
        self._make_tmp_path()
        try:
            remote = self._connection._shell.join_path(self._connection._shell.tmpdir, "storadvise_batch.sh")
            self._transfer_file(os.path.expanduser(path), remote)
            self._fixup_perms2((self._connection._shell.tmpdir, remote))
            return self._low_level_execute_command("sh %s --host %s" % (shlex.quote(remote), shlex.quote(host)),
                                                   executable=False)
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)

    @staticmethod
    def _save(path, data):
        """``data`` as JSON at ``path``, mode 0600 from the first byte, replaced whole (never half written)."""
        try:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            tmp = "%s.%d.tmp" % (path, os.getpid())
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as f:
                json.dump(data, f)
            os.replace(tmp, path)
        except OSError as e:
            raise AnsibleActionFail("storadvise_batch: cannot save the result as %s: %s" % (path, e))
