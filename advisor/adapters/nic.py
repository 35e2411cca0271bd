"""A physical NIC's ring sizes, offloads and MTU: role ``nic_tuning``, variable ``nic_tuning_interfaces``
{interface: {ring_rx, ring_tx, gro, tso, gso, lro, mtu}}. A key is ``<interface>/<setting>``; current
values come from the ``nic.ports`` probe. A ring's target may be ``max``: that NIC's own maximum
(``ethtool -g``'s pre-set maximum), decided per host. The role sets the values now (``ethtool -G``,
``ethtool -K``, ``ip link set mtu``) and persists them where the host keeps its NIC settings
(NetworkManager's connection when it manages the interface, else a udev rule), a file the scan does
not read: the persisted value is unknown (None), as for block queues."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.adapters.base import Adapter, HostProbeFacts
from advisor.model.findings import Change
from probes.legal_values import IFACE_NAME

PROBE = "nic.ports"
RINGS = ("ring_rx", "ring_tx")
OFFLOADS = ("gro", "tso", "gso", "lro")
SETTINGS = RINGS + OFFLOADS + ("mtu",)
#: what a ring target of ``max`` means
MAX = "max"


def split_key(key: str) -> tuple[str, str]:
    iface, _, setting = key.rpartition("/")
    return iface, setting


def _port(facts: HostProbeFacts, iface: str) -> dict:
    return ((facts.get(PROBE) or {}).get("interfaces") or {}).get(iface) or {}


class NicAdapter(Adapter):
    name = "nic"
    role = "nic_tuning"
    play_title = "Set NIC ring sizes and offloads now and where the host persists them (NetworkManager or udev)"
    touches_network = True
    probes = (PROBE,)

    def current(self, facts: HostProbeFacts, key: str) -> tuple[Any, Any]:
        iface, setting = split_key(key)
        port = _port(facts, iface)
        if setting in RINGS:
            return (port.get("ring") or {}).get(setting[5:]), None
        if setting in OFFLOADS:
            return (port.get("offloads") or {}).get(setting), None
        if setting == "mtu":
            return port.get("mtu"), None
        return None, None

    def key_problem(self, key: str) -> str | None:
        iface, setting = split_key(key)
        if setting not in SETTINGS or not IFACE_NAME.fullmatch(iface):
            return f"nic_tuning sets {', '.join(SETTINGS)} of a named interface, not {key[:80]!r}"
        return None

    def normalize_target(self, key: str, target: Any) -> Any:
        _, setting = split_key(key)
        if setting in OFFLOADS:
            t = str(target).strip().lower()
            return {"true": "on", "1": "on", "false": "off", "0": "off"}.get(t, t)
        if setting in RINGS and str(target).strip().lower() == MAX:
            return MAX
        try:
            return int(target)
        except (TypeError, ValueError):
            return target

    def host_target(self, facts: HostProbeFacts, key: str, target: Any) -> Any:
        """A ring's ``max`` is this NIC's maximum; None (no change) when the NIC reports none."""
        iface, setting = split_key(key)
        if setting in RINGS and target == MAX:
            return (_port(facts, iface).get("ring") or {}).get(f"{setting[5:]}_max")
        return target

    def cannot_change(self, facts: HostProbeFacts, change: Change, host_vars: Mapping[str, Any]) -> str | None:
        iface, setting = split_key(change.key)
        port = _port(facts, iface)
        if not port:
            return f"{iface} is not a physical NIC the scan read on this host (nic.ports)"
        target = self.normalize_target(change.key, change.target)
        if setting in RINGS:
            most = (port.get("ring") or {}).get(f"{setting[5:]}_max")
            if not isinstance(target, int) or target < 1:
                return f"{iface} {setting} must be a positive number of descriptors, not {change.target!r}"
            if most is not None and target > most:
                return f"{iface} {setting}: {target} is above the NIC's maximum {most} (ethtool -g)"
        if setting in OFFLOADS:
            if target not in ("on", "off"):
                return f"{iface} {setting} is on or off, not {change.target!r}"
            if setting in (port.get("offloads_fixed") or []):
                return f"the driver of {iface} fixes {setting} (ethtool -k shows it [fixed]): it cannot be changed"
        if setting == "mtu" and (not isinstance(target, int) or not 68 <= target <= 65535):
            return f"{iface} mtu must be 68-65535, not {change.target!r}"
        return None

    def label(self, key: str) -> str:
        iface, setting = split_key(key)
        return f"{iface} {setting.replace('_', ' ')}"

    def role_vars(self, changes: list[Change], facts: HostProbeFacts, host_vars: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, dict[str, Any]] = {}
        for c in changes:
            iface, setting = split_key(c.key)
            out.setdefault(iface, {})[setting] = self.normalize_target(c.key, c.target)
        return {"nic_tuning_interfaces": out}


ADAPTER = NicAdapter()
