"""The storage ports whose production connections a scan samples (``network.flows``): the site
file's ``flow_ports`` (else the probe's defaults), with the ports of the site's storage kinds
(advisor/storage_kinds.py ``flow_ports``)."""

from __future__ import annotations

from advisor.site.model import Site
from advisor.storage_kinds import get_storage_kind
from probes.flows import DEFAULT_FLOW_PORTS


def site_flow_ports(site: Site) -> list[str]:
    """``["1094", "1191", "20000-25000", ...]``, each once, in order: the site's (or the defaults),
    then each storage kind's (those of ``storage_systems``, else ``storage_kind``)."""
    ports = list(site.flow_ports) if site.flow_ports else list(DEFAULT_FLOW_PORTS)
    for name in site.storage_systems or [site.storage_kind]:
        kind = get_storage_kind(name)
        if kind is not None:
            ports += kind.flow_ports
    return list(dict.fromkeys(ports))
