#!/usr/bin/python
# -*- coding: utf-8 -*-
# storadvise beegfs_client: set BeeGFS client settings in beegfs-client.conf.

from __future__ import annotations

DOCUMENTATION = r"""
module: storadvise_beegfs_conf
short_description: Set BeeGFS client settings in /etc/beegfs/beegfs-client.conf
description:
  - Sets each C(key = value) line (the line that sets the key is rewritten, else one is added after the
    last setting), keeps every other line, reads the file back.
  - Keeps the file as it was before the first change in a JSON backup; C(state=rollback) puts it back.
  - The BeeGFS client reads the file when it mounts; C(remount_command) (empty by default) is run after a change.
options:
  options:
    description: Setting name (as the file spells it) to value.
    type: dict
    default: {}
  path:
    description: The BeeGFS client configuration file.
    type: path
    default: /etc/beegfs/beegfs-client.conf
  remount_command:
    description: Shell command run after a change (for example C(systemctl restart beegfs-client)); empty = none.
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
- name: Buffered client cache
  storadvise_beegfs_conf:
    options: {tuneFileCacheType: buffered}
    backup_file: /var/lib/storadvise/backup/beegfs_client.json
"""

RETURN = r"""
set:
  description: The key=value pairs written (or, in check mode, that would be).
  type: list
  returned: always
"""

try:  # a project's module_utils (a plan directory's ansible.cfg), else the installed collection's
    from ansible.module_utils.storadvise_conf_lines import conf_module
except ImportError:
    from ansible_collections.storadvise.tuning.plugins.module_utils.storadvise_conf_lines import conf_module


def main():
    conf_module("beegfs_client", "/etc/beegfs/beegfs-client.conf", None, lambda k: k.strip(), "#",
                "BeeGFS client configuration")


if __name__ == "__main__":
    main()
