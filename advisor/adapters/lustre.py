"""Lustre client tunables (``lctl set_param``): role ``lustre_tuning``, variable ``lustre_params``
{full parameter name: value}. A key is the parameter's full name as ``lctl get_param`` prints it
(``osc.lustre-OST0000-osc-ffff88203b1e4000.max_rpcs_in_flight``); the current value comes from the
``lustre.params`` probe. ``lctl set_param`` changes the running client only: the persisted value is
unknown to a client (``lctl set_param -P`` on the MGS keeps it cluster-wide), so it is reported as None."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.adapters.base import Adapter, HostProbeFacts
from advisor.findings import Change

PROBE = "lustre.params"
DEVICE_TYPES = ("osc", "mdc", "llite")


def split_key(key: str) -> tuple[str, str, str]:
    kind, _, rest = key.partition(".")
    device, _, param = rest.rpartition(".")
    return kind, device, param


class LustreAdapter(Adapter):
    name = "lustre"
    role = "lustre_tuning"

    probes = (PROBE,)

    def current(self, facts: HostProbeFacts, key: str) -> tuple[Any, Any]:
        kind, device, param = split_key(key)
        dev = (((facts.get(PROBE) or {}).get(kind) or {}).get(device) or {}) if kind in DEVICE_TYPES else {}
        v = (dev.get("values") or {}).get(param)
        return (None if v is None else str(v)), None

    def normalize_target(self, key: str, target: Any) -> Any:
        return str(target)

    def cannot_change(self, facts: HostProbeFacts, change: Change, host_vars: Mapping[str, Any]) -> str | None:
        kind, device, param = split_key(change.key)
        if kind not in DEVICE_TYPES or not device or not param:
            return f"lustre_tuning sets osc/mdc/llite parameters by full name, not {change.key!r}"
        if PROBE not in facts:
            return "the scan has no lctl get_param output from this host"
        return None

    def label(self, key: str) -> str:
        return f"lustre {key}"

    def role_vars(self, changes: list[Change], facts: HostProbeFacts, host_vars: Mapping[str, Any]) -> dict[str, Any]:
        return {"lustre_params": {c.key: str(c.target) for c in changes}}


ADAPTER = LustreAdapter()
