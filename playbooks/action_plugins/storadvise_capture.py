# -*- coding: utf-8 -*-
# storadvise capture: the collect playbook's hosts' batch outputs, written as a capture directory,
# on the controller by the action itself (no module process). The module file of the same name
# (library/storadvise_capture.py) declares its options.

from __future__ import annotations

import datetime
import importlib.util
import json
import os
import shutil
import sys

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

#: the batches file's format (advisor/collect/ansible.py VARS_FORMAT)
VARS_FORMAT = 2


def _shipped(name):
    """The collection's module_utils ``name`` (dependency free), loaded from the collection's
    module_utils/, beside this file's directory (in a checkout: playbooks/module_utils)."""
    key = "storadvise_action_utils." + name
    if key not in sys.modules:
        path = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "module_utils", name + ".py")
        spec = importlib.util.spec_from_file_location(key, path)
        if spec is None or not os.path.isfile(path):
            raise AnsibleActionFail("the collection's module_utils %s.py is missing (%s)" % (name, path))
        sys.modules[key] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[key])
    return sys.modules[key]


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False  # all of it happens on the controller
    _supports_check_mode = False
    _VALID_ARGS = frozenset(("dest", "batches_file", "results", "saved_dir"))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        args = self._task.args
        dest, batches_file = args.get("dest"), args.get("batches_file")
        if not dest or not batches_file:
            raise AnsibleActionFail("storadvise_capture: 'dest' and 'batches_file' are required")
        dest, batches_file = os.path.expanduser(str(dest)), os.path.expanduser(str(batches_file))
        saved_dir = os.path.expanduser(str(args["saved_dir"])) if args.get("saved_dir") else None
        results = dict(args.get("results") or {})
        frames, layout = _shipped("storadvise_batch_frames"), _shipped("storadvise_capture_layout")
        try:
            with open(batches_file, encoding="utf-8") as f:
                collect = json.load(f)
        except (OSError, ValueError) as e:
            raise AnsibleActionFail("%s: unreadable: %s" % (batches_file, e))
        if not isinstance(collect, dict) or collect.get("format") != VARS_FORMAT or not isinstance(collect.get("hosts"), dict):
            raise AnsibleActionFail("%s: not a format %d storadvise batches file; write it again with "
                                    "storadvise collect --ansible-vars" % (batches_file, VARS_FORMAT))
        try:
            for name in collect["hosts"]:  # each names a file: one rule for that, before anything is read
                layout.host_component(name, "host name in %s" % batches_file)
            if saved_dir:
                results.update(frames.read_saved(saved_dir, collect, [n for n in collect["hosts"] if n not in results]))
            collected_at = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
            hosts = layout.write_batch_capture(dest, collect, frames.decode_collect(collect, results), collected_at)
        except (layout.CaptureLayoutError, KeyError, IndexError, TypeError, ValueError) as e:
            raise AnsibleActionFail("collect vars or results unusable: %s" % e)
        except OSError as e:
            raise AnsibleActionFail("cannot write the capture in %s: %s" % (dest, e))
        if saved_dir and os.path.realpath(saved_dir) == os.path.realpath(os.path.join(dest, frames.SAVED_DIR)):
            shutil.rmtree(saved_dir, ignore_errors=True)  # its outputs are in the capture now
        unreachable = sorted(n for n, h in hosts.items() if not h["reachable"])
        if unreachable:
            result["warnings"] = ["no batch output from %s (their reasons are in the manifest)" % ", ".join(unreachable)]
        result.update(changed=True, hosts=hosts, unreachable=unreachable)
        return result
