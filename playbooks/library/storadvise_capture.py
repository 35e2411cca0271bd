#!/usr/bin/python
# -*- coding: utf-8 -*-
# storadvise capture: the collect playbook's hosts' batch outputs, written as a capture directory
# (by the action plugin of the same name, action_plugins/storadvise_capture.py; this file declares its options).

from __future__ import annotations

DOCUMENTATION = r"""
module: storadvise_capture
short_description: Write the storadvise capture directory from the probe batches Ansible ran
description:
  - Decodes each host's framed batch output (the registered result of the C(script) task of
    C(collect.yml)) and writes the capture directory C(storadvise scan --from) reads: a manifest,
    one index per host and every distinct text once under C(objects/).
  - Runs where the capture is written (the controller, or an AWX execution environment), as an action
    plugin (no module process); needs only the Python standard library and this collection's
    module_utils, not storadvise.
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
    description:
      - Host name -> the registered result of its batch task (missing or null when it ran none). A host not
        named here is looked up in I(saved_dir).
    type: dict
    default: {}
  saved_dir:
    description:
      - Where the C(storadvise_batch) action saved each host's result as C(<host>.json) (collect.yml: the
        capture directory's C(.ansible)); removed once the capture is written when it is C(dest/.ansible).
    type: path
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

from ansible.module_utils.basic import AnsibleModule


def main():
    """The options only (ansible-doc, ansible-lint's argument check): the work is the action plugin's
    (action_plugins/storadvise_capture.py), on the controller, with no module process."""
    module = AnsibleModule(argument_spec=dict(
        dest=dict(type="path", required=True),
        batches_file=dict(type="path", required=True),
        results=dict(type="dict", default={}),
        saved_dir=dict(type="path"),
    ), supports_check_mode=False)
    module.fail_json(msg="storadvise_capture runs on the controller as the collection's action plugin; "
                         "this module file only declares its options")


if __name__ == "__main__":
    main()
