"""SAN logical-drive cache settings (DS/SANtricity arrays through SMcli): role ``san_cache``,
variables ``san_logical_drives`` {drive: {SMcli keyword: value}} and ``san_controllers``. A key is
``<drive>/<SMcli keyword>`` (``data01/readCacheEnabled``); current values from the
``san.logical_drives`` probe. The array keeps its settings, so runtime and persisted are one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.adapters.base import Adapter, HostProbeFacts
from advisor.model.findings import Change

PROBE = "san.logical_drives"
#: SMcli ``set logicalDrive`` keyword -> the probe's field
FIELD_OF = {"readCacheEnabled": "read_cache", "cacheReadPrefetch": "read_prefetch", "writeCacheEnabled": "write_cache",
            "cacheWithoutBatteryEnabled": "write_cache_without_batteries", "modificationPriority": "modification_priority"}


def split_key(key: str) -> tuple[str, str]:
    drive, _, keyword = key.rpartition("/")
    return drive, keyword


def _controllers(facts: HostProbeFacts, host_vars: Mapping[str, Any]) -> list[str]:
    return list(host_vars.get("san_controllers") or (facts.get(PROBE) or {}).get("controllers") or [])


class SanAdapter(Adapter):
    name = "san"
    role = "san_cache"
    play_title = "Set SAN logical drive cache settings with SMcli"

    probes = (PROBE,)

    def current(self, facts: HostProbeFacts, key: str) -> tuple[Any, Any]:
        drive, keyword = split_key(key)
        d = ((facts.get(PROBE) or {}).get("drives") or {}).get(drive) or {}
        v = d.get(FIELD_OF.get(keyword, keyword))
        v = ("TRUE" if v else "FALSE") if isinstance(v, bool) else v
        return v, v

    def normalize_target(self, key: str, target: Any) -> Any:
        return ("TRUE" if target else "FALSE") if isinstance(target, bool) else str(target)

    def cannot_change(self, facts: HostProbeFacts, change: Change, host_vars: Mapping[str, Any]) -> str | None:
        drive, keyword = split_key(change.key)
        if not drive or keyword not in FIELD_OF:
            return f"san_cache sets {', '.join(FIELD_OF)} of a named logical drive, not {change.key!r}"
        if not _controllers(facts, host_vars):
            return "no SAN controllers known: set san_controllers on the host in the site file"
        return None

    def resolve(self, key: str, a: Any, b: Any) -> Any | None:
        return None  # cache switches have no "larger": the more severe rule decides

    def label(self, key: str) -> str:
        drive, keyword = split_key(key)
        return f"SAN {drive} {keyword}"

    def role_vars(self, changes: list[Change], facts: HostProbeFacts, host_vars: Mapping[str, Any]) -> dict[str, Any]:
        drives: dict[str, dict[str, str]] = {}
        for c in changes:
            drive, keyword = split_key(c.key)
            drives.setdefault(drive, {})[keyword] = str(c.target)
        return {"san_logical_drives": drives, "san_controllers": _controllers(facts, host_vars)}


ADAPTER = SanAdapter()
