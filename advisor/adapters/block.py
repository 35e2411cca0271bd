"""Block device queue settings: role ``block_tuning``, variable ``block_tuning_devices``
{device: {read_ahead_kb, scheduler}}. A key is ``<device>/<attribute>`` (as under
/sys/block/<device>/queue); current values from the ``block.queue`` probe. The role persists with
a udev rule the scan does not read, so the persisted value is unknown (None)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.adapters.base import Adapter, HostProbeFacts
from advisor.findings import Change

PROBE = "block.queue"
ATTRIBUTES = {"read_ahead_kb": int, "scheduler": str}


def split_key(key: str) -> tuple[str, str]:
    dev, _, attr = key.rpartition("/")
    return dev, attr


class BlockAdapter(Adapter):
    name = "block"
    role = "block_tuning"

    def current(self, facts: HostProbeFacts, key: str) -> tuple[Any, Any]:
        dev, attr = split_key(key)
        d = ((facts.get(PROBE) or {}).get("devices") or {}).get(dev) or {}
        return d.get(attr), None

    def cannot_change(self, facts: HostProbeFacts, change: Change, host_vars: Mapping[str, Any]) -> str | None:
        dev, attr = split_key(change.key)
        if not dev or attr not in ATTRIBUTES:
            return f"block_tuning sets {', '.join(ATTRIBUTES)} of a named device, not {change.key!r}"
        if attr == "scheduler":
            d = ((facts.get(PROBE) or {}).get("devices") or {}).get(dev) or {}
            offered = d.get("schedulers") or []
            if offered and str(change.target) not in offered:
                return f"{dev} offers no scheduler {change.target} (it offers {', '.join(offered)})"
        return None

    def normalize_target(self, key: str, target: Any) -> Any:
        _, attr = split_key(key)
        conv = ATTRIBUTES.get(attr, str)
        try:
            return conv(target)
        except (TypeError, ValueError):
            return target

    def label(self, key: str) -> str:
        dev, attr = split_key(key)
        return f"{dev} {attr}"

    def role_vars(self, changes: list[Change], facts: HostProbeFacts, host_vars: Mapping[str, Any]) -> dict[str, Any]:
        devices: dict[str, dict[str, Any]] = {}
        for c in changes:
            dev, attr = split_key(c.key)
            devices.setdefault(dev, {})[attr] = self.normalize_target(c.key, c.target)
        return {"block_tuning_devices": devices}


ADAPTER = BlockAdapter()
