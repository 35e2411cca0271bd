#!/usr/bin/python
# -*- coding: utf-8 -*-
# storadvise ceph_client: set CephFS FUSE client options in the [client] section of ceph.conf.

from __future__ import annotations

DOCUMENTATION = r"""
module: storadvise_ceph_conf
short_description: Set CephFS FUSE client options in the [client] section of /etc/ceph/ceph.conf
description:
  - Sets each option in the file's [client] section (the line that sets it is rewritten, else one is added;
    C(client oc) and C(client_oc) are the same option), keeps every other line, reads the file back.
  - Keeps the file as it was before the first change in a JSON backup; C(state=rollback) puts it back.
  - ceph-fuse reads the file when it mounts; C(remount_command) (empty by default) is run after a change.
options:
  options:
    description: Option name (underscores) to value.
    type: dict
    default: {}
  path:
    description: The Ceph configuration file.
    type: path
    default: /etc/ceph/ceph.conf
  remount_command:
    description: Shell command run after a change (for example remounting ceph-fuse); empty = none.
    type: str
    default: ""
  backup_file:
    description: JSON file recording the file before the change.
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
- name: Object cache on for ceph-fuse
  storadvise_ceph_conf:
    options: {client_oc: "true"}
    backup_file: /var/lib/storadvise/backup/ceph_client.json
"""

RETURN = r"""
set:
  description: The option=value pairs written (or, in check mode, that would be).
  type: list
  returned: always
"""

import re

try:  # a project's module_utils (a plan directory's ansible.cfg), else the installed collection's
    from ansible.module_utils.storadvise_conf_lines import conf_module
except ImportError:
    from ansible_collections.storadvise.tuning.plugins.module_utils.storadvise_conf_lines import conf_module


def main():
    conf_module("ceph_client", "/etc/ceph/ceph.conf", "client", lambda k: re.sub(r"[ _-]+", "_", k.strip()).lower(),
                "#;", "Ceph client configuration")


if __name__ == "__main__":
    main()
