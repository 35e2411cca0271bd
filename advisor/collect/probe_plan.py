"""What runs where: the one answer to "which probes run on this host, and with which privilege".

The collector, ``scan --dry-run``, ``collect --ansible-vars``, the probe helper and the sudoers
snippet all ask :func:`probe_plan`; none of them chooses probes itself. A host's probes are those
its roles select (``Probe.roles``) among those the site's ``storage_systems`` let run
(advisor.storage_kinds.storage_gate); ``--probes``/``--skip-probes`` then leave some out, which
are recorded as left out, never run. A probe's privilege follows from whether it needs root, the
host's ``sudo`` setting, its ``probe_helper`` variable and, where it is known before any host is
contacted, the login user (:func:`login_is_root`):

=========  ===============================================================================
user       run as the login user, no sudo
root       needs root and the login is root: run as it is, no sudo
sudo       through ``sudo -n`` (the login is not root, or not known before the connection:
           the batch wrapper then uses sudo only when ``id -u`` is not 0)
helper     through the installed probe helper, ``sudo -n -- HELPER NAME`` (docs/privileges.md)
=========  ===============================================================================
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from advisor.site.probe_helper_path import helper_path
from advisor.storage_kinds import storage_gate
from probes import all_probes
from probes.probe import Probe

if TYPE_CHECKING:  # pragma: no cover
    from advisor.site.model import Host, Site


class Privilege(str, Enum):
    user = "user"
    root = "root"
    sudo = "sudo"
    helper = "helper"


@dataclass(frozen=True)
class PlannedProbe:
    probe: Probe
    #: False: left out by --probes/--skip-probes (recorded as not run, never sent to the host)
    selected: bool
    privilege: Privilege

    @property
    def name(self) -> str:
        return self.probe.name


def probes_for(host: "Host", selected: list[str] | frozenset[str] | None = None,
               storage_systems: list[str] | tuple[str, ...] | None = None) -> list[Probe]:
    """The probes a host runs, in registry order: those its roles select, among those
    ``storage_systems`` (a site's) let run, among ``selected`` when given."""
    gate = storage_gate(storage_systems)
    chosen = None if selected is None else set(selected)
    return [p for n, p in all_probes().items()
            if (chosen is None or n in chosen) and p.applies_to(host.role_names) and gate.probe_runs(p)]


def login_is_root(site: "Site", host: "Host") -> bool | None:
    """Whether the scan's commands on ``host`` run as root before any sudo: the local host's own
    user, or the site file's login user; None when only the connection will tell (no user in the
    site file: ``~/.ssh/config`` or the local user name decide)."""
    if site.transport == "local":
        return os.geteuid() == 0
    if host.user:
        return host.user == "root"
    return None


def privilege(site: "Site", host: "Host", probe: Probe) -> Privilege:
    """How ``probe`` runs on ``host`` (the rule of advisor.transport.base.sudo_flag, applied before
    the connection)."""
    if probe.needs_root and helper_path({**site.vars, **host.vars}):
        return Privilege.helper
    wrapped = host.sudo is True or (host.sudo is None and probe.needs_root)
    if not wrapped:
        return Privilege.user
    return Privilege.root if login_is_root(site, host) else Privilege.sudo


def probe_plan(site: "Site", host: "Host", selected: frozenset[str] | list[str] | None = None) -> list[PlannedProbe]:
    """Every probe that applies to ``host`` on ``site``, each marked selected or left out by
    ``selected`` (None: all run), with its privilege."""
    chosen = None if selected is None else set(selected)
    return [PlannedProbe(p, chosen is None or p.name in chosen, privilege(site, host, p))
            for p in probes_for(host, None, site.storage_systems)]


def probes_run(site: "Site", host: "Host", selected: frozenset[str] | list[str] | None = None) -> list[Probe]:
    """The probes the scan sends to ``host``."""
    return [pp.probe for pp in probe_plan(site, host, selected) if pp.selected]


def root_probes(site: "Site", host: "Host", plan: list[PlannedProbe] | None = None) -> list[Probe]:
    """The probes of a whole scan of ``host`` that need root (whatever ``--probes`` selects), in name
    order: what its probe helper holds. ``plan``: the host's :func:`probe_plan`, when at hand."""
    plan = probe_plan(site, host) if plan is None else plan
    return sorted((pp.probe for pp in plan if pp.probe.needs_root), key=lambda p: p.name)


def site_root_probes(site: "Site", hosts: list["Host"] | None = None) -> list[Probe]:
    """The root probes of any of ``hosts`` (default: every host of the site), in name order: what
    the sudoers snippet allows."""
    found = {p.name: p for h in (site.hosts if hosts is None else hosts) for p in root_probes(site, h)}
    return [found[n] for n in sorted(found)]
