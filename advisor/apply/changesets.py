"""Identical change sets written once: the plan's variables split into inventory groups
(``storadvise_changeset_<n>``, with ``group_vars/<group>.yml``) and what differs per host
(``host_vars/<host>.yml``).

A variable with the same value on two or more hosts is shareable; hosts holding the same set of
shareable variables form one change set, whose group_vars hold them. What is left of a host's
variables (values no other host has, e.g. the one host that runs a cluster-wide command) stays in
its host_vars, and so does everything of a host that shares its change set with no other host.

Ansible gives inventory host variables precedence over group_vars (Ansible docs, "Understanding
variable precedence"), where host_vars/ files come after both. A plan variable whose name the
host's inventory entry also sets (site vars, connection settings) is therefore also written to that
host's host_vars, so every host resolves every variable to the plan's value, as when every variable
was in host_vars.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

GROUP_PREFIX = "storadvise_changeset_"


@dataclass
class ChangeSet:
    #: inventory group name (storadvise_changeset_<n>)
    name: str
    hosts: list[str]
    #: the variables every member gets from group_vars/<name>.yml
    vars: dict[str, Any] = field(default_factory=dict)


@dataclass
class VarsLayout:
    changesets: list[ChangeSet]
    #: host -> the variables only it has (host_vars/<host>.yml); hosts with none are absent
    host_vars: dict[str, dict[str, Any]]


def _canon(value: Any) -> bytes:
    return msgspec.json.encode(value, order="sorted", enc_hook=str)


def split_vars(plan_vars: Mapping[str, Mapping[str, Any]],
               inventory_names: Mapping[str, set[str]] | None = None) -> VarsLayout:
    """``plan_vars``: host -> its flat role variables. ``inventory_names``: host -> the variable
    names its inventory entry sets (never shared through a group)."""
    inventory_names = inventory_names or {}
    canon: dict[str, dict[str, bytes]] = {}
    holders: dict[tuple[str, bytes], int] = {}
    for host, variables in plan_vars.items():
        canon[host] = {k: _canon(v) for k, v in variables.items()}
        for pair in canon[host].items():
            holders[pair] = holders.get(pair, 0) + 1
    by_signature: dict[frozenset, list[str]] = {}
    for host in sorted(plan_vars):
        shared = frozenset(p for p in canon[host].items() if holders[p] > 1)
        by_signature.setdefault(shared, []).append(host)
    groups = sorted(((sig, hosts) for sig, hosts in by_signature.items() if sig and len(hosts) > 1),
                    key=lambda g: (-len(g[1]), g[1][0]))
    changesets: list[ChangeSet] = []
    in_group: dict[str, frozenset] = {}
    for n, (sig, hosts) in enumerate(groups, 1):
        names = {k for k, _ in sig}
        first = plan_vars[hosts[0]]
        changesets.append(ChangeSet(name=f"{GROUP_PREFIX}{n}", hosts=hosts,
                                    vars={k: v for k, v in first.items() if k in names}))
        for h in hosts:
            in_group[h] = frozenset(names)
    host_vars: dict[str, dict[str, Any]] = {}
    for host, variables in plan_vars.items():
        grouped = in_group.get(host, frozenset()) - inventory_names.get(host, set())
        rest = {k: v for k, v in variables.items() if k not in grouped}
        if rest:
            host_vars[host] = rest
    return VarsLayout(changesets=changesets, host_vars=host_vars)
