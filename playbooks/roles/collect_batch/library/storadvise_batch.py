#!/usr/bin/python
# -*- coding: utf-8 -*-
# storadvise batch: the options of the action plugin of the same name
# (roles/collect_batch/action_plugins/storadvise_batch.py), which does the work on the controller.

from __future__ import annotations

DOCUMENTATION = r"""
module: storadvise_batch
short_description: Run this host's storadvise probe batch
description:
  - Runs the shared batch script C(storadvise collect --ansible-vars NAME.yml) wrote (C(NAME.batch.sh))
    with C(--host <inventory_hostname>); the script picks the host's batch. Needs a POSIX sh on the
    host and no Python. An action plugin: this file declares its options.
  - When the quoted script fits in one command-line argument (Linux takes 128 KiB) it is sent in the
    command, as C(ansible.builtin.raw) sends one (one round trip, nothing written to the host); a
    longer one is copied into the remote temporary directory and removed, as C(ansible.builtin.script) does.
  - With I(save_dir), the result (C(rc), C(stdout), C(stderr), or C(unreachable) and C(msg)) is written on
    the controller as C(<save_dir>/<inventory_hostname>.json), and the task returns it without C(stdout):
    a host's framed output (tens of KB) then never travels through Ansible's results, callbacks and host
    variables. Without it, C(stdout) is returned (never C(stdout_lines)).
options:
  script:
    description: The shared script on the controller.
    type: path
    required: true
  save_dir:
    description: Where to save the result on the controller (collect.yml passes the capture directory's C(.ansible)).
    type: path
  ssh_kex:
    description:
      - With the C(ssh) connection plugin, an C(-o KexAlgorithms=) value added after the ssh extra arguments the
        connection already has (from the inventory, C(ANSIBLE_SSH_EXTRA_ARGS) or C(ansible.cfg)), so an explicit
        C(KexAlgorithms) of the site's still wins. Empty, or another connection plugin, adds nothing.
    type: str
    default: ""
author: storadvise
"""

RETURN = r"""
transfer:
  description: How the script reached the host, C(command line) or C(copied).
  type: str
  returned: when the host answered
saved:
  description: The file the result was saved as (with I(save_dir)).
  type: str
  returned: with save_dir
"""

from ansible.module_utils.basic import AnsibleModule


def main():
    """The options only (ansible-doc, ansible-lint's argument check): the work is the action plugin's."""
    module = AnsibleModule(argument_spec=dict(script=dict(type="path", required=True), save_dir=dict(type="path"),
                                              ssh_kex=dict(type="str", default="")),
                           supports_check_mode=True)
    module.fail_json(msg="storadvise_batch runs on the controller as the collection's action plugin; "
                         "this module file only declares its options")


if __name__ == "__main__":
    main()
