"""BeeGFS client settings in /etc/beegfs/beegfs-client.conf: role ``beegfs_client``, variable
``beegfs_client_settings`` {key: value} (keys as the file spells them: ``tuneFileCacheType``). The current
value is what the ``beegfs.client_conf`` probe read. The client module reads the file when it mounts: a
change takes effect at the next BeeGFS client mount (the role remounts only when
``beegfs_client_remount_command`` is given)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from advisor.adapters.base import Adapter, HostProbeFacts
from advisor.model.findings import Change
from probes.beegfs import CONF

PROBE = "beegfs.client_conf"
_KEY = re.compile(r"[A-Za-z][A-Za-z0-9]*")


class BeegfsClientAdapter(Adapter):
    name = "beegfs_client"
    role = "beegfs_client"
    play_title = "Set BeeGFS client settings in beegfs-client.conf"
    probes = (PROBE,)

    def current(self, facts: HostProbeFacts, key: str) -> tuple[Any, Any]:
        v = (((facts.get(PROBE) or {}).get("settings") or {}).get(key) or {}).get("value")
        # the file is both what the next mount uses and what persists
        return v, v

    def normalize_target(self, key: str, target: Any) -> Any:
        return str(target).lower() if isinstance(target, bool) else str(target)

    def cannot_change(self, facts: HostProbeFacts, change: Change, host_vars: Mapping[str, Any]) -> str | None:
        if not _KEY.fullmatch(change.key):
            return f"beegfs_client sets beegfs-client.conf keys by name, not {change.key!r}"
        if PROBE not in facts:
            return f"the scan has no {CONF} from this host"
        return None

    def label(self, key: str) -> str:
        return f"beegfs-client.conf {key} (takes effect at the next BeeGFS client mount)"

    def role_vars(self, changes: list[Change], facts: HostProbeFacts, host_vars: Mapping[str, Any]) -> dict[str, Any]:
        return {"beegfs_client_settings": {c.key: self.normalize_target(c.key, c.target) for c in changes}}


ADAPTER = BeegfsClientAdapter()
