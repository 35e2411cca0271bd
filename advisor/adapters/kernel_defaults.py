"""The boot value of a kernel setting that no file sets: the kernel's default, with its source.

Only keys whose default is a fixed value are listed. A default the kernel computes at boot (the
maximum of ``net.ipv4.tcp_rmem``/``tcp_wmem``: "between 131072 and 32MB, depending on RAM size",
the congestion control chosen at build time) is not: its boot value stays unknown, unless the host
says it (a lab host's recorded namespace values, ``network.sysctl`` facts ``boot_defaults``).
"""

from __future__ import annotations

IP_SYSCTL = "Linux Documentation/networking/ip-sysctl.rst"
NET_SYSCTL = "Linux Documentation/admin-guide/sysctl/net.rst"

#: key -> (default value, where it is documented)
SYSCTL_DEFAULTS: dict[str, tuple[str, str]] = {
    "net.ipv4.tcp_sack": ("1", IP_SYSCTL + ", tcp_sack"),
    "net.ipv4.tcp_dsack": ("1", IP_SYSCTL + ", tcp_dsack"),
    "net.ipv4.tcp_timestamps": ("1", IP_SYSCTL + ", tcp_timestamps"),
    "net.ipv4.tcp_window_scaling": ("1", IP_SYSCTL + ", tcp_window_scaling"),
    "net.ipv4.tcp_mtu_probing": ("0", IP_SYSCTL + ", tcp_mtu_probing"),
    "net.ipv4.tcp_no_metrics_save": ("0", IP_SYSCTL + ", tcp_no_metrics_save"),
    "net.ipv4.tcp_ecn": ("2", IP_SYSCTL + ", tcp_ecn"),
    "net.core.netdev_max_backlog": ("1000", NET_SYSCTL + ", netdev_max_backlog"),
    "net.core.default_qdisc": ("pfifo_fast", NET_SYSCTL + ", default_qdisc"),
}


def sysctl_default(key: str) -> tuple[str, str] | None:
    """(value, source) of the kernel's documented default of ``key``; None when not fixed."""
    return SYSCTL_DEFAULTS.get(key)
