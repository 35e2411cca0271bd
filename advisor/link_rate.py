"""The rate a host's storage link is expected to carry, for rules that size against it."""

from __future__ import annotations

from advisor.facts import HostFacts


def host_link_rate_bps(host: HostFacts, site_rates: dict[str, int], nic_facts: dict | None) -> int | None:
    """The site file's ``link_rate`` for the host, else the fastest up, non-loopback NIC's speed."""
    if site_rates.get(host.name):
        return site_rates[host.name]
    if not nic_facts:
        return None
    speeds = [
        (i.get("speed_mbps") or 0) * 10**6
        for i in (nic_facts.get("interfaces") or {}).values()
        if not i.get("is_loopback") and str(i.get("operstate", "")).lower() in ("up", "unknown")
    ]
    speeds = [s for s in speeds if s > 0]
    return max(speeds) if speeds else None


def site_link_rates(site) -> dict[str, int]:
    if site is None:
        return {}
    return {h.name: h.link_rate for h in site.hosts if h.link_rate}
