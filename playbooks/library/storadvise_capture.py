#!/usr/bin/python
# -*- coding: utf-8 -*-
# storadvise capture: the collect playbook's hosts' batch outputs, written as a capture directory.

from __future__ import annotations

DOCUMENTATION = r"""
module: storadvise_capture
short_description: Write the storadvise capture directory from the probe batches Ansible ran
description:
  - Decodes each host's framed batch output (the registered result of the C(script) task of
    C(collect.yml)) and writes the capture directory C(storadvise scan --from) reads: a manifest,
    one index per host and every distinct text once under C(objects/).
  - Runs where the capture is written (the controller, or an AWX execution environment); needs only
    the Python standard library and this collection's module_utils, not storadvise.
  - A host with no result, an unreachable one, or one whose shell never ran the batch is recorded in
    the manifest as unreachable with the reason.
options:
  dest:
    description: The capture directory (created; must be empty or hold only an earlier capture's files).
    type: path
    required: true
  batches_file:
    description:
      - The batches file C(storadvise collect --ansible-vars NAME.yml) wrote beside the vars file
        (C(NAME.batches.json)): the site, the batch token and each batch's commands.
    type: path
    required: true
  results:
    description: Host name -> the registered result of its batch task (missing or null when it ran none).
    type: dict
    required: true
author: storadvise
"""

RETURN = r"""
hosts:
  description: Host name -> {reachable, errors}, as the manifest records them.
  type: dict
  returned: always
unreachable:
  description: The hosts whose batch did not run.
  type: list
  returned: always
"""

import datetime
import json

from ansible.module_utils.basic import AnsibleModule

try:
    from ansible.module_utils.storadvise_batch_frames import MAX_OUTPUT_BYTES, decode_saved
    from ansible.module_utils.storadvise_capture_layout import CaptureLayoutError, write_batch_capture
except ImportError:  # run from the installed collection
    from ansible_collections.storadvise.tuning.plugins.module_utils.storadvise_batch_frames import (
        MAX_OUTPUT_BYTES, decode_saved)
    from ansible_collections.storadvise.tuning.plugins.module_utils.storadvise_capture_layout import (
        CaptureLayoutError, write_batch_capture)

VARS_FORMAT = 2


def main():
    module = AnsibleModule(argument_spec=dict(
        dest=dict(type="path", required=True),
        batches_file=dict(type="path", required=True),
        results=dict(type="dict", required=True),
    ), supports_check_mode=False)
    results = module.params["results"]
    # the result echoes the arguments without the hosts' outputs (megabytes, already in the capture)
    invocation = {"module_args": {"dest": module.params["dest"], "batches_file": module.params["batches_file"],
                                  "results": "<the batch outputs of %d hosts>" % len(results)}}
    try:
        with open(module.params["batches_file"], encoding="utf-8") as f:
            collect = json.load(f)
    except (OSError, ValueError) as e:
        module.fail_json(msg="%s: unreadable: %s" % (module.params["batches_file"], e), invocation=invocation)
    if not isinstance(collect, dict) or collect.get("format") != VARS_FORMAT or not isinstance(collect.get("hosts"), dict):
        module.fail_json(msg="%s: not a format %d storadvise batches file; write it again with "
                             "storadvise collect --ansible-vars" % (module.params["batches_file"], VARS_FORMAT),
                         invocation=invocation)
    try:
        decoded = {}
        for name, spec in collect["hosts"].items():
            decoded[name] = decode_saved(results.get(name), str(collect["token"]), collect["batches"][int(spec["batch"])],
                                         name, int(collect.get("max_output_bytes", MAX_OUTPUT_BYTES)))
        collected_at = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
        hosts = write_batch_capture(module.params["dest"], collect, decoded, collected_at)
    except (CaptureLayoutError, KeyError, IndexError, TypeError, ValueError) as e:
        module.fail_json(msg="collect vars or results unusable: %s" % e, invocation=invocation)
    except OSError as e:
        module.fail_json(msg="cannot write the capture in %s: %s" % (module.params["dest"], e), invocation=invocation)
    module.exit_json(changed=True, hosts=hosts, unreachable=sorted(n for n, h in hosts.items() if not h["reachable"]),
                     invocation=invocation)


if __name__ == "__main__":
    main()
