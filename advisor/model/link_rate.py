"""The rate a host's storage link is expected to carry, for rules that size against it, and where
that rate came from (the site file, or which NIC)."""

from __future__ import annotations

from typing import NamedTuple

from advisor.model.facts import HostFacts


class LinkRate(NamedTuple):
    bps: int
    #: where the rate came from: "the site file's link_rate", "NIC eth0"
    source: str


def physical_nics(nic_facts: dict | None) -> dict[str, dict]:
    """The host's own NICs: interfaces that are up (or report no state) and not virtual (veth,
    bridge, docker/cni, tun, loopback: probes.network.InterfaceFacts.virtual)."""
    return {name: i for name, i in ((nic_facts or {}).get("interfaces") or {}).items()
            if not i.get("is_loopback") and not i.get("virtual")
            and str(i.get("operstate", "")).lower() in ("up", "unknown")}


def host_link_rate(host: HostFacts, site_rates: dict[str, int], nic_facts: dict | None) -> LinkRate | None:
    """The site file's ``link_rate`` for the host, else the fastest physical NIC's speed (a virtual
    interface never sets it: a veth reports 10000 Mb/s whatever carries it); None when neither is
    known (a virtio NIC reports no speed)."""
    if site_rates.get(host.name):
        return LinkRate(site_rates[host.name], "the site file's link_rate")
    speeds = [((i.get("speed_mbps") or 0) * 10**6, name) for name, i in physical_nics(nic_facts).items()]
    speeds = [(s, n) for s, n in speeds if s > 0]
    if not speeds:
        return None
    bps, name = max(speeds, key=lambda t: (t[0], t[1]))
    return LinkRate(bps, f"NIC {name}")


def host_link_rate_bps(host: HostFacts, site_rates: dict[str, int], nic_facts: dict | None) -> int | None:
    rate = host_link_rate(host, site_rates, nic_facts)
    return rate.bps if rate else None


def site_link_rates(site) -> dict[str, int]:
    if site is None:
        return {}
    return {h.name: h.link_rate for h in site.hosts if h.link_rate}


def address_mtu(nic_facts: dict | None, address: str | None) -> int | None:
    """The MTU of the interface (``network.nic`` facts) that holds ``address`` (the one the site reaches the
    host at); None when no interface holds it."""
    if not address:
        return None
    for i in (nic_facts or {}).get("interfaces", {}).values():
        if any(str(a).split("/")[0] == address for a in i.get("addresses") or []):
            return i.get("mtu") if isinstance(i.get("mtu"), int) else None
    return None
