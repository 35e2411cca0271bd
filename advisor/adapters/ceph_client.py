"""CephFS FUSE client options in /etc/ceph/ceph.conf: role ``ceph_client``, variable
``ceph_client_options`` {option: value}, written in the file's ``[client]`` section. The current
value is what the ``ceph.client_conf`` probe read ([global] overridden by [client]). ceph-fuse reads
the file when it mounts: a change takes effect at the next ceph-fuse mount (the role remounts only when
``ceph_client_remount_command`` is given); the kernel client ignores these options."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from advisor.adapters.base import Adapter, HostProbeFacts
from advisor.model.findings import Change
from probes.ceph_conf import CONF, option_name

PROBE = "ceph.client_conf"
_OPTION = re.compile(r"[a-z][a-z0-9_]*")


class CephClientAdapter(Adapter):
    name = "ceph_client"
    role = "ceph_client"
    play_title = "Set CephFS FUSE client options in ceph.conf"
    probes = (PROBE,)

    def current(self, facts: HostProbeFacts, key: str) -> tuple[Any, Any]:
        opt = ((facts.get(PROBE) or {}).get("client") or {}).get(option_name(key)) or {}
        v = opt.get("value")
        # the file is both what runs at the next mount and what persists
        return v, v

    def normalize_target(self, key: str, target: Any) -> Any:
        return str(target).lower() if isinstance(target, bool) else str(target)

    def cannot_change(self, facts: HostProbeFacts, change: Change, host_vars: Mapping[str, Any]) -> str | None:
        if not _OPTION.fullmatch(option_name(change.key)):
            return f"ceph_client sets ceph.conf options by name, not {change.key!r}"
        if PROBE not in facts:
            return f"the scan has no {CONF} from this host"
        name = option_name(change.key)
        for section, options in sorted(((facts.get(PROBE) or {}).get("sections") or {}).items()):
            if section.startswith("client.") and name in options:
                return (f"{name} is also set in [{section}] of {CONF}, which wins over [client] for that client: "
                        f"change it there by hand")
        return None

    def label(self, key: str) -> str:
        return f"ceph.conf [client] {option_name(key)} (takes effect at the next ceph-fuse mount)"

    def role_vars(self, changes: list[Change], facts: HostProbeFacts, host_vars: Mapping[str, Any]) -> dict[str, Any]:
        return {"ceph_client_options": {option_name(c.key): self.normalize_target(c.key, c.target) for c in changes}}


ADAPTER = CephClientAdapter()
