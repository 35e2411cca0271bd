"""IBM Storage Scale (GPFS) configuration attributes: role ``gpfs_tuning``, variables ``gpfs_config``
{attr: value}, ``gpfs_tuning_node_name``, ``gpfs_tuning_pending_attrs``, ``gpfs_tuning_group`` and
``gpfs_tuning_runner``. The persisted value is ``mmlsconfig``'s effective one for the node, the
runtime value the daemon's (``mmdiag --config``). ``mmchconfig`` is cluster-wide: hosts that need
the same values form one group whose first host runs it for all (``finish``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.adapters.base import Adapter, HostProbeFacts
from advisor.model.findings import Change, ChangeScope

PERSISTED = "gpfs.mmlsconfig"
ACTIVE = "gpfs.mmdiag"


class GpfsAdapter(Adapter):
    name = "gpfs"
    role = "gpfs_tuning"
    play_title = "Change GPFS configuration with mmchconfig"

    probes = (PERSISTED, ACTIVE)

    def current(self, facts: HostProbeFacts, key: str) -> tuple[Any, Any]:
        p = ((facts.get(PERSISTED) or {}).get("effective") or {}).get(key) or {}
        a = ((facts.get(ACTIVE) or {}).get("active") or {}).get(key) or {}
        return a.get("value"), p.get("value")

    def normalize_target(self, key: str, target: Any) -> Any:
        return str(target)

    def label(self, key: str) -> str:
        return f"gpfs {key}"

    def role_vars(self, changes: list[Change], facts: HostProbeFacts, host_vars: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"gpfs_config": {c.key: str(c.target) for c in changes}}
        node = host_vars.get("gpfs_node") or host_vars["inventory_name"]
        if node != host_vars["inventory_name"]:
            # only where it differs: the role takes the inventory name otherwise, so hosts with
            # the same changes share one group_vars file (advisor.apply.changesets)
            out["gpfs_tuning_node_name"] = node
        pending = sorted(c.key for c in changes if c.scope == ChangeScope.runtime)
        if pending:
            out["gpfs_tuning_pending_attrs"] = pending
        return out

    def finish(self, plan_vars: dict[str, dict[str, Any]], facts: Mapping[str, HostProbeFacts]) -> list[str] | None:
        groups: dict[str, list[str]] = {}
        for host in sorted(plan_vars):
            groups.setdefault(repr(sorted(plan_vars[host]["gpfs_config"].items())), []).append(host)
        for members in groups.values():
            runner = members[0]
            for h in members:
                plan_vars[h]["gpfs_tuning_runner"] = runner
            plan_vars[runner]["gpfs_tuning_group"] = members
        return None


ADAPTER = GpfsAdapter()
