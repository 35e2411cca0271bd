"""Sysctl facts for planner tests: a healthy host's values, one sysctl's runtime and persisted state."""

from __future__ import annotations

import datetime as dt

from advisor.model.facts import HostFacts, ProbeResult, ProbeStatus

TODAY = dt.date(2026, 11, 23)


def sysctl(runtime, persisted=None, writable=True, absent=False):
    ints = [int(x) for x in str(runtime).split()] if runtime is not None and str(runtime).replace(" ", "").isdigit() else None
    return {"runtime": runtime, "runtime_ints": ints, "persisted": persisted, "absent": absent, "writable": writable,
            "read_only_reason": None if writable is not False else "read-only /proc/sys entry (mode 444)",
            "persisted_file": "/etc/sysctl.d/60-old.conf" if persisted is not None else None}


def healthy() -> dict:
    return {
        "net.ipv4.tcp_sack": sysctl("1"), "net.ipv4.tcp_timestamps": sysctl("1"),
        "net.ipv4.tcp_window_scaling": sysctl("1"),
        "net.ipv4.tcp_rmem": sysctl("4096 87380 33554432"), "net.ipv4.tcp_wmem": sysctl("4096 65536 33554432"),
        "net.core.rmem_max": sysctl("67108864"), "net.core.wmem_max": sysctl("67108864"),
        "net.core.default_qdisc": sysctl("fq"), "net.ipv4.tcp_congestion_control": sysctl("cubic"),
        "net.ipv4.tcp_no_metrics_save": sysctl("1"), "net.ipv4.tcp_mtu_probing": sysctl("0"),
    }


def host(name, sysctls, roles=("storage",)) -> HostFacts:
    return HostFacts(name=name, roles=list(roles), probes={
        "network.sysctl": ProbeResult(probe="network.sysctl", status=ProbeStatus.ok, facts={"sysctls": sysctls})})
