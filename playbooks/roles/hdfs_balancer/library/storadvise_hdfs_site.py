#!/usr/bin/python
# -*- coding: utf-8 -*-
# storadvise hdfs_balancer: set balancer properties in hdfs-site.xml.

from __future__ import annotations

DOCUMENTATION = r"""
module: storadvise_hdfs_site
short_description: Set HDFS balancer properties in hdfs-site.xml
description:
  - Sets each property's C(<value>) in the file (the last C(<property>) of that name is rewritten, else one is
    added before C(</configuration>)), keeps every other line, checks the result is still XML and reads it back.
  - Keeps the file as it was before the first change in a JSON backup; C(state=rollback) puts it back.
  - The balancer reads the file when it starts, DataNodes (dfs.datanode.*) when they start; C(remount_command)
    (empty by default) is run after a change, for example to restart a balancer service.
options:
  options:
    description: Property name to value.
    type: dict
    default: {}
  path:
    description: The hdfs-site.xml file.
    type: path
    default: /etc/hadoop/conf/hdfs-site.xml
  remount_command:
    description: Shell command run after a change; empty = none.
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
- name: Fewer concurrent balancer moves per DataNode
  storadvise_hdfs_site:
    options: {dfs.datanode.balance.max.concurrent.moves: "50"}
    backup_file: /var/lib/storadvise/backup/hdfs_balancer.json
"""

RETURN = r"""
set:
  description: The name=value pairs written (or, in check mode, that would be).
  type: list
  returned: always
"""

try:  # a project's module_utils (a plan directory's ansible.cfg), else the installed collection's
    from ansible.module_utils.storadvise_conf_lines import file_module
    from ansible.module_utils.storadvise_hadoop_xml import read_property, refusal, set_property
except ImportError:
    from ansible_collections.storadvise.tuning.plugins.module_utils.storadvise_conf_lines import file_module
    from ansible_collections.storadvise.tuning.plugins.module_utils.storadvise_hadoop_xml import (
        read_property, refusal, set_property)


def main():
    file_module("hdfs_balancer", "/etc/hadoop/conf/hdfs-site.xml", "HDFS configuration",
                read=read_property, write=set_property, refuse=refusal)


if __name__ == "__main__":
    main()
