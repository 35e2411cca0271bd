"""Block device queue settings: role ``block_tuning``, variable ``block_tuning_devices``
{device: {scheduler, queue_depth, nr_requests, read_ahead_kb}}. A key is ``<device>/<attribute>``
(as under /sys/block/<device>/queue, ``queue_depth`` under /sys/block/<device>/device); current
values from the ``block.queue`` probe. The role persists with
a udev rule the scan does not read, so the persisted value is unknown (None)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.adapters.base import Adapter, HostProbeFacts
from advisor.model.findings import Change
from probes.legal_values import DEVICE_NAME

PROBE = "block.queue"
ATTRIBUTES = {"read_ahead_kb": int, "scheduler": str, "nr_requests": int, "queue_depth": int}


def split_key(key: str) -> tuple[str, str]:
    dev, _, attr = key.rpartition("/")
    return dev, attr


class BlockAdapter(Adapter):
    name = "block"
    role = "block_tuning"
    play_title = "Set block device read-ahead and scheduler now and with a udev rule"

    probes = (PROBE,)

    def current(self, facts: HostProbeFacts, key: str) -> tuple[Any, Any]:
        dev, attr = split_key(key)
        d = ((facts.get(PROBE) or {}).get("devices") or {}).get(dev) or {}
        return d.get(attr), None

    def key_problem(self, key: str) -> str | None:
        """``<device>/<attribute>``: a kernel block device name and one of the attributes the role sets."""
        dev, attr = split_key(key)
        if attr not in ATTRIBUTES or not DEVICE_NAME.fullmatch(dev):
            return f"block_tuning sets {', '.join(ATTRIBUTES)} of a named device, not {key[:80]!r}"
        return None

    def cannot_change(self, facts: HostProbeFacts, change: Change, host_vars: Mapping[str, Any]) -> str | None:
        dev, attr = split_key(change.key)
        if not dev or attr not in ATTRIBUTES:
            return f"block_tuning sets {', '.join(ATTRIBUTES)} of a named device, not {change.key!r}"
        d = ((facts.get(PROBE) or {}).get("devices") or {}).get(dev) or {}
        if attr in ("nr_requests", "queue_depth"):
            target = self.normalize_target(change.key, change.target)
            if not isinstance(target, int) or target < 1:
                return f"{dev} {attr} must be a positive integer, not {change.target!r}"
        if attr == "queue_depth" and d and d.get("queue_depth") is None:
            return f"{dev} has no SCSI device queue depth (/sys/block/{dev}/device/queue_depth)"
        if attr == "nr_requests" and d.get("scheduler") == "none" and isinstance(d.get("nr_requests"), int) \
                and self.normalize_target(change.key, change.target) > d["nr_requests"]:
            return (f"{dev} runs without an I/O scheduler: its nr_requests is the hardware tag depth "
                    f"({d['nr_requests']}) and the kernel refuses more")
        if attr == "scheduler":
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
